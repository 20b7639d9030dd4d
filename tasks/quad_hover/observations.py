"""Observation terms of `quad-hover`, pure functions of the drone's state.

`policy_observation` is the one definition used in training, evaluation and on a
robot: deploy builds `QuadState` from its sensors and calls the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from simreal.tasks.rotations import quat_to_matrix

POLICY_OBSERVATION: tuple[tuple[str, int], ...] = (
    ("target_pos_error", 3),
    ("base_rot", 9),
    ("base_lin_vel", 3),
    ("base_ang_vel", 3),
    ("last_action", 4),
)
"""Layout of the policy observation: name and size of each term, in order."""

PRIVILEGED_OBSERVATION: tuple[tuple[str, int], ...] = (
    ("mass_scale", 1),
    ("kf_scale", 1),
    ("motor_lag_s", 1),
)
"""Critic-only terms, appended to the policy observation."""


@dataclass
class QuadState:
    """Batched drone state: base_pos (N, 3) world, base_quat (N, 4) wxyz,
    base_lin_vel (N, 3) world frame, base_ang_vel (N, 3) body frame."""

    base_pos: np.ndarray
    base_quat: np.ndarray
    base_lin_vel: np.ndarray
    base_ang_vel: np.ndarray

    @classmethod
    def from_free_joint(cls, qpos: np.ndarray, qvel: np.ndarray) -> QuadState:
        """MuJoCo free joint: qvel holds world-frame linear and body-frame angular velocity."""
        return cls(qpos[:, 0:3], qpos[:, 3:7], qvel[:, 0:3], qvel[:, 3:6])


def target_pos_error(state: QuadState, target: np.ndarray) -> np.ndarray:
    return target - state.base_pos


def base_rot(state: QuadState) -> np.ndarray:
    return quat_to_matrix(state.base_quat).reshape(-1, 9)


def policy_observation(state: QuadState, target: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    """(N, 22) float32 observation in POLICY_OBSERVATION order."""
    return np.concatenate(
        [
            target_pos_error(state, target),
            base_rot(state),
            state.base_lin_vel,
            state.base_ang_vel,
            last_action,
        ],
        axis=1,
        dtype=np.float32,
    )
