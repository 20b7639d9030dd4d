"""Reward terms every G1 task shares: pure functions returning (num_envs,) unweighted values.

Kernels exp(-e^2 / sigma^2) lie in (0, 1]; penalties are >= 0 and weighted negatively.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.rotations import projected_gravity
from simreal.tasks.terms import RewardTerm


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


def self_contact(contacts: np.ndarray) -> np.ndarray:
    """1 where any of the robot's geoms touch each other (contacts (N,) counted by the
    engine): an arm on the torso or a hand on the hip, which the real robot's shells take
    as knocks and which evaluation measures as self-penetration. An indicator, as mjlab's
    self-collision cost counts contacts: a light touch costs as much as a deep one, so the
    policy keeps clear rather than learning how far it may sink in."""
    return (contacts > 0).astype(float)


# -- adapters, where a term's inputs need computing (the others name theirs) ---------


def alive_term(env) -> np.ndarray:
    return np.ones(env.num_envs)


def upright_term(env) -> np.ndarray:
    return upright(projected_gravity(env.engine.qpos[:, 3:7]), env.cfg.upright_sigma)


REWARDS: tuple[RewardTerm, ...] = (
    RewardTerm("alive", alive_term, weight=1.0),
    RewardTerm("upright", upright_term, weight=0.5),
    RewardTerm(
        "base_height",
        base_height,
        0.5,
        inputs=("base_height", "stand_height", "cfg.base_height_sigma_m"),
    ),
    RewardTerm(
        "fat2_tilt", fat2_tilt, 1.0, inputs=("torso_lean", "fat2_target", "cfg.fat2_sigma_rad")
    ),
    RewardTerm("joint_limit", joint_limit, -2.0, inputs=("joint_pos", "soft_lower", "soft_upper")),
    RewardTerm("torque", torque, -0.05, inputs=("joint_torque", "torque_limit")),
    RewardTerm("action_rate", action_rate, -0.01, inputs=("action", "last_action")),
    RewardTerm("feet_slip", feet_slip, -0.2, inputs=("foot_vel", "foot_contact")),
    RewardTerm(
        "joint_deviation", joint_deviation, -0.05, inputs=("joint_pos", "default_joint_pos")
    ),
    RewardTerm("self_contact", self_contact, 0.0, inputs=("self_contacts",)),
)
"""The G1's balance and effort terms with their default weights (per second); tasks add
theirs. `self_contact` is 0 by default (logged, not computed); the g1-walk and g1-force
recipes weigh it."""
