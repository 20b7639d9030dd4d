"""Env-steps/s of G1 tasks side by side (default g1-force and g1-pull), random actions.

Each round times every task once, in turn, so machine noise hits them alike; the
median over rounds is reported, with the ratio to the first task. Training-mode
configs (randomization, curriculum, resets) as `simreal train` builds them.

    python bench/g1_task_speed.py [--tasks g1-force g1-pull] [--envs 256] [--steps 100]
        [--rounds 3] [--threads 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from simreal.tasks import get_task


def time_task(env, actions: np.ndarray) -> float:
    env.reset()
    t0 = time.perf_counter()
    for action in actions:
        env.step(action)
    return actions.shape[0] * env.num_envs / (time.perf_counter() - t0)


def run(tasks: list[str], envs: int, steps: int, rounds: int, threads: int, seed: int = 0) -> dict:
    built = {
        name: get_task(name).env_cls(
            get_task(name).config_cls(), num_envs=envs, seed=seed, num_threads=threads
        )
        for name in tasks
    }
    rng = np.random.default_rng(seed)
    rates: dict[str, list[float]] = {name: [] for name in tasks}
    for _ in range(rounds):
        for name, env in built.items():
            actions = rng.uniform(-1, 1, (steps, env.num_envs, env.num_actions))
            rates[name].append(time_task(env, actions))
    median = {name: float(np.median(r)) for name, r in rates.items()}
    first = tasks[0]
    return {
        "envs": envs,
        "steps": steps,
        "rounds": rounds,
        "threads": threads,
        "env_steps_per_s": {k: round(v, 1) for k, v in median.items()},
        "all_rounds": {k: [round(x, 1) for x in v] for k, v in rates.items()},
        f"ratio_to_{first}": {k: round(v / median[first], 3) for k, v in median.items()},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=["g1-force", "g1-pull"])
    p.add_argument("--envs", type=int, default=256)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", help="also write the result here")
    args = p.parse_args()
    result = run(args.tasks, args.envs, args.steps, args.rounds, args.threads)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
