"""Reward terms of `dex-track` (DexTrack family): pure functions returning (N,) values.

Each tracking term is an exponential kernel in [0, 1] of one error, so the terms add up
without one scale swamping another; the bonus pays for staying within the success
tolerance; action_rate penalizes jitter (weighted negative).
"""

from __future__ import annotations

import numpy as np

POS_TOLERANCE_M = 0.02
ROT_TOLERANCE_RAD = np.deg2rad(10.0)


def object_pos(error_m: np.ndarray) -> np.ndarray:
    return np.exp(-error_m / 0.02)


def object_rot(error_rad: np.ndarray) -> np.ndarray:
    return np.exp(-error_rad / 0.25)


def wrist(pos_error_m: np.ndarray, rot_error_rad: np.ndarray) -> np.ndarray:
    """pos_error_m: (N,) wrist slide error; rot_error_rad: (N,) norm of hinge errors."""
    return np.exp(-pos_error_m / 0.03 - rot_error_rad / 0.3)


def fingers(joint_error_rad: np.ndarray) -> np.ndarray:
    """joint_error_rad: (N,) mean absolute finger joint error."""
    return np.exp(-joint_error_rad / 0.2)


def fingertip_distance(tip_to_object: np.ndarray, ref_tip_to_object: np.ndarray) -> np.ndarray:
    """(N, 4) fingertip-to-object-origin distances, simulated and reference (m)."""
    return np.exp(-np.abs(tip_to_object - ref_tip_to_object).mean(axis=1) / 0.02)


def tolerance_bonus(pos_error_m: np.ndarray, rot_error_rad: np.ndarray) -> np.ndarray:
    return ((pos_error_m <= POS_TOLERANCE_M) & (rot_error_rad <= ROT_TOLERANCE_RAD)).astype(float)


def action_rate(action: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    return np.sum((action - last_action) ** 2, axis=1)
