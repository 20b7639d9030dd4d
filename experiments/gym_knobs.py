"""Which of simreal's `--gym` defaults cost it Ant: one setting changed per row, the rest
as `simreal train --gym` has them, beside Stable-Baselines3's runs of the PPO suite.

Every row trains `simreal train --gym ENV --steps N --seed S --set ...` (runs under
OUT/<row>/), evaluates the final policy deterministically over 10 episodes (`simreal eval
RUN --episodes 10`, as bench/gym_suite.py does) and reports it with the run's training
wall time and final training return. Rows:

- default: the `--gym` defaults (8 simulations x 256 steps, observation normalizers
  updated every step, return scaling, value clipping, linear learning-rate decay);
- one_env: one simulation x 2,048 steps (the references' rollout);
- rollout_normalizer: `ppo.normalizer_update=rollout`;
- no_obs_normalization: `ppo.normalizer_update=never`;
- raw_value: no return scaling, no value clipping;
- no_obs_normalization_raw_value: the last two together;
- no_obs_normalization_raw_returns, no_obs_normalization_no_value_clip: without observation
  normalization and with only one of the two value settings off;
- raw_value_var_floor: raw_value with the normalizers' variance floor at 1.0 (columns are
  scaled down, never up);
- sb3_like: and a constant learning rate too (SB3's defaults, whose PPO normalizes
  nothing).

    python experiments/gym_knobs.py [--env Ant-v5] [--seeds 0] [--steps 1000000]
        [--rows ...] [--out runs/gym-knobs] [--results results/experiments/gym-knobs]
        [--skip-train]

A row whose newest run under OUT finished its budget is evaluated, not trained again; the
default row is the PPO suite's own simreal run of the seed where there is one;
`--skip-train` reports the finished runs only (rows and seeds without one are left out).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROWS: dict[str, list[str]] = {
    "default": [],
    "one_env": ["--envs", "1", "--set", "train.ppo.num_steps_per_env=2048"],
    "rollout_normalizer": ["--set", "train.ppo.normalizer_update=rollout"],
    "no_obs_normalization": ["--set", "train.ppo.normalizer_update=never"],
    "raw_value": ["--set", "train.ppo.normalize_returns=false",
                  "--set", "train.ppo.clip_value_loss=false"],
    "no_obs_normalization_raw_value": ["--set", "train.ppo.normalizer_update=never",
                                       "--set", "train.ppo.normalize_returns=false",
                                       "--set", "train.ppo.clip_value_loss=false"],
    "no_obs_normalization_raw_returns": ["--set", "train.ppo.normalizer_update=never",
                                         "--set", "train.ppo.normalize_returns=false"],
    "no_obs_normalization_no_value_clip": ["--set", "train.ppo.normalizer_update=never",
                                           "--set", "train.ppo.clip_value_loss=false"],
    "raw_value_var_floor": ["--set", "train.model.normalizer_var_floor=1.0",
                            "--set", "train.ppo.normalize_returns=false",
                            "--set", "train.ppo.clip_value_loss=false"],
    "sb3_like": ["--set", "train.ppo.normalizer_update=never",
                 "--set", "train.ppo.normalize_returns=false",
                 "--set", "train.ppo.clip_value_loss=false",
                 "--set", "train.ppo.schedule=fixed"],
}  # fmt: skip


def finished_run(root: Path, env: str, steps: int) -> Path | None:
    """The newest run under root/env that used its whole step budget."""
    runs = sorted((root / env).glob("*/metrics.csv")) if (root / env).is_dir() else []
    for metrics in reversed(runs):
        rows = list(csv.DictReader(metrics.open()))
        if rows and int(rows[-1]["env_steps"]) >= steps:
            return metrics.parent
    return None


def suite_default(suite: Path, env: str, seed: int) -> dict | None:
    """The default row from the PPO suite's own simreal run of this seed (bench/gym_suite.py
    trains exactly `simreal train --gym ENV --steps N --seed S`), when it has one."""
    path = suite / "runs" / f"{env}_simreal_s{seed}.json"
    if not path.exists():
        return None
    run = json.loads(path.read_text())
    return {
        "row": "default",
        "seed": seed,
        "run": f"{path} (bench/gym_suite.py)",
        "return_mean": run["eval_return_mean"],
        "return_std": run["eval_return_std"],
        "episode_length_mean": None,
        "train_return_last": run["curve"][-1][1],
        "train_wall_s": run["train_wall_s"],
        "settings": [],
    }


def run_row(
    row: str, env: str, seed: int, steps: int, out: Path, suite: Path, train: bool = True
) -> dict | None:
    if row == "default" and (found := suite_default(suite, env, seed)) is not None:
        return found
    root = out / row / f"s{seed}"
    run = finished_run(root, env, steps)
    if run is None and not train:
        return None
    if run is None:
        cmd = [sys.executable, "-m", "simreal", "train", "--gym", env, "--steps", str(steps),
               "--seed", str(seed), "--out", str(root), *ROWS[row]]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        run = finished_run(root, env, steps)
    eval_json = run / "eval.json"
    if not eval_json.exists():
        subprocess.run(
            [sys.executable, "-m", "simreal", "eval", str(run), "--episodes", "10",
             "--json", str(eval_json)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    ev = json.loads(eval_json.read_text())
    last = list(csv.DictReader((run / "metrics.csv").open()))[-1]
    return {
        "row": row,
        "seed": seed,
        "run": str(run),
        "return_mean": ev["return_mean"],
        "return_std": ev["return_std"],
        "episode_length_mean": ev["episode_length_mean"],
        "train_return_last": float(last["train_return"]),
        "train_wall_s": float(last["wall_time_s"]),
        "settings": ROWS[row],
    }


def length(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def sb3_reference(suite: Path, env: str, seeds: list[int]) -> dict[int, float]:
    """SB3's deterministic return per seed from the PPO suite's run files."""
    out = {}
    for seed in seeds:
        path = suite / "runs" / f"{env}_sb3_s{seed}.json"
        if path.exists():
            out[seed] = json.loads(path.read_text())["eval_return_mean"]
    return out


def row_means(results: list[dict], sb3: dict[int, float]) -> list[str]:
    """Per row over its seeds: the mean return and its ratio to SB3's mean over the same
    seeds."""
    lines = []
    for row in dict.fromkeys(r["row"] for r in results):
        runs = [r for r in results if r["row"] == row and r["seed"] in sb3]
        if not runs:
            continue
        ours = statistics.fmean(r["return_mean"] for r in runs)
        theirs = statistics.fmean(sb3[r["seed"]] for r in runs)
        seeds = ", ".join(str(r["seed"]) for r in runs)
        lines.append(f"| {row} | {seeds} | {ours:.0f} | {theirs:.0f} | {ours / theirs:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Ant-v5")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--out", type=Path, default=Path("runs/gym-knobs"))
    parser.add_argument("--results", type=Path, default=Path("results/experiments/gym-knobs"))
    parser.add_argument("--suite", type=Path, default=Path("results/experiments/gym-suite"))
    parser.add_argument(
        "--skip-train", action="store_true", help="report the finished runs only, train none"
    )
    args = parser.parse_args()
    results = [
        found
        for r in args.rows
        for s in args.seeds
        if (found := run_row(r, args.env, s, args.steps, args.out, args.suite, not args.skip_train))
    ]
    sb3 = sb3_reference(args.suite, args.env, args.seeds)
    lines = [
        f"{args.env}, {args.steps:,} steps, deterministic return over 10 episodes; SB3: the "
        "PPO suite's run of the same seed.",
        "",
        "| row | return | episode length | vs SB3 | final training return | wall (s) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        ratio = f"{r['return_mean'] / sb3[r['seed']]:.2f}" if r["seed"] in sb3 else "-"
        lines.append(
            f"| {r['row']} (s{r['seed']}) | {r['return_mean']:.0f} ± {r['return_std']:.0f} "
            f"| {length(r['episode_length_mean'])} | {ratio} | {r['train_return_last']:.0f} "
            f"| {r['train_wall_s']:.0f} |"
        )
    lines += [
        "",
        "Per row, over the seeds it ran:",
        "",
        "| row | seeds | mean return | SB3 mean (same seeds) | ratio |",
        "|---|---|---|---|---|",
        *row_means(results, sb3),
    ]
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "table.md").write_text("\n".join(lines) + "\n")
    summary = {"env": args.env, "steps": args.steps, "sb3": sb3, "rows": results}
    (args.results / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
