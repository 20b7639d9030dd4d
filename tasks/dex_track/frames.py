"""Batched frame algebra for `dex-track`: quaternions (w, x, y, z), the wrist's joint
chain, rotation errors. Arrays lead with a batch dimension."""

from __future__ import annotations

import numpy as np

from simreal.robots.allegro import WRIST_HEIGHT
from simreal.sim.quaternions import quat_mul
from simreal.tasks.rotations import quat_to_matrix


def quat_conj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quat_from_axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """(..., 4) rotations by `angle` (...) about unit `axis` (..., 3)."""
    half = np.asarray(angle)[..., None] / 2
    return np.concatenate([np.cos(half), np.sin(half) * axis], axis=-1)


def quat_angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation angle (rad, in [0, pi]) between orientations a and b (..., 4)."""
    dot = np.abs(np.sum(a * b, axis=-1))
    return 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))


def quat_error_vector(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Axis * angle (..., 3, world frame) of the rotation taking `current` to `target`."""
    d = quat_mul(target, quat_conj(current))
    d = d * np.where(d[..., :1] < 0, -1.0, 1.0)
    s = np.linalg.norm(d[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, d[..., :1])
    return d[..., 1:] * np.where(s > 1e-9, angle / np.maximum(s, 1e-12), 2.0)


def quat_slerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Spherical interpolation from a to b at fractions t (broadcast), (..., 4)."""
    dot = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(dot < 0, -b, b)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    t = np.asarray(t)[..., None]
    small = theta < 1e-6
    sin = np.where(small, 1.0, np.sin(theta))
    wa = np.where(small, 1 - t, np.sin((1 - t) * theta) / sin)
    wb = np.where(small, t, np.sin(t * theta) / sin)
    q = wa * a + wb * b
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotation matrices -> (N, 4) quaternions with w >= 0."""
    q = np.empty((m.shape[0], 4))
    tr = np.trace(m, axis1=1, axis2=2)
    w = np.sqrt(np.maximum(0.0, 1 + tr)) / 2
    x = np.sqrt(np.maximum(0.0, 1 + m[:, 0, 0] - m[:, 1, 1] - m[:, 2, 2])) / 2
    y = np.sqrt(np.maximum(0.0, 1 - m[:, 0, 0] + m[:, 1, 1] - m[:, 2, 2])) / 2
    z = np.sqrt(np.maximum(0.0, 1 - m[:, 0, 0] - m[:, 1, 1] + m[:, 2, 2])) / 2
    q[:, 0] = w
    q[:, 1] = np.copysign(x, m[:, 2, 1] - m[:, 1, 2])
    q[:, 2] = np.copysign(y, m[:, 0, 2] - m[:, 2, 0])
    q[:, 3] = np.copysign(z, m[:, 1, 0] - m[:, 0, 1])
    return q / np.linalg.norm(q, axis=1, keepdims=True)


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
