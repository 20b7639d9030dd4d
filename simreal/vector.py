"""simreal's tasks as Gymnasium vector environments (`simreal.make_vec`).

Every simreal task is already a batch of simulations stepped together, with its own
time limit and resets, so the vector environment here is a thin face on the task's own
batched environment (`tasks/env.py`): one engine call per step for all simulations, no
per-environment Python loop and no sub-environment objects. It exists so that the
trainers people already use (CleanRL-style loops, anything written against
`gymnasium.vector.VectorEnv`) can train simreal's tasks; `simreal train --gym` goes the
other way (Gymnasium environments into simreal's PPO).

Autoreset: a task resets an episode inside the step that ends it, so the observation
returned for that row already starts the next episode: Gymnasium's same-step mode
(`AutoresetMode.SAME_STEP`, in `metadata["autoreset_mode"]`), as SyncVectorEnv does with
`autoreset_mode=SAME_STEP`. What a finished episode leaves is in `info["final_info"]`
(the task's episode summary: return, length, per-term reward sums and the task's metrics)
and, for episodes cut by the time limit, `info["final_critic_obs"]` (the critic's last
observation, what bootstrapping needs). The task does not keep the policy's observation
of an episode's last state, so there is no `final_obs`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
from gymnasium.spaces import Box
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space


def make_task_env(
    task: str,
    num_envs: int,
    seed: int = 0,
    engine: str = "mjbatch",
    num_threads: int = 0,
    config: Any = None,
    **overrides: Any,
):
    """The task's own batched environment (`tasks.TaskEnv`) with `num_envs` simulations,
    its config the task's defaults (or `config`) with top-level fields replaced by
    `overrides` (e.g. `evaluation=True`). Shared by `make_vec` and the rsl_rl adapter, so
    both build a task exactly as `simreal train` does."""
    from simreal.tasks import get_task, make_env

    spec = get_task(task)
    if num_envs < 1:
        raise ValueError(f"{task}: num_envs must be >= 1, got {num_envs}")
    cfg = spec.config_cls() if config is None else config
    if not isinstance(cfg, spec.config_cls):
        raise TypeError(
            f"{task}: config must be a {spec.config_cls.__name__}, got {type(cfg).__name__}"
        )
    names = [f.name for f in dataclasses.fields(cfg)]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ValueError(
            f"{task}: unknown config field(s) {', '.join(unknown)}; "
            f"{spec.config_cls.__name__} has: {', '.join(names)}"
        )
    cfg = dataclasses.replace(cfg, **overrides)
    return make_env(spec.name, cfg, num_envs, engine, seed, num_threads)


class TaskVectorEnv(VectorEnv):
    """A simreal task's batched environment as a `gymnasium.vector.VectorEnv`.

    Observations are the policy's observation, float32 (num_envs, num_obs), in an
    unbounded Box; actions are float32 (num_envs, num_actions) in the Box the task clips
    them to ([-action_clip, action_clip]). `num_envs` counts policy rows: simulations
    times the task's agents per simulation (quad-swarm's drones). Rewards are the task's
    weighted reward sum (float32), terminated and truncated bool arrays. `info` holds
    `critic_obs` (the critic's privileged observation, every step), and where episodes
    ended `final_info` (the task's episode summary per row, `_final_info` marking the
    rows) and `final_critic_obs` (rows cut by the time limit, `_final_critic_obs`).

    With `device` set (a torch device), observations, rewards, terminated, truncated and
    `critic_obs` come back as torch tensors there and actions may be tensors: the arrays
    a torch trainer needs without a copy loop of its own (the spaces stay NumPy Boxes).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "autoreset_mode": AutoresetMode.SAME_STEP,
        "render_modes": [],
    }

    def __init__(
        self,
        task: str,
        num_envs: int,
        seed: int = 0,
        device: Any = None,
        engine: str = "mjbatch",
        num_threads: int = 0,
        config: Any = None,
        **overrides: Any,
    ):
        self.task = task
        self._build = dict(
            task=task, num_envs=num_envs, engine=engine, num_threads=num_threads, config=config
        )
        self._overrides = overrides
        self.env = make_task_env(seed=seed, **self._build, **overrides)
        self._seed = seed
        self._fresh = True
        """Built and never reset or stepped: a reset with the build seed needs no rebuild."""
        env = self.env
        self.num_envs = env.num_envs
        self.device = None
        if device is not None:
            import torch

            self.device = torch.device(device)
        self.single_observation_space = Box(-np.inf, np.inf, (env.num_obs,), np.float32)
        self.single_critic_observation_space = Box(
            -np.inf, np.inf, (env.num_critic_obs,), np.float32
        )
        clip = float(env.action_clip)
        self.single_action_space = Box(-clip, clip, (env.num_actions,), np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.max_episode_steps = env.max_episode_steps
        """The task's time limit in steps (truncation), per simulation."""
        self.spec = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Fresh episodes in every row. `seed` rebuilds the task with that seed (every
        random draw of a task, its resets, randomization and noise, comes from generators
        seeded at construction), so `reset(seed=s)` starts as `make_vec(..., seed=s)`
        does, whatever ran before; without a seed the task's generators go on."""
        if options:
            raise ValueError(f"{self.task}: reset options are not supported, got {sorted(options)}")
        if seed is not None and not (self._fresh and seed == self._seed):
            self.close_extras()
            self.env = make_task_env(seed=seed, **self._build, **self._overrides)
            self._seed = seed
        self._fresh = False
        obs, critic_obs = self.env.reset()
        return self._out(obs), {"critic_obs": self._out(critic_obs)}

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        self._fresh = False
        if hasattr(actions, "detach"):  # a torch tensor, on any device
            actions = actions.detach().cpu().numpy()
        actions = np.asarray(actions)
        if actions.shape != self.action_space.shape:
            raise ValueError(
                f"{self.task}: actions must have shape {self.action_space.shape} "
                f"(num_envs, num_actions), got {actions.shape}"
            )
        step = self.env.step(actions)
        done = step.terminated | step.truncated
        info: dict[str, Any] = {"critic_obs": self._out(step.critic_obs)}
        episode = step.info.get("episode")
        if episode:
            ids = np.flatnonzero(done)
            final: dict[str, Any] = {}
            for key, values in episode.items():
                values = np.asarray(values)
                rows = np.zeros((self.num_envs, *values.shape[1:]), dtype=values.dtype)
                rows[ids] = values
                final[key], final[f"_{key}"] = rows, done.copy()
            info["final_info"], info["_final_info"] = final, done.copy()
        if step.truncated.any():
            info["final_critic_obs"] = self._out(step.final_critic_obs)
            info["_final_critic_obs"] = step.truncated.copy()
        return (
            self._out(step.obs),
            self._out(step.reward),
            self._out(step.terminated),
            self._out(step.truncated),
            info,
        )

    def _out(self, array: np.ndarray) -> Any:
        if self.device is None:
            return array
        import torch

        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def close_extras(self, **kwargs: Any) -> None:
        close = getattr(self.env.engine, "close", None)
        if close is not None:
            close()


def make_vec(
    task: str,
    num_envs: int = 64,
    *,
    seed: int = 0,
    device: Any = None,
    engine: str = "mjbatch",
    num_threads: int = 0,
    config: Any = None,
    **task_overrides: Any,
) -> TaskVectorEnv:
    """Task `task` (a registered name, e.g. "quad-hover", "g1-walk") as a Gymnasium
    vector environment of `num_envs` simulations, stepped together in one engine.

    `seed` seeds the task (resets, randomization, noise); `device`: None for NumPy
    arrays, a torch device for tensors there; `engine` and `num_threads` as for
    `simreal train` (`--engine`, physics threads, 0 for every usable CPU); `config` a
    full task config (default: the task's defaults); keyword arguments replace top-level
    config fields, e.g. `make_vec("quad-hover", 64, evaluation=True)` for the
    evaluation starts. Autoreset is same-step (see `TaskVectorEnv`).

        envs = simreal.make_vec("quad-hover", num_envs=64, seed=0)
        obs, info = envs.reset(seed=0)
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    """
    return TaskVectorEnv(
        task,
        num_envs,
        seed=seed,
        device=device,
        engine=engine,
        num_threads=num_threads,
        config=config,
        **task_overrides,
    )


__all__ = ["TaskVectorEnv", "make_task_env", "make_vec"]
