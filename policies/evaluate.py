"""Deterministic evaluation of any policy callable on a vectorized environment."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simreal.policies.vecenv import VecEnv

Policy = Callable[[np.ndarray], np.ndarray]


def evaluate(env: VecEnv, policy: Policy, max_steps: int = 100_000) -> dict:
    """Run the first episode of every environment to its end; summarize them.

    Only first episodes count, so short (failed) episodes that restart cannot crowd out
    long ones. Every key the environment reports per episode (return, length, task
    metrics such as the final position error) is averaged, except the keys the
    environment's `metric_reductions` maps to "max" (a best-of-all-episodes metric such
    as the largest force held); return_std is added.
    """
    reductions = getattr(env, "metric_reductions", {})
    obs, _ = env.reset()
    ended: dict[str, list[float]] = {}
    finished = np.zeros(env.num_envs, dtype=bool)
    for _ in range(max_steps):
        step = env.step(policy(obs))
        obs = step.obs
        done_ids = np.flatnonzero(np.asarray(step.terminated) | np.asarray(step.truncated))
        first = ~finished[done_ids]
        finished[done_ids] = True
        episode = step.info.get("episode")
        if episode and first.any():
            for key, values in episode.items():
                ended.setdefault(key, []).extend(np.asarray(values, dtype=float)[first].tolist())
        if finished.all():
            break
    if not finished.all():
        raise RuntimeError(
            f"evaluation: {int((~finished).sum())} of {env.num_envs} episodes still running "
            f"after {max_steps} steps"
        )
    returns = np.asarray(ended["return"])
    out = {
        "episodes": int(returns.size),
        "return_mean": float(returns.mean()),
        "return_std": float(returns.std()),
        "episode_length_mean": float(np.mean(ended["length"])),
    }
    for key, values in ended.items():
        if key not in ("return", "length"):
            reduce = np.max if reductions.get(key) == "max" else np.mean
            out[key.replace("/", "_")] = float(reduce(values))
    summarize = getattr(env, "summarize_episodes", None)
    if summarize is not None:
        out.update(summarize(ended))  # task statistics beyond means, e.g. spreads
    return out
