"""Reward terms of `g1-walk`: the G1's balance and effort terms (`tasks/g1/rewards.py`),
the walking terms (`tasks/g1/walking_terms.py`) and two of its own, pure functions
returning (num_envs,) unweighted values."""

from __future__ import annotations

import numpy as np

from simreal.tasks.g1.rewards import joint_deviation
from simreal.tasks.g1.walking_terms import (
    FEET_AIR_TIME_INPUTS,
    FEET_SWING_HEIGHT_INPUTS,
    WALKING_G1_REWARDS,
    feet_air_time,
    feet_phase_contact_term,
    feet_swing_height,
    track_velocity_term,
    track_yaw_rate_term,
)
from simreal.tasks.terms import RewardTerm


def vertical_speed(base_lin_vel: np.ndarray) -> np.ndarray:
    """Squared vertical pelvis speed (m^2/s^2): a walk that does not bounce."""
    return np.square(base_lin_vel[:, 2])


def stand_still(joint_pos: np.ndarray, default: np.ndarray, walking: np.ndarray) -> np.ndarray:
    """Squared distance (rad^2) from the default pose while no step is commanded
    (walking (N,) bool): a zero command means standing in the posture, not fidgeting."""
    return joint_deviation(joint_pos, default) * ~walking


def vertical_speed_term(env) -> np.ndarray:
    return vertical_speed(env.engine.qvel[:, 0:3])


REWARDS: tuple[RewardTerm, ...] = (
    *WALKING_G1_REWARDS,
    RewardTerm("track_lin_vel", track_velocity_term, 2.0, {"frame": "heading"}),
    RewardTerm("track_yaw_rate", track_yaw_rate_term, weight=1.0),
    RewardTerm("feet_air_time", feet_air_time, 1.0, inputs=FEET_AIR_TIME_INPUTS),
    RewardTerm("feet_phase_contact", feet_phase_contact_term, weight=1.0),
    RewardTerm("feet_swing_height", feet_swing_height, -20.0, inputs=FEET_SWING_HEIGHT_INPUTS),
    RewardTerm("vertical_speed", vertical_speed_term, weight=-1.0),
    RewardTerm(
        "stand_still", stand_still, -0.5, inputs=("joint_pos", "default_joint_pos", "walking")
    ),
)
"""The G1's terms (with `self_contact`, 0 by default; the headline recipe weighs it),
then the walking terms, default weights per second."""
