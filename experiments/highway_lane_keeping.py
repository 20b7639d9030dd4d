"""simreal's PPO on highway-env's `lane-keeping-v0`, beside reference policies.

highway-env publishes no baseline return for lane-keeping-v0 (its example scripts cover
highway, parking and intersection), so this prints the returns of two reference
policies on the same environment: zero steering and uniform random steering. The
reward is 1 - (lateral offset / lane width)^2 per step over 200 steps: 200 is perfect.

highway-env is not a simreal dependency; install it where you run this (a venv of your
own, e.g. `pip install highway-env==1.12.1`). Without it the script says so and stops.
The PPO side is a plain CLI run:

    simreal train --gym highway_env:lane-keeping-v0 --steps 200000 --envs 8
    simreal eval runs/highway_env:lane-keeping-v0/<run> --episodes 10

    python experiments/highway_lane_keeping.py [--episodes 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np


def reference_returns(episodes: int) -> dict:
    import gymnasium
    import highway_env  # noqa: F401  (registers lane-keeping-v0)

    policies = {
        "zero_steering": lambda rng: np.zeros(1, dtype=np.float32),
        "random": lambda rng: rng.uniform(-1, 1, 1).astype(np.float32),
    }
    out = {}
    for name, act in policies.items():
        returns = []
        for ep in range(episodes):
            env = gymnasium.make("lane-keeping-v0")
            env.reset(seed=10_000 + ep)
            rng = np.random.default_rng(ep)
            total, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, _ = env.step(act(rng))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        out[name] = {
            "mean": float(np.mean(returns)),
            "std": float(np.std(returns)),
            "episodes": returns,
        }
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if importlib.util.find_spec("highway_env") is None:
        print(
            "highway-env is not installed here: pip install highway-env==1.12.1 (not a simreal dependency)"
        )
        return
    result = reference_returns(args.episodes)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
