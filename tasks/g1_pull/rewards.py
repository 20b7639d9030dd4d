"""Walking reward terms of `g1-pull` (the G1's balance and effort terms come from
`tasks/g1/rewards.py`): pure functions returning (num_envs,) unweighted values."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simreal.tasks.g1.rewards import REWARDS as G1_REWARDS
from simreal.tasks.g1_pull import gait
from simreal.tasks.terms import RewardTerm


def track_lin_vel(base_lin_vel: np.ndarray, command: np.ndarray, sigma: float) -> np.ndarray:
    """Horizontal base velocity (N, 2+) close to the command (N, 2+), in the frame the
    caller chooses: g1-pull's `track_lin_vel` passes the heading frame, `track_rail_vel`
    the world frame (along the rails), which pays nothing to a robot walking at the
    commanded speed after turning away from the rails (under the heading-frame term alone,
    backward walkers spun by 2-3 rad)."""
    error = np.sum(np.square(base_lin_vel[:, :2] - command[:, :2]), axis=1)
    return np.exp(-error / sigma**2)


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


def track_yaw_rate(yaw_rate: np.ndarray, command: np.ndarray, sigma: float) -> np.ndarray:
    """Base yaw rate (N,) close to the commanded one (N,), rad/s."""
    return np.exp(-np.square(yaw_rate - command) / sigma**2)


def feet_air_time(
    touchdown_air_time: np.ndarray, target_s: float, walking: np.ndarray
) -> np.ndarray:
    """Steps of a useful length: at each touchdown the foot's time in the air minus
    `target_s` (touchdown_air_time (N, 2) is 0 for a foot that did not just land), only
    while a speed is commanded (walking (N,) bool); standing still earns nothing."""
    return (
        np.sum(np.where(touchdown_air_time > 0, touchdown_air_time - target_s, 0.0), axis=1)
        * walking
    )


def feet_phase_contact(contact: np.ndarray, stance: np.ndarray) -> np.ndarray:
    """Fraction of feet (contact (N, 2) 0/1) whose ground contact matches the gait clock's
    stance (N, 2) bool: a periodic gait to lock on to, which a stepping reward alone
    found only after tens of millions of steps (the legged_gym/unitree_rl_gym recipe)."""
    return np.mean((contact > 0) == stance, axis=1)


def feet_swing_height(
    foot_height: np.ndarray, contact: np.ndarray, target_m: float, walking: np.ndarray
) -> np.ndarray:
    """Squared error (m^2) of swinging feet's sole height (N, 2) from target_m, summed,
    while a speed is commanded: steps clear the floor without high kicks."""
    swing = (contact == 0) * walking[:, None]
    return np.sum(np.square(foot_height - target_m) * swing, axis=1)


# -- the terms, read from a G1PullEnv ---------------------------------------------------


def track_velocity_term(env, frame: str) -> np.ndarray:
    """The base velocity against the command, in the heading frame or the world's (the
    rails' direction)."""
    vel = env.engine.qvel[:, 0:3]
    if frame == "heading":
        vel = env.to_heading(vel)
    return track_lin_vel(vel, env.command, env.cfg.lin_vel_sigma_m_s)


def heading_term(env) -> np.ndarray:
    return heading(env.yaw(), env.cfg.heading_sigma_rad)


def tow_term(env) -> np.ndarray:
    return tow(env.handle_force_n, env.resistance, env.walking())


def tow_steady_term(env) -> np.ndarray:
    return tow_steady(
        env.handle_force_n, env.steady_tow_force(), env.walking(), env.cfg.tow_sigma_share
    )


def track_yaw_rate_term(env) -> np.ndarray:
    return track_yaw_rate(env.base_yaw_rate(), env.command[:, 2], env.cfg.yaw_rate_sigma)


def feet_air_time_term(env) -> np.ndarray:
    return feet_air_time(env.touchdown_air_time, env.cfg.feet_air_time_s, env.walking())


def feet_phase_contact_term(env) -> np.ndarray:
    stance = gait.stance(env.phase(), env.walking(), env.cfg.stance_fraction)
    return feet_phase_contact(env.foot_contact(), stance)


def feet_swing_height_term(env) -> np.ndarray:
    return feet_swing_height(
        env.foot_pos[..., 2], env.foot_contact(), env.cfg.swing_height_m, env.walking()
    )


REWARDS: tuple[RewardTerm, ...] = (
    *(
        replace(term, weight=-0.02) if term.name == "joint_deviation" else term
        for term in G1_REWARDS
    ),  # walking moves the legs away from the default pose
    RewardTerm("track_lin_vel", track_velocity_term, 0.0, {"frame": "heading"}),
    RewardTerm("track_rail_vel", track_velocity_term, 2.0, {"frame": "world"}),
    RewardTerm("heading", heading_term, weight=1.0),
    RewardTerm("tow", tow_term, weight=0.0),
    RewardTerm("tow_steady", tow_steady_term, weight=0.0),
    RewardTerm("track_yaw_rate", track_yaw_rate_term, weight=0.5),
    RewardTerm("feet_air_time", feet_air_time_term, weight=1.0),
    RewardTerm("feet_phase_contact", feet_phase_contact_term, weight=1.0),
    RewardTerm("feet_swing_height", feet_swing_height_term, weight=-20.0),
)
"""The G1's terms, then the walking and towing terms, default weights per second."""
