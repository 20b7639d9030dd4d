"""Env-steps/s against the number of parallel simulations, for every installed engine.

A task (quad-hover by default) runs through its ordinary TaskEnv with random actions,
so the number is what training sees: physics plus observations, rewards and resets.
For each engine and each N (64, 128, ... up to --max-envs) the environment is built
once, stepped a few times to warm up (and compile kernels), then timed over --steps
control steps. An engine whose control step takes longer than --max-step-s at some N
is timed on one step there and not tried at larger N (marked "-" in the table). One table, printed with
the command that produced it.

    simreal bench scale [--task quad-hover] [--max-envs 8192] [--steps 20] [--json FILE]
    python bench/scale.py ...

With --training it measures training instead: `simreal train TASK` runs for a few PPO
iterations at 2, 4, 8 and 16 threads (those the machine has; each run pinned to that
many CPUs, as many physics threads and torch threads, --envs-per-thread simulations per
thread), beside raw mjbatch stepping of the same model on the same CPUs
(`bench/engine_overhead.py`'s replay: the task with random actions against the raw
engine integrating the same trajectories). Each row splits a training iteration into
physics, task layer, policy inference and update, from the run's own metrics.csv
(`time_physics_s`, `time_task_s`, `time_policy_s`, `time_update_s`; the first iteration,
which warms up, is left out):

    python bench/scale.py --training --task g1-pull [--threads 2 4 8 16]
        [--envs-per-thread 64] [--iterations 4] [--device auto] [--groups 1 4] [--json FILE]

--groups G1 G2 ... gives each thread count one row per value of `train.env_groups`
(tasks/overlap.py), its task-layer column timed with the same groups.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from simreal.sim import installed_engines
from simreal.tasks import get_task, make_env

SIZES = tuple(64 * 2**k for k in range(8))  # 64 .. 8192
THREADS = (2, 4, 8, 16)
SPLIT = ("time_physics_s", "time_task_s", "time_policy_s", "time_update_s")


def measure(
    task: str, engine: str, envs: int, steps: int, max_step_s: float, seed: int = 0
) -> tuple[float, bool]:
    """(env-steps/s, whether one control step took longer than `max_step_s`). Two warm-up
    steps come first; when the second of them is already too slow, it alone is timed."""
    env = make_env(task, get_task(task).config_cls(), envs, engine, seed)
    env.reset()
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1, 1, (steps + 2, env.num_envs, env.num_actions)).astype(np.float32)
    env.step(actions[0])
    t0 = time.perf_counter()
    env.step(actions[1])
    warm = time.perf_counter() - t0
    if warm > max_step_s:
        rate, slow = env.num_envs / warm, True
    else:
        slowest, start = 0.0, time.perf_counter()
        for action in actions[2:]:
            t0 = time.perf_counter()
            env.step(action)
            slowest = max(slowest, time.perf_counter() - t0)
        rate, slow = env.num_envs * steps / (time.perf_counter() - start), slowest > max_step_s
    close = getattr(env.engine, "close", None)
    if close:
        close()
    return rate, slow


def run(
    task: str = "quad-hover",
    engines: tuple[str, ...] | None = None,
    max_envs: int = 8192,
    steps: int = 20,
    max_step_s: float = 2.0,
) -> dict:
    engines = engines or installed_engines()
    sizes = [n for n in SIZES if n <= max_envs]
    table: dict[str, dict[int, float | None]] = {}
    for engine in engines:
        table[engine] = {}
        too_slow = False
        for n in sizes:
            if too_slow:
                table[engine][n] = None
                continue
            rate, too_slow = measure(task, engine, n, steps, max_step_s)
            table[engine][n] = rate
            print(f"{engine:>8} N={n:<5} {rate:>12,.0f} env-steps/s", flush=True)
    return {"task": task, "steps": steps, "sizes": sizes, "env_steps_per_s": table}


def format_table(result: dict, command: str) -> str:
    engines = list(result["env_steps_per_s"])
    lines = [
        f"`{command}` ({result['task']}, {result['steps']} timed control steps per cell, "
        f"{os.cpu_count()} CPU cores shared with other work; env-steps/s):",
        "",
        "| N | " + " | ".join(engines) + " |",
        "|---|" + "---|" * len(engines),
    ]
    for n in result["sizes"]:
        cells = []
        for engine in engines:
            rate = result["env_steps_per_s"][engine].get(n)
            cells.append("-" if rate is None else f"{rate:,.0f}")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def training_row(
    task: str,
    threads: int,
    envs: int,
    iterations: int,
    device: str,
    seed: int = 0,
    groups: int = 1,
    overrides: list[str] | tuple[str, ...] = (),
) -> dict:
    """One row of the training table: `simreal train` on `threads` CPUs for `iterations`
    PPO iterations, and raw physics against the task layer on the same CPUs."""
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    steps_per_env = _steps_per_env(task)
    with tempfile.TemporaryDirectory() as out:
        command = [
            sys.executable, "-m", "simreal", "train", task,
            "--envs", str(envs), "--seed", str(seed), "--device", device, "--out", out,
            "--steps", str(iterations * envs * steps_per_env),
            "--set", f"train.torch_threads={threads}", "--set", f"train.env_groups={groups}",
            *(arg for item in overrides for arg in ("--set", f"task.{item}")),
        ]  # fmt: skip
        subprocess.run(
            command,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: os.sched_setaffinity(0, cpus),
        )
        rows = _metrics_rows(Path(out))
    if len(rows) < 2:
        raise RuntimeError(f"{task}: training logged {len(rows)} iterations; need at least 2")
    timed = rows[1:]  # the first iteration warms up (allocation, first kernels)
    split = {k: float(np.median([float(r[k]) for r in timed])) for k in SPLIT}
    iteration_s = (
        float(np.median([float(r["time_collect_s"]) for r in timed])) + split["time_update_s"]
    )
    batch = envs * steps_per_env
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        from engine_overhead import run as overhead

        raw = overhead(
            task, envs, steps=50, rounds=2, seed=seed, groups=groups, overrides=overrides
        )
    finally:
        os.sched_setaffinity(0, previous)
    training_rate = batch / iteration_s
    return {
        "threads": threads,
        "envs": envs,
        "device": device,
        "groups": groups,
        "training_env_steps_per_s": training_rate,
        "raw_physics_env_steps_per_s": raw["raw_mjbatch_env_steps_per_s"],
        "task_random_actions_env_steps_per_s": raw["simreal_env_steps_per_s"],
        "training_share_of_raw": training_rate / raw["raw_mjbatch_env_steps_per_s"],
        "task_layer_share_of_raw": raw["ratio_median"],
        "iteration_s": iteration_s,
        **split,
    }


def _steps_per_env(task: str) -> int:
    """PPO's rollout length for `task` (its training defaults, else the generic value)."""
    from simreal.policies.config import PPOConfig

    value = get_task(task).training.num_steps_per_env
    return value if value is not None else PPOConfig().num_steps_per_env


def _metrics_rows(out: Path) -> list[dict]:
    files = list(out.rglob("metrics.csv"))
    if len(files) != 1:
        raise RuntimeError(f"expected one metrics.csv under {out}, found {len(files)}")
    with files[0].open() as f:
        return list(csv.DictReader(f))


def format_training(rows: list[dict], task: str, command: str) -> str:
    lines = [
        f"`{command}` ({task}; {os.cpu_count()} CPU cores; each row pinned to its threads; "
        "env-steps/s; an iteration's split in seconds and shares):",
        "",
        "| threads | envs | groups | learner | training | raw physics | training / raw "
        "| task layer / raw (random actions) | physics | task layer | policy | update |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [f"{r[k]:.3f} s ({100 * r[k] / r['iteration_s']:.0f} %)" for k in SPLIT]
        lines.append(
            f"| {r['threads']} | {r['envs']} | {r.get('groups', 1)} | {r['device']} "
            f"| {r['training_env_steps_per_s']:,.0f} | {r['raw_physics_env_steps_per_s']:,.0f} "
            f"| {100 * r['training_share_of_raw']:.1f} % "
            f"| {100 * r['task_layer_share_of_raw']:.1f} % | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def main_training(args: argparse.Namespace, command: str) -> None:
    available = len(os.sched_getaffinity(0))
    threads = [t for t in args.threads if t <= available]
    if not threads:
        raise SystemExit(f"--threads {args.threads}: this process may use {available} CPUs")
    rows = []
    for t in threads:
        for groups in args.groups:
            rows.append(
                training_row(
                    args.task,
                    t,
                    args.envs_per_thread * t,
                    args.iterations,
                    args.device,
                    groups=groups,
                    overrides=args.set,
                )
            )
            print(json.dumps(rows[-1]), flush=True)
    text = format_training(rows, args.task, command)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"task": args.task, "rows": rows, "command": command, "table": text}, f, indent=2
            )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="quad-hover")
    p.add_argument("--engines", nargs="+", help="default: every installed engine")
    p.add_argument("--max-envs", type=int, default=SIZES[-1], help="largest N (64..8192)")
    p.add_argument("--steps", type=int, default=20, help="timed control steps per cell")
    p.add_argument(
        "--max-step-s",
        type=float,
        default=2.0,
        help="skip larger N for an engine once one control step takes longer than this",
    )
    p.add_argument("--json", help="also write the numbers here")
    p.add_argument("--training", action="store_true", help="the training table (see above)")
    p.add_argument("--threads", type=int, nargs="+", default=list(THREADS))
    p.add_argument("--envs-per-thread", type=int, default=64)
    p.add_argument("--iterations", type=int, default=4, help="PPO iterations per row")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument(
        "--groups", type=int, nargs="+", default=[1], help="train.env_groups values per row"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="--training: task config override for every row, as train's --set task.KEY=VALUE",
    )
    args = p.parse_args(argv)
    if args.training:
        command = "python bench/scale.py " + " ".join(sys.argv[1:] if argv is None else argv)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        main_training(args, command.strip())
        return
    if args.max_envs < SIZES[0]:
        raise SystemExit(f"--max-envs must be at least {SIZES[0]}, got {args.max_envs}")
    command = "simreal bench scale " + " ".join(sys.argv[1:] if argv is None else argv)
    result = run(args.task, tuple(args.engines or ()), args.max_envs, args.steps, args.max_step_s)
    text = format_table(result, command.strip())
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**result, "command": command.strip(), "table": text}, f, indent=2)


if __name__ == "__main__":
    main()
