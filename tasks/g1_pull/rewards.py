"""Towing reward terms of `g1-pull` (the G1's balance and effort terms come from
`tasks/g1/rewards.py`, the walking terms from `tasks/g1/walking_terms.py`): pure
functions returning (num_envs,) unweighted values."""

from __future__ import annotations

import numpy as np

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


def heading(yaw: np.ndarray, sigma: float) -> np.ndarray:
    """Facing along the rails (yaw 0, both pull directions), Gaussian in yaw (N,), rad."""
    return np.exp(-np.square(yaw) / sigma**2)


def tow(handle_force: np.ndarray, resistance: np.ndarray, walking: np.ndarray) -> np.ndarray:
    """Keeping the cart rolling while walking: the handle force (N,) as a share of the
    cart's rolling resistance (N,), at most 1 (a rolling cart pulls back with exactly its
    resistance; a slack rope or a stopped cart pulls less). The pulling metric takes the
    least force over 2 s, so a gait that jerks the rope taut and lets it go slack scores
    its slack moments (swings of 15-140 N were seen behind a 75 N cart)."""
    share = np.clip(handle_force / np.maximum(resistance, 1.0), 0.0, 1.0)
    return share * walking


def tow_steady(
    handle_force: np.ndarray, steady_force: np.ndarray, walking: np.ndarray, sigma_share: float
) -> np.ndarray:
    """Towing at an even pull: Gaussian in the handle force's (N,) deviation from the force
    that keeps the cart rolling at constant speed (N,), relative to it (`sigma_share`).
    A cart rolls on at constant speed exactly when the rope pulls with its resistance;
    every jerk above it is paid back by a dip below it, and the pulling metric takes the
    least force over 2 s. `tow` (at most 1 above the resistance) does not see the
    overshoots: a policy trained on `tow` alone swung its rope by +-25 % around a 165 N
    cart and held 118.7 N."""
    scale = sigma_share * np.maximum(steady_force, 1.0)
    return np.exp(-np.square((handle_force - steady_force) / scale)) * walking


REWARDS: tuple[RewardTerm, ...] = (
    *WALKING_G1_REWARDS,
    RewardTerm("track_lin_vel", track_velocity_term, 0.0, {"frame": "heading"}),
    RewardTerm("track_rail_vel", track_velocity_term, 2.0, {"frame": "world"}),
    RewardTerm("heading", heading, 1.0, inputs=("yaw", "cfg.heading_sigma_rad")),
    RewardTerm("tow", tow, 0.0, inputs=("handle_force_n", "resistance", "walking")),
    RewardTerm(
        "tow_steady",
        tow_steady,
        0.0,
        inputs=("handle_force_n", "steady_tow_force", "walking", "cfg.tow_sigma_share"),
    ),
    RewardTerm("track_yaw_rate", track_yaw_rate_term, weight=0.5),
    RewardTerm("feet_air_time", feet_air_time, 1.0, inputs=FEET_AIR_TIME_INPUTS),
    RewardTerm("feet_phase_contact", feet_phase_contact_term, weight=1.0),
    RewardTerm("feet_swing_height", feet_swing_height, -20.0, inputs=FEET_SWING_HEIGHT_INPUTS),
)
"""The G1's terms, then the walking and towing terms, default weights per second."""
