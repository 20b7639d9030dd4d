"""Deterministic evaluation of any policy callable on a vectorized environment."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tqdm import tqdm

from simreal.deploy.runtime import RecurrentPolicy, reset_policy
from simreal.policies.vecenv import VecEnv

Policy = Callable[[np.ndarray], np.ndarray]


def model_policy(model, to_tensor: Callable[[np.ndarray], object] | None = None) -> Policy:
    """An ActorCritic's deterministic policy as a callable on numpy observations: its mean
    action, through `step` with the memory carried (RecurrentPolicy) where the actor is
    recurrent. `to_tensor`: numpy to a tensor on the model's device (default: a CPU
    tensor sharing the array)."""
    import torch

    to_tensor = to_tensor or torch.from_numpy

    if model.recurrent:

        def step(obs: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            with torch.inference_mode():
                action, h_next = model.step(to_tensor(obs), to_tensor(h))
            return action.cpu().numpy(), h_next.cpu().numpy()

        return RecurrentPolicy(step, model.memory_size)

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return model.act_inference(to_tensor(obs)).cpu().numpy()

    return act


def evaluate(env: VecEnv, policy: Policy, max_steps: int = 100_000) -> dict:
    """Run the first episode of every environment to its end; summarize them.

    Only first episodes count, so short (failed) episodes that restart cannot crowd out
    long ones. Every key the environment reports per episode (return, length, task
    metrics such as the final position error) is averaged, except the keys the
    environment's `metric_reductions` maps to "max" (a best-of-all-episodes metric such
    as the largest force held); return_std is added. `episodes` counts simulations (what
    `simreal eval --episodes` asks for); an environment with several agents per
    simulation (a swarm) adds `agent_episodes`, the per-agent episodes averaged over.
    A bar on stderr counts episodes as they progress.
    """
    reductions = getattr(env, "metric_reductions", {})
    agents = getattr(env, "agents_per_sim", 1)
    obs, _ = env.reset()
    reset_policy(policy)
    ended: dict[str, list[float]] = {}
    finished = np.zeros(env.num_envs, dtype=bool)
    with EpisodeBar(env) as bar:
        for _ in range(max_steps):
            step = env.step(policy(obs))
            obs = step.obs
            done = np.asarray(step.terminated) | np.asarray(step.truncated)
            reset_policy(policy, done)
            done_ids = np.flatnonzero(done)
            first = ~finished[done_ids]
            finished[done_ids] = True
            episode = step.info.get("episode")
            if episode and first.any():
                for key, values in episode.items():
                    values = np.asarray(values, dtype=float)[first]
                    ended.setdefault(key, []).extend(values.tolist())
            bar.show(finished)
            if finished.all():
                break
    if not finished.all():
        raise RuntimeError(
            f"evaluation: {int((~finished).sum())} of {env.num_envs} episodes still running "
            f"after {max_steps} steps"
        )
    returns = np.asarray(ended["return"])
    out = {"episodes": int(returns.size) // agents}
    if agents > 1:
        out["agent_episodes"] = int(returns.size)
    out.update(
        return_mean=float(returns.mean()),
        return_std=float(returns.std()),
        episode_length_mean=float(np.mean(ended["length"])),
    )
    for key, values in ended.items():
        if key not in ("return", "length"):
            reduce = np.max if reductions.get(key) == "max" else np.mean
            out[key.replace("/", "_")] = float(reduce(values))
    summarize = getattr(env, "summarize_episodes", None)
    if summarize is not None:
        out.update(summarize(ended))  # task statistics beyond means, e.g. spreads
    return out


class EpisodeBar:
    """A tqdm bar over an evaluation's episodes (simulations), advancing with the running
    episodes' steps where the environment says how long an episode lasts at most, so a
    G1 evaluation whose episodes all end together does not sit at 0 for minutes."""

    def __init__(self, env: VecEnv) -> None:
        self.env = env
        self.agents = getattr(env, "agents_per_sim", 1)
        self.max_steps = getattr(env, "max_episode_steps", None)
        total = env.num_envs // self.agents
        self.bar = tqdm(
            total=total,
            desc="evaluating",
            unit="episode",
            leave=False,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total} episodes "
            "[{elapsed}<{remaining}]",
        )

    def show(self, finished: np.ndarray) -> None:
        done = finished.astype(float)
        steps = getattr(self.env, "episode_step", None)
        if self.max_steps and steps is not None:
            running = np.minimum(np.asarray(steps) / self.max_steps, 1.0)
            done = np.where(finished, 1.0, running)
        self.bar.update(done.sum() / self.agents - self.bar.n)

    def __enter__(self) -> EpisodeBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.bar.close()
