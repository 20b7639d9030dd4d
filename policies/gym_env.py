"""Gymnasium environments behind the `VecEnv` protocol, so PPO trains on them unchanged.

Sub-environments reset in the same step their episode ends (`AutoresetMode.SAME_STEP`),
which keeps the observation each episode ended in for time-limit bootstrapping. The
critic sees what the policy sees. Only Box action spaces fit the Gaussian policy.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import FlattenObservation

from simreal.policies.config import ModelConfig, PPOConfig, TrainConfig
from simreal.policies.vecenv import StepResult


class GymVecEnv:
    """`num_envs` copies of Gymnasium env `env_id`, stepped in this process.

    Actions in [-1, 1] are clipped and mapped affinely onto the Box bounds; dimensions
    with an infinite bound get the clipped action unscaled. Observations are flattened
    to float32 (num_envs, num_obs).
    """

    def __init__(self, env_id: str, num_envs: int, seed: int = 0):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        module, sep, name = env_id.rpartition(":")
        if sep:
            # Gymnasium's "module:EnvId": importing the module registers its environments
            # (e.g. highway_env:lane-keeping-v0).
            importlib.import_module(module)
            env_id = name
        if env_id not in gymnasium.registry:
            raise ValueError(
                f"unknown Gymnasium id {env_id!r}; registered: "
                + ", ".join(sorted(gymnasium.registry))
            )
        self.envs = SyncVectorEnv(
            [lambda: FlattenObservation(gymnasium.make(env_id)) for _ in range(num_envs)],
            copy=True,  # a new obs array each step: rollout storage holds the last one
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
        space = self.envs.single_action_space
        if not isinstance(space, gymnasium.spaces.Box):
            self.envs.close()
            raise ValueError(
                f"{env_id}: action space {space} is not supported; only Box (continuous) "
                "action spaces are, as the PPO policy is Gaussian"
            )
        self.env_id = env_id
        self.num_envs = num_envs
        self.num_obs = self.num_critic_obs = int(self.envs.single_observation_space.shape[0])
        self.num_actions = int(np.prod(space.shape))
        self.action_groups = {"actions": tuple(range(self.num_actions))}
        self._action_shape = (num_envs, *space.shape)
        self._action_dtype = space.dtype
        low = space.low.reshape(-1).astype(np.float64)
        high = space.high.reshape(-1).astype(np.float64)
        finite = np.isfinite(low) & np.isfinite(high)
        self._action_center = np.where(finite, (high + low) / 2.0, 0.0)
        self._action_half_range = np.where(finite, (high - low) / 2.0, 1.0)
        self._seed: int | None = seed
        self.episode_return = np.zeros(num_envs)
        self.episode_length = np.zeros(num_envs, dtype=np.int64)

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Fresh episodes in every sub-environment; the seed applies to the first reset only."""
        obs, _ = self.envs.reset(seed=self._seed)
        self._seed = None
        self.episode_return[:] = 0.0
        self.episode_length[:] = 0
        obs = np.asarray(obs, dtype=np.float32)
        return obs, obs

    def step(self, action: np.ndarray) -> StepResult:
        """Step with (num_envs, num_actions) actions in [-1, 1].

        An episode both terminated and truncated counts as terminated: no bootstrapping.
        """
        scaled = self._action_center + self._action_half_range * np.clip(action, -1.0, 1.0)
        obs, reward, terminated, truncated, info = self.envs.step(
            scaled.reshape(self._action_shape).astype(self._action_dtype)
        )
        obs = np.asarray(obs, dtype=np.float32)
        self.episode_return += reward
        self.episode_length += 1
        done = terminated | truncated
        final_obs = obs.copy()
        out_info: dict[str, Any] = {}
        if done.any():
            ids = np.flatnonzero(done)
            final_obs[ids] = np.stack([info["final_obs"][i] for i in ids])
            out_info["episode"] = {
                "return": self.episode_return[ids].copy(),
                "length": self.episode_length[ids].copy(),
            }
            self.episode_return[ids] = 0.0
            self.episode_length[ids] = 0
        return StepResult(
            obs=obs,
            critic_obs=obs,
            reward=reward.astype(np.float32),
            terminated=terminated,
            truncated=truncated & ~terminated,
            final_critic_obs=final_obs,
            info=out_info,
        )

    def close(self) -> None:
        self.envs.close()


def gym_train_config(**overrides: Any) -> TrainConfig:
    """The training defaults of `simreal train --gym`: the settings of the reference PPO
    implementations (CleanRL's ppo_continuous_action, SB3's rl-zoo MuJoCo entries) for the
    Gymnasium MuJoCo benchmarks; why each was chosen is in docs/findings.md (PPO and
    training).

    - 8 simulations x 256 steps = 2,048 samples per update;
    - 10 epochs of 32 minibatches (64 samples), learning rate 3e-4 falling linearly to 0;
    - raw rewards and an unclipped value loss (no return scaling, no value clipping);
    - the observation normalized and clipped to +-10, its variance floored at 1
      (`model.normalizer_var_floor`: a column is scaled down, never amplified);
    - value loss weight 0.5, gradient norm 0.5, no entropy bonus;
    - a tanh 64-64 actor and critic, orthogonal initialization, a state-independent
      log-std starting at 0 (std 1); one actor (a Gymnasium task has one action group).

    `overrides` set TrainConfig fields (seed, stop_at_return, ...); the user's --set and
    flags apply on top, as for the tasks.
    """
    model = ModelConfig(
        arch="coupled",
        actor_hidden=(64, 64),
        critic_hidden=(64, 64),
        activation="tanh",
        init="orthogonal",
        init_std=1.0,
        normalizer_var_floor=1.0,
    )
    ppo = PPOConfig(
        num_steps_per_env=256,
        num_epochs=10,
        num_minibatches=32,
        value_coef=0.5,
        entropy_coef=0.0,
        learning_rate=3e-4,
        schedule="linear",
        max_grad_norm=0.5,
        normalize_returns=False,
        clip_value_loss=False,
    )
    defaults: dict[str, Any] = {
        "num_envs": 8,
        "eval_interval": 50,
        "eval_episodes": 4,
        "model": model,
        "ppo": ppo,
    }
    return TrainConfig(**{**defaults, **overrides})
