"""The lane-keep results: the full-fusion policy, its ablations and the PID baseline.

Every row trains with the same command and budget but one observation part switched
off (`simreal train lane-keep --steps N --seed S --set ...`), one process after
another; each run's final checkpoint is then evaluated on the 100 held-out roads
(`simreal eval RUN --episodes 100`), and the PID controller alone is evaluated the
same way (`simreal eval baseline:pid --task lane-keep`). The full row's policy is
exported, re-evaluated from the ONNX file, and copied with its learning curve,
metrics and config into the results folder, beside `ablation.json` and `ablation.md`.

    python experiments/lane_keep_ablation.py [--steps 1500000] [--seed 0] [--out runs/lane-keep-ablation]
        [--results results/lane-keep] [--skip-train] [--task-set task.FIELD=VALUE ...]

`--skip-train` evaluates the newest existing run of each row under --out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROWS: dict[str, list[str]] = {
    "full": [],
    "no_semantic": ["--set", "task.semantic.provider=none"],
    "no_lidar": ["--set", "task.lidar.enabled=false"],
    "no_pid": ["--set", "task.pid.feature=false"],
    "no_geometry": ["--set", "task.geometry=false"],
}
METRICS = (
    "lateral_rmse_m",
    "lateral_rmse_std_m",
    "nrmse",
    "collision_rate",
    "off_road_rate",
    "mean_speed_mps",
    "return_mean",
    "reward_semantic",
)


def simreal(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "simreal", *args], capture_output=True, text=True, check=True
    )
    return proc.stdout


def train(row: str, steps: int, seed: int, out: Path, task_set: list[str]) -> Path:
    stdout = simreal(
        "train", "lane-keep", "--steps", str(steps), "--seed", str(seed),
        "--out", str(out / row), *task_set, *ROWS[row],
    )  # fmt: skip
    return Path(stdout.strip().splitlines()[-1])


def newest_run(out: Path, row: str) -> Path:
    runs = sorted((out / row / "lane-keep").glob("*-*"))
    if not runs:
        raise FileNotFoundError(f"{out / row / 'lane-keep'}: no run of row {row!r} to evaluate")
    return runs[-1]


def evaluate(target: str, json_path: Path, *extra: str) -> dict:
    simreal("eval", target, "--episodes", "100", "--json", str(json_path), *extra)
    return json.loads(json_path.read_text())


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1_500_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/lane-keep-ablation"))
    p.add_argument("--results", type=Path, default=Path("results/lane-keep"))
    p.add_argument("--skip-train", action="store_true")
    p.add_argument(
        "--task-set",
        action="append",
        default=[],
        metavar="task.FIELD=VALUE",
        help="a task variant for every row and the PID baseline, "
        "e.g. task.road.ego_lane_obstacle_prob=0.5",
    )
    args = p.parse_args(argv)
    task_set = [arg for item in args.task_set for arg in ("--set", item)]
    args.results.mkdir(parents=True, exist_ok=True)
    table: dict[str, dict] = {}
    for row in ROWS:
        run = (
            newest_run(args.out, row)
            if args.skip_train
            else train(row, args.steps, args.seed, args.out)
        )
        metrics = evaluate(str(run), args.results / f"eval_{row}.json")
        table[row] = {"run": str(run), **{k: metrics[k] for k in METRICS}}
        print(row, json.dumps(table[row]), flush=True)
    pid = evaluate("baseline:pid", args.results / "eval_pid.json", "--task", "lane-keep", *task_set)
    table["pid_alone"] = {"run": "baseline:pid", **{k: pid[k] for k in METRICS}}
    full = Path(table["full"]["run"])
    simreal("export", str(full))
    onnx = evaluate(str(full / "policy.onnx"), args.results / "eval_onnx.json")
    for name in ("policy.onnx", "curve.png", "metrics.csv", "config.yaml"):
        shutil.copy(full / name, args.results / name)
    summary = {
        "command": "python experiments/lane_keep_ablation.py " + " ".join(sys.argv[1:]),
        "steps_per_row": args.steps,
        "seed": args.seed,
        "task_set": args.task_set,
        "held_out_roads": 100,
        "rows": table,
        "onnx_lateral_rmse_m": onnx["lateral_rmse_m"],
    }
    (args.results / "ablation.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [
        "| row | lateral RMSE (m) | std (m) | NRMSE | collision rate | off-road rate "
        "| mean speed (m/s) | return | semantic term |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row, m in table.items():
        lines.append(
            f"| {row} | {m['lateral_rmse_m']:.3f} | {m['lateral_rmse_std_m']:.3f} | "
            f"{m['nrmse']:.4f} | {100 * m['collision_rate']:.0f} % | "
            f"{100 * m['off_road_rate']:.0f} % | {m['mean_speed_mps']:.2f} | "
            f"{m['return_mean']:.1f} | {m['reward_semantic']:.1f} |"
        )
    (args.results / "ablation.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
