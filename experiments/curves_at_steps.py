"""Training curves of several runs side by side at equal env steps.

Comparing two runs (a decoupled and a coupled actor, two seeds) by their wall time mixes
in whatever else the machine ran; by env steps it does not. For each run's metrics.csv
(a run directory or the file) and each mark of `--steps` (millions), this prints the
mean of each `--columns` over the rows whose env_steps lie within `--window` million
steps before the mark (empty where a run has not got that far or does not log the
column, e.g. one that predates it).

    python experiments/curves_at_steps.py results/experiments/g1-walk-run1 \\
        runs/g1walk-coupled/g1-walk/RUN --steps 2 4 8 --columns train_return \\
        reward/track_lin_vel --json F
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from simreal.reports import emit


def rows_of(run: Path) -> list[dict[str, str]]:
    path = run / "metrics.csv" if run.is_dir() else run
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no metrics.csv")
    with path.open() as f:
        return list(csv.DictReader(f))


def at_steps(
    rows: list[dict[str, str]], marks_m: list[float], columns: list[str], window_m: float
) -> dict[str, dict[str, float | None]]:
    """{mark: {column: mean over the window before the mark, or None}}."""
    steps = np.array([float(r["env_steps"]) for r in rows]) / 1e6
    out = {}
    for mark in marks_m:
        inside = [r for r, s in zip(rows, steps, strict=True) if mark - window_m < s <= mark]
        if not inside or steps.max() < mark:
            out[str(mark)] = dict.fromkeys(columns)
            continue
        values = {}
        for column in columns:
            v = [float(r[column]) for r in inside if r.get(column) not in ("", None)]
            values[column] = float(np.mean(v)) if v else None
        out[str(mark)] = values
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", type=Path, nargs="+", help="run directories or metrics.csv files")
    p.add_argument("--steps", type=float, nargs="+", required=True, help="marks, million steps")
    p.add_argument("--columns", nargs="+", default=["train_return"])
    p.add_argument("--window", type=float, default=0.5, help="million steps before each mark")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    if a.window <= 0:
        p.error("--window must be positive")
    rows = {str(run): rows_of(run) for run in a.runs}
    known = {column for run_rows in rows.values() for column in (run_rows[0] if run_rows else {})}
    unknown = [column for column in a.columns if column not in known]
    if unknown:
        p.error(f"no run's metrics.csv has the columns {unknown}")
    report = {
        "window_million_steps": a.window,
        "runs": {run: at_steps(r, a.steps, a.columns, a.window) for run, r in rows.items()},
    }
    emit(report, a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
