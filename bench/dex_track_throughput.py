"""Env-steps/s of dex-track against raw mjbatch stepping of the same scene, side by side.

Both run on one engine (the task's own mjbatch batch, after a training-mode reset, so
the same objects and contacts): the task steps with random residual actions through
its whole control step (actions, physics, rewards, observations, resets); raw stepping
calls `batch.step(nstep=decimation)` alone. Rounds alternate the two and the medians
give the ratio, which is the share of the simulator's speed the task keeps.

    python bench/dex_track_throughput.py [--envs 128] [--steps 60] [--rounds 5]
        [--threads 2] [--references 64] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from simreal.tasks.dex_track import DexTrackConfig, DexTrackEnv


def run(envs: int, steps: int, rounds: int, threads: int, references: int, seed: int = 0) -> dict:
    env = DexTrackEnv(
        DexTrackConfig(train_references=references, curriculum=False),
        num_envs=envs,
        seed=seed,
        num_threads=threads,
    )
    env.reset()
    rng = np.random.default_rng(seed)
    task_rates, raw_rates = [], []
    for _ in range(rounds):
        actions = rng.uniform(-0.5, 0.5, (steps, envs, env.num_actions)).astype(np.float32)
        t0 = time.perf_counter()
        for a in actions:
            env.step(a)
        task_rates.append(steps * envs / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for _ in range(steps):
            env.engine.batch.step(nstep=env.decimation)
        raw_rates.append(steps * envs / (time.perf_counter() - t0))
    task, raw = float(np.median(task_rates)), float(np.median(raw_rates))
    return {
        "command": " ".join(["python", *sys.argv]),
        "envs": envs,
        "steps": steps,
        "rounds": rounds,
        "threads": threads,
        "substeps": env.decimation,
        "physics_dt": env.engine.physics_dt,
        "task_env_steps_per_s": round(task, 1),
        "raw_mjbatch_env_steps_per_s": round(raw, 1),
        "ratio": round(task / raw, 3),
        "task_rounds": [round(x, 1) for x in task_rates],
        "raw_rounds": [round(x, 1) for x in raw_rates],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=128)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--references", type=int, default=64)
    p.add_argument("--json", help="also write the result here")
    args = p.parse_args()
    result = run(args.envs, args.steps, args.rounds, args.threads, args.references)
    text = json.dumps(result, indent=2)
    print(text)
    print(f"dex-track / raw mjbatch = {result['ratio']:.1%}")
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
