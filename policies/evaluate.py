"""Deterministic evaluation of any policy callable on a vectorized environment."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from simreal.policies.vecenv import VecEnv

Policy = Callable[[np.ndarray], np.ndarray]


def evaluate(env: VecEnv, policy: Policy, episodes: int, max_steps: int = 100_000) -> dict:
    """Run until `episodes` episodes have ended; return the mean and spread of their stats.

    Every key the environment reports per episode (return, length, task metrics such as
    the final position error) is averaged; return_std and per-episode returns are added.
    """
    obs, _ = env.reset()
    ended: dict[str, list[float]] = {}
    count = 0
    for _ in range(max_steps):
        step = env.step(policy(obs))
        obs = step.obs
        episode = step.info.get("episode")
        if episode:
            for key, values in episode.items():
                ended.setdefault(key, []).extend(np.asarray(values, dtype=float).tolist())
            count = len(ended["return"])
            if count >= episodes:
                break
    if count < episodes:
        raise RuntimeError(
            f"evaluation ended only {count} of {episodes} episodes in {max_steps} steps"
        )
    stats = {key: values[:episodes] for key, values in ended.items()}
    returns = np.asarray(stats["return"])
    out = {
        "episodes": episodes,
        "return_mean": float(returns.mean()),
        "return_std": float(returns.std()),
        "episode_length_mean": float(np.mean(stats["length"])),
    }
    for key, values in stats.items():
        if key not in ("return", "length"):
            out[key.replace("/", "_") + "_mean"] = float(np.mean(values))
    return out
