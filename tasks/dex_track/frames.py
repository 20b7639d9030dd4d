"""Batched frame algebra for `dex-track`: the wrist's joint chain and a continuous
rotation encoding (quaternion helpers: `tasks/rotations.py`). Arrays lead with a batch
dimension."""

from __future__ import annotations

import numpy as np

from simreal.robots.allegro import WRIST_HEIGHT
from simreal.tasks.rotations import quat_from_axis_angle, quat_mul, quat_to_matrix


def rotation_6d(q: np.ndarray) -> np.ndarray:
    """(N, 6): the first two columns of the rotation matrix, a continuous encoding."""
    m = quat_to_matrix(q)
    return np.concatenate([m[:, :, 0], m[:, :, 1]], axis=1)


def wrist_joints(pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """(N, 6) wrist joint values (x, y, z slides; roll, pitch, yaw hinges) that put the
    wrist frame at world `pos` (N, 3) with orientation `quat` (N, 4): the chain's rotation
    is Rx(roll) Ry(pitch) Rz(yaw)."""
    m = quat_to_matrix(quat)
    roll = np.arctan2(-m[:, 1, 2], m[:, 2, 2])
    pitch = np.arcsin(np.clip(m[:, 0, 2], -1.0, 1.0))
    yaw = np.arctan2(-m[:, 0, 1], m[:, 0, 0])
    slides = pos - np.array([0.0, 0.0, WRIST_HEIGHT])
    return np.concatenate([slides, np.stack([roll, pitch, yaw], axis=1)], axis=1)


def wrist_pose(joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of `wrist_joints`: world position (N, 3) and quaternion (N, 4)."""
    pos = joints[:, :3] + np.array([0.0, 0.0, WRIST_HEIGHT])
    n = joints.shape[0]
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    for k in range(3):
        axis = np.zeros((n, 3))
        axis[:, k] = 1.0
        quat = quat_mul(quat, quat_from_axis_angle(axis, joints[:, 3 + k]))
    return pos, quat
