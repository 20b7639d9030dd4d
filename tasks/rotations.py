"""Batched rotation helpers on MuJoCo quaternions (w, x, y, z), shapes (num_envs, ...):
the one module tasks (and deploy, through them) take rotations from. The Hamilton
product lives with the engines (`simreal.sim.quaternions`), which cannot import tasks."""

from __future__ import annotations

import numpy as np

from simreal.sim.quaternions import quat_mul

__all__ = [
    "projected_gravity",
    "quat_angle",
    "quat_conj",
    "quat_error_vector",
    "quat_from_axis_angle",
    "quat_from_roll_pitch_yaw",
    "quat_mul",
    "quat_rotate",
    "quat_slerp",
    "quat_to_matrix",
    "roll_pitch",
]


def quat_to_matrix(quat: np.ndarray) -> np.ndarray:
    """(N, 4) unit quaternions -> (N, 3, 3) rotation matrices (world from body)."""
    w, x, y, z = (quat[:, i] for i in range(4))
    m = np.empty((quat.shape[0], 3, 3), dtype=quat.dtype)
    m[:, 0, 0] = 1 - 2 * (y * y + z * z)
    m[:, 0, 1] = 2 * (x * y - w * z)
    m[:, 0, 2] = 2 * (x * z + w * y)
    m[:, 1, 0] = 2 * (x * y + w * z)
    m[:, 1, 1] = 1 - 2 * (x * x + z * z)
    m[:, 1, 2] = 2 * (y * z - w * x)
    m[:, 2, 0] = 2 * (x * z - w * y)
    m[:, 2, 1] = 2 * (y * z + w * x)
    m[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return m


def roll_pitch(quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Roll and pitch (rad) of (N, 4) quaternions, ZYX Euler convention."""
    w, x, y, z = (quat[:, i] for i in range(4))
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    return roll, pitch


def quat_from_roll_pitch_yaw(roll: np.ndarray, pitch: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """(N,) Euler angles (ZYX) -> (N, 4) quaternions."""
    cr, sr = np.cos(roll / 2), np.sin(roll / 2)
    cp, sp = np.cos(pitch / 2), np.sin(pitch / 2)
    cy, sy = np.cos(yaw / 2), np.sin(yaw / 2)
    return np.stack(
        [
            cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
        ],
        axis=1,
    )


def projected_gravity(base_quat: np.ndarray) -> np.ndarray:
    """(N, 3) unit gravity vector in the base frame: (0, 0, -1) when upright."""
    return -quat_to_matrix(base_quat)[:, 2, :]


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
