"""`quad-hover` environment: rise from HoverAviary's start and hold the target."""

from __future__ import annotations

import numpy as np

from simreal.tasks.quad_hover.config import QuadHoverConfig
from simreal.tasks.quad_hover.observations import (
    POLICY_OBSERVATION,
    POLICY_TERMS,
    HoverReading,
)
from simreal.tasks.quad_hover.rewards import REWARDS
from simreal.tasks.quadrotor import PRIVILEGED_OBSERVATION, QuadrotorEnv
from simreal.tasks.quadrotor.env import rest_pose
from simreal.tasks.terms import TerminationTerm


def out_of_bounds(env) -> np.ndarray:
    """(N,) bool: the drone left the box, |x| or |y| over `max_xy` or z over `max_z` (m)."""
    pos = env.state.base_pos
    c = env.cfg
    return (np.abs(pos[:, 0]) > c.max_xy) | (np.abs(pos[:, 1]) > c.max_xy) | (pos[:, 2] > c.max_z)


TERMINATIONS = (
    TerminationTerm("out_of_bounds", out_of_bounds),
    TerminationTerm("tilted_over", QuadrotorEnv.tilted_over),
)


class QuadHoverEnv(QuadrotorEnv):
    critic_observation_layout = POLICY_OBSERVATION + PRIVILEGED_OBSERVATION
    policy_terms = POLICY_TERMS
    reward_terms = REWARDS
    termination_terms = TERMINATIONS
    cfg: QuadHoverConfig

    def __init__(self, cfg: QuadHoverConfig, num_envs: int, **kwargs):
        self.target = np.asarray(cfg.target, dtype=np.float64)
        self.position_error_sum = np.zeros(num_envs)
        super().__init__(cfg, num_envs, **kwargs)

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        return self.observe_with(HoverReading(self.state, self.target, self.action))

    def after_step(self) -> None:
        self.position_error_sum += np.linalg.norm(self.target - self.state.base_pos, axis=1)

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        final = np.linalg.norm(self.target - self.engine.qpos[ids, 0:3], axis=1)
        steps = np.maximum(self.episode_step[ids], 1)
        return {
            "final_position_error_m": final,
            "mean_position_error_m": self.position_error_sum[ids] / steps,
        }

    def start_pose(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        z = self.params.collision_height / 2 + self.cfg.start_height
        return rest_pose(n, np.array([self.target[0], self.target[1], z]))

    def random_pose(self, qpos: np.ndarray, qvel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = qpos.shape[0]
        qpos = np.zeros((n, 7))
        qpos[:, 0:2] = self.rng.uniform(-1.0, 1.0, (n, 2))
        qpos[:, 2] = self.rng.uniform(0.2, 1.8, n)
        qpos[:, 3:7] = self.random_tilted_quat(n)
        qvel = self.rng.uniform(-0.5, 0.5, (n, 6))
        return qpos, qvel

    def reset_state(self, ids: np.ndarray) -> None:
        super().reset_state(ids)
        self.position_error_sum[ids] = 0.0
