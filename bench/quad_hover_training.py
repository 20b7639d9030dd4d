"""Wall time for `quad-hover` to reach an evaluation return of 474, over several seeds.

Each seed is a separate `simreal train` process (a user's exact command), run one after
another so they never share the two cores; the evaluation return comes from the
trainer's periodic deterministic evaluation, which starts at rest on the ground as
HoverAviary does. Afterwards each run is exported and its ONNX file re-evaluated.

    python bench/quad_hover_training.py [--seeds 0 1 2] [--minutes 5] [--out runs/bench]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from simreal.reports import emit

TARGET = 474.0


def train_one(seed: int, minutes: float, out: Path, extra: list[str]) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "simreal",
        "train",
        "quad-hover",
        "--seed",
        str(seed),
        "--minutes",
        str(minutes),
        "--stop-at-return",
        str(TARGET),
        "--out",
        str(out),
        *extra,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    summary = json.loads(proc.stdout[proc.stdout.index("{") : proc.stdout.rindex("}") + 1])
    subprocess.run(
        [sys.executable, "-m", "simreal", "export", str(run_dir)], check=True, capture_output=True
    )
    onnx_eval = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "simreal",
                "eval",
                str(run_dir / "policy.onnx"),
                "--episodes",
                "4",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    return {
        "seed": seed,
        "run_dir": str(run_dir),
        "reached": summary["best_eval_return"] is not None
        and summary["best_eval_return"] >= TARGET,
        "train_wall_time_s": summary["wall_time_s"],
        "process_wall_time_s": round(wall, 1),
        "env_steps": summary["env_steps"],
        "best_eval_return": summary["best_eval_return"],
        "onnx_eval_return": onnx_eval["return_mean"],
        "command": " ".join(["simreal", *cmd[3:]]),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--minutes", type=float, default=5.0)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--json", type=Path, help="also write the results here")
    args, extra = p.parse_known_args(argv)
    results = [train_one(s, args.minutes, args.out, extra) for s in args.seeds]
    times = [r["train_wall_time_s"] if r["reached"] else float("inf") for r in results]
    report = {
        "command": "python bench/quad_hover_training.py " + " ".join(sys.argv[1:]),
        "target_return": TARGET,
        "runs": results,
        "median_wall_time_to_target_s": statistics.median(times),
        "seeds_reaching_target": sum(r["reached"] for r in results),
    }
    emit(report, args.json)


if __name__ == "__main__":
    main()
