"""Reward terms of `g1-force`: pure functions returning (num_envs,) unweighted values.

Kernels exp(-e^2 / sigma^2) lie in (0, 1]; penalties are >= 0 and weighted negatively.
"""

from __future__ import annotations

import numpy as np


def upright(projected_gravity: np.ndarray, sigma: float) -> np.ndarray:
    """Pelvis close to level: kernel on the horizontal part of its projected gravity."""
    return np.exp(-np.sum(np.square(projected_gravity[:, :2]), axis=1) / sigma**2)


def base_height(height: np.ndarray, target: float, sigma: float) -> np.ndarray:
    """Pelvis near its standing height (m)."""
    return np.exp(-np.square(height - target) / sigma**2)


def fat2_tilt(lean: np.ndarray, target: np.ndarray, sigma: float) -> np.ndarray:
    """Torso lean (N, 2) tracking the FAT2 target lean (N, 2), rad (see fat2.py)."""
    return np.exp(-np.sum(np.square(lean - target), axis=1) / sigma**2)


def joint_limit(joint_pos: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Radians beyond the soft joint limits, summed over joints."""
    return np.sum(np.maximum(lower - joint_pos, 0.0) + np.maximum(joint_pos - upper, 0.0), axis=1)


def torque(tau: np.ndarray, torque_limit: np.ndarray) -> np.ndarray:
    """Squared joint torques as fractions of their limits, summed."""
    return np.sum(np.square(tau / torque_limit), axis=1)


def action_rate(action: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    """Squared change of the action between control steps."""
    return np.sum(np.square(action - last_action), axis=1)


def feet_slip(foot_vel: np.ndarray, contact: np.ndarray) -> np.ndarray:
    """Squared horizontal speed (m^2/s^2) of feet on the ground; foot_vel (N, 2, 3)."""
    return np.sum(np.sum(np.square(foot_vel[..., :2]), axis=-1) * contact, axis=1)


def joint_deviation(joint_pos: np.ndarray, default: np.ndarray) -> np.ndarray:
    """Squared distance (rad^2) from the default pose: keeps a posture to return to."""
    return np.sum(np.square(joint_pos - default), axis=1)
