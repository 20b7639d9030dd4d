"""bench/g1_pull_checkpoints.py: the sweep statistics that put a pick's gap in context."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "g1_pull_checkpoints.py"


def row(name: str, backward: float, forward: float, falls: float) -> dict:
    evaluation = {"backward_n": backward, "forward_n": forward, "fall_rate": falls}
    return {"checkpoint": name, "validation": evaluation, "evaluation": evaluation}


def test_sweep_of_a_report(tmp_path):
    """--sweep-of reads a report and gives each metric's mean and population std over the
    swept checkpoints."""
    report = tmp_path / "checkpoints.json"
    rows = [row("model_000100.pt", 180.0, 150.0, 0.0), row("model_000200.pt", 80.0, 130.0, 0.5)]
    report.write_text(json.dumps({"checkpoints": rows}))
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--sweep-of", str(report)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    sweep = json.loads(out)["sweep"]
    assert sweep["checkpoints"] == 2
    assert sweep["backward_n"] == pytest.approx({"mean": 130.0, "std": 50.0})
    assert sweep["forward_n"] == pytest.approx({"mean": 140.0, "std": 10.0})
    assert sweep["fall_rate"] == pytest.approx({"mean": 0.25, "std": 0.25})


def test_run_or_report_is_required():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode != 0 and "RUN is required" in done.stderr
