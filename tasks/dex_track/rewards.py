"""Reward terms of `dex-track` (DexTrack family): pure functions returning (N,) values.

Each tracking term is an exponential kernel in [0, 1] of one error, so the terms add up
without one scale swamping another; the bonus pays for staying within the success
tolerance; action_rate penalizes jitter (weighted negative).
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.terms import RewardTerm

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


# -- the terms, read from a DexTrackEnv's tracking errors of this step -----------------


def object_pos_term(env) -> np.ndarray:
    return object_pos(env.errors_now()["object_pos"])


def object_rot_term(env) -> np.ndarray:
    return object_rot(env.errors_now()["object_rot"])


def wrist_term(env) -> np.ndarray:
    e = env.errors_now()
    return wrist(e["wrist_pos"], e["wrist_rot"])


def fingers_term(env) -> np.ndarray:
    return fingers(env.errors_now()["fingers"])


def fingertip_distance_term(env) -> np.ndarray:
    e = env.errors_now()
    return fingertip_distance(e["tips"], e["ref_tips"])


def tolerance_bonus_term(env) -> np.ndarray:
    e = env.errors_now()
    return tolerance_bonus(e["object_pos"], e["object_rot"])


REWARDS: tuple[RewardTerm, ...] = (
    RewardTerm("object_pos", object_pos_term, weight=2.0),
    RewardTerm("object_rot", object_rot_term, weight=1.0),
    RewardTerm("wrist", wrist_term, weight=0.2),
    RewardTerm("fingers", fingers_term, weight=0.1),
    RewardTerm("fingertip_distance", fingertip_distance_term, weight=0.2),
    RewardTerm("tolerance_bonus", tolerance_bonus_term, weight=1.0),
    RewardTerm("action_rate", action_rate, -0.01, inputs=("action", "last_action")),
)
"""Default weights per second: with the control period they keep returns near 10, so that
the value loss does not swamp the actor's clipped gradient."""
