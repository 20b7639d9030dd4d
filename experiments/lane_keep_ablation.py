"""The lane-keep fusion ablation: the full policy and one observation part switched off
per row, over several seeds, beside the PID baseline.

Every row trains with the same command and budget (`simreal train lane-keep --steps N
--seed S --set ...`, one process after another, runs under OUT/s<seed>/<row>); each run's
final checkpoint is evaluated on the 100 held-out roads (`simreal eval RUN --episodes
100`), and the PID controller alone the same way (`simreal eval baseline:pid --task
lane-keep`). The table gives each row's mean and spread (std) over the seeds that ran,
for the pooled lateral RMSE, collisions and the rest; `ablation.json` keeps every run's
numbers.

    python experiments/lane_keep_ablation.py [--steps 1024000] [--seeds 0 1 2]
        [--out runs/lk-abl] [--results results/experiments/lane-keep-ablation]
        [--skip-train] [--task-set task.FIELD=VALUE ...]

`--skip-train` evaluates the newest existing run of each row and seed under --out
(a missing one is left out and the row says over how many seeds it is; one whose eval
JSON in --results already names that run is not evaluated again).
"""

from __future__ import annotations

import argparse
import json
import statistics
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
    "lateral_rmse_pooled_m",
    "lateral_error_p95_m",
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
        "--out", str(out / f"s{seed}" / row), *task_set, *ROWS[row],
    )  # fmt: skip
    return Path(stdout.strip().splitlines()[-1])


def newest_run(out: Path, seed: int, row: str) -> Path | None:
    runs = sorted((out / f"s{seed}" / row / "lane-keep").glob("*-*"))
    return runs[-1] if runs else None


def evaluate(target: str, json_path: Path, *extra: str) -> dict:
    simreal("eval", target, "--episodes", "100", "--json", str(json_path), *extra)
    return json.loads(json_path.read_text())


def spread(values: list[float], scale: float = 1.0, digits: int = 3) -> str:
    mean = statistics.mean(values) * scale
    if len(values) < 2:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {statistics.stdev(values) * scale:.{digits}f}"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1_024_000)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--out", type=Path, default=Path("runs/lk-abl"))
    p.add_argument("--results", type=Path, default=Path("results/experiments/lane-keep-ablation"))
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
    runs: dict[str, list[dict]] = {row: [] for row in ROWS}
    for seed in args.seeds:
        for row in ROWS:
            run = (
                newest_run(args.out, seed, row)
                if args.skip_train
                else train(row, args.steps, seed, args.out, task_set)
            )
            if run is None:
                continue
            done = args.results / f"eval_{row}_s{seed}.json"
            if (
                args.skip_train
                and done.exists()
                and json.loads(done.read_text())["policy"] == str(run)
            ):
                metrics = json.loads(done.read_text())  # this run was evaluated already
            else:
                metrics = evaluate(str(run), done)
            runs[row].append({"seed": seed, "run": str(run), **{k: metrics[k] for k in METRICS}})
            print(row, json.dumps(runs[row][-1]), flush=True)
    pid = evaluate("baseline:pid", args.results / "eval_pid.json", "--task", "lane-keep", *task_set)
    runs["pid_alone"] = [{"seed": None, "run": "baseline:pid", **{k: pid[k] for k in METRICS}}]
    summary = {
        "command": "python experiments/lane_keep_ablation.py " + " ".join(sys.argv[1:]),
        "steps_per_row": args.steps,
        "seeds": args.seeds,
        "task_set": args.task_set,
        "held_out_roads": 100,
        "runs": runs,
    }
    (args.results / "ablation.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [
        "| row | seeds | pooled lateral RMSE (m) | p95 (m) | mean of roads' RMSE (m) "
        "| collisions (%) | off road (%) | mean speed (m/s) | return |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row, rows in runs.items():
        if not rows:
            continue
        col = {k: [r[k] for r in rows] for k in METRICS}
        lines.append(
            f"| {row} | {len(rows)} | {spread(col['lateral_rmse_pooled_m'], digits=4)} "
            f"| {spread(col['lateral_error_p95_m'])} | {spread(col['lateral_rmse_m'], digits=4)} "
            f"| {spread(col['collision_rate'], 100, 0)} | {spread(col['off_road_rate'], 100, 0)} "
            f"| {spread(col['mean_speed_mps'], digits=2)} | {spread(col['return_mean'], digits=1)} |"
        )
    (args.results / "ablation.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
