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
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from simreal.sim import installed_engines
from simreal.tasks import get_task, make_env

SIZES = tuple(64 * 2**k for k in range(8))  # 64 .. 8192


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
    args = p.parse_args(argv)
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
