"""quad-hover to an evaluation return of 474: rsl_rl's PPO through simreal's adapter
beside simreal's own trainer, on this machine, one after the other.

    python bench/rsl_rl_hover.py [--seeds 0] [--minutes 10] [--out runs/bench-rsl-rl]
        [--json FILE]

For each seed both trainers run as processes of their own, one after the other (the
order alternating with the seed, simreal first on even seeds), with the same number of
simulations (quad-hover's 512), the same seed and one PyTorch thread (simreal's
default, `train.torch_threads`):

- simreal: `simreal train quad-hover --seed S --minutes M --stop-at-return 474`, the
  README's command; its wall time and env steps are the trainer's own (`wall_time_s`:
  from the start of learning to the end of the iteration whose evaluation reached the
  target, earlier evaluations included, the last one not).
- rsl_rl: `rsl_rl.runners.OnPolicyRunner` (rsl-rl-lib 5.5.1, the `rsl_rl` extra) on
  `simreal.rsl_rl.RslRlVecEnv("quad-hover", 512)`, configured with simreal's quad-hover
  settings mapped onto rsl_rl (`simreal.rsl_rl.rsl_rl_train_cfg`: 32 steps per
  environment, 5 epochs of 4 minibatches, lr 1e-3 adaptive at KL 0.01, entropy 0.003,
  64-64 ELU actor and critic, initial std 0.5, observations normalized), learning
  `train.eval_interval` (10) iterations at a time, as simreal's trainer evaluates.

Both are judged the same way: every 10 iterations the deterministic policy (its mean
action) runs simreal's own evaluation (`simreal.policies.evaluate.evaluate`) on the
evaluation environment simreal's trainer builds for that seed (`simreal.training.
build_envs`: 4 episodes from HoverAviary's start at rest on the ground, evaluation seed
S + 10000), and the run stops when the mean return reaches 474 or after M minutes.
Wall time counts the same way for both (the evaluation that reached the target not
included). Each run also records the load average when it started and ended.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TARGET = 474.0
TASK = "quad-hover"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_simreal(seed: int, minutes: float, out: Path) -> dict:
    cmd = [sys.executable, "-m", "simreal", "train", TASK, "--seed", str(seed),
           "--minutes", str(minutes), "--stop-at-return", str(TARGET), "--out", str(out)]  # fmt: skip
    load_start, t0 = _load(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    process_s = time.perf_counter() - t0
    summary = json.loads(proc.stdout[proc.stdout.index("{") : proc.stdout.rindex("}") + 1])
    run_dir = Path(summary["run_dir"])
    curve = []
    with (run_dir / "metrics.csv").open() as f:
        for row in csv.DictReader(f):
            if row["eval_return"] not in ("", None):
                curve.append(
                    [int(row["env_steps"]), float(row["wall_time_s"]), float(row["eval_return"])]
                )
    best = summary["best_eval_return"]
    return {
        "trainer": "simreal",
        "seed": seed,
        "command": " ".join(["simreal", *cmd[3:]]),
        "reached": best is not None and best >= TARGET,
        "wall_time_s": summary["wall_time_s"],
        "env_steps": summary["env_steps"],
        "best_eval_return": best,
        "process_wall_time_s": round(process_s, 1),
        "load_start": load_start,
        "load_end": _load(),
        "eval_curve": curve,
        "run_dir": str(run_dir),
    }


def run_rsl_rl(seed: int, minutes: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--seeds", str(seed),
           "--minutes", str(minutes)]  # fmt: skip
    load_start, t0 = _load(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    process_s = time.perf_counter() - t0
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**result, "process_wall_time_s": round(process_s, 1), "load_start": load_start,
            "load_end": _load()}  # fmt: skip


def rsl_rl_worker(seed: int, minutes: float) -> dict:
    """One rsl_rl run in this process (the parent's subprocess): prints one JSON line."""
    import torch
    from rsl_rl.runners import OnPolicyRunner

    from simreal.policies.evaluate import evaluate
    from simreal.rsl_rl import RslRlVecEnv, rsl_rl_policy, rsl_rl_train_cfg
    from simreal.training import TrainRequest, build_envs, run_config

    config = run_config(TrainRequest(task=TASK, seed=seed, stop_at_return=TARGET))
    train_env, eval_env, train_cfg, _ = build_envs(config)  # simreal's evaluation env
    del train_env
    torch.manual_seed(seed)
    torch.set_num_threads(train_cfg.torch_threads)
    env = RslRlVecEnv(TASK, train_cfg.num_envs, device="cpu", seed=seed)
    cfg = rsl_rl_train_cfg(TASK)
    runner = OnPolicyRunner(env, cfg, log_dir=None, device="cpu")
    policy = rsl_rl_policy(runner.alg.get_policy())
    per_iteration = cfg["num_steps_per_env"] * env.num_envs
    iterations, curve, best, wall = 0, [], None, 0.0
    start = time.perf_counter()
    while True:
        runner.learn(train_cfg.eval_interval)
        iterations += train_cfg.eval_interval
        wall = time.perf_counter() - start
        value = evaluate(eval_env, policy)["return_mean"]
        curve.append([iterations * per_iteration, round(wall, 3), value])
        best = value if best is None else max(best, value)
        if value >= TARGET or wall >= 60.0 * minutes:
            break
    return {
        "trainer": "rsl_rl",
        "seed": seed,
        "rsl_rl_version": _version("rsl-rl-lib"),
        "command": f"python bench/rsl_rl_hover.py --worker --seeds {seed} --minutes {minutes:g}",
        "reached": best >= TARGET,
        "wall_time_s": round(wall, 1),
        "env_steps": iterations * per_iteration,
        "best_eval_return": best,
        "eval_curve": curve,
        "rsl_rl_cfg": cfg,
    }


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--minutes", type=float, default=10.0, help="cap per run (default 10)")
    p.add_argument("--out", type=Path, default=Path("runs/bench-rsl-rl"))
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(rsl_rl_worker(args.seeds[0], args.minutes)), flush=True)
        return
    from simreal.reports import emit

    runs = []
    for seed in args.seeds:
        order = ("simreal", "rsl_rl") if seed % 2 == 0 else ("rsl_rl", "simreal")
        for trainer in order:
            if trainer == "simreal":
                runs.append(run_simreal(seed, args.minutes, args.out))
            else:
                runs.append(run_rsl_rl(seed, args.minutes))
            print(json.dumps({k: v for k, v in runs[-1].items() if k != "eval_curve"}),
                  file=sys.stderr, flush=True)  # fmt: skip
    emit(
        {
            "command": "python bench/rsl_rl_hover.py " + " ".join(sys.argv[1:]),
            "target_return": TARGET,
            "cpus": os.cpu_count(),
            "runs": runs,
        },
        args.json,
    )


if __name__ == "__main__":
    main()
