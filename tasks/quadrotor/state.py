"""The drone's state as observation terms see it, and the terms every quad task shares."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.rotations import quat_to_matrix


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


def base_rot(state: QuadState) -> np.ndarray:
    """(N, 9) rotation matrix world-from-body, row-major: no angle wrap-around to learn."""
    return quat_to_matrix(state.base_quat).reshape(-1, 9)
