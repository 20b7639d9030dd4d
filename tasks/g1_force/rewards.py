"""g1-force's own reward terms: standing one's ground under a load, on top of the G1's
balance and effort terms (`tasks/g1/rewards.py`).

A robot under a sustained push that may walk with it survives any push and holds none:
the g1-force headline walked 6.9 m back over a 4 s, 80 N hold and turned by up to 2.6 rad
(results/experiments/g1-force-lean). These terms pay for the pelvis standing still (no
horizontal speed, no yaw rate), so leaning into the push beats walking away from it.
Two forms: squared penalties (`base_drift`, `yaw_rate`), which made the per-step reward
negative wherever a fall's tumble dominated them and, at weights that kept it positive,
cost a steady walk too little to matter (run10 of that report); and the bounded kernels
(`hold_ground`, `hold_heading`), in (0, 1], paid only while the robot is up.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.g1.rewards import REWARDS as G1_REWARDS
from simreal.tasks.rotations import quat_rotate
from simreal.tasks.terms import RewardTerm


def base_drift(lin_vel: np.ndarray) -> np.ndarray:
    """Squared horizontal pelvis speed (m^2/s^2), lin_vel (N, 3) in the world."""
    return np.sum(np.square(lin_vel[:, :2]), axis=1)


def yaw_rate(ang_vel: np.ndarray) -> np.ndarray:
    """Squared pelvis yaw rate (rad^2/s^2), ang_vel (N, 3) in the world: the other way
    out of a push is to turn until it meets the robot where it is strongest."""
    return np.square(ang_vel[:, 2])


def hold_ground(lin_vel: np.ndarray, sigma: float) -> np.ndarray:
    """Kernel on the horizontal pelvis speed (m/s): 1 standing, ~0 at a walk well above
    sigma."""
    return np.exp(-base_drift(lin_vel) / sigma**2)


def hold_heading(ang_vel: np.ndarray, sigma: float) -> np.ndarray:
    """Kernel on the pelvis yaw rate (rad/s)."""
    return np.exp(-yaw_rate(ang_vel) / sigma**2)


# -- the terms, read from a G1ForceEnv ----------------------------------------------------


def world_lin_vel(env) -> np.ndarray:
    return env.engine.qvel[:, 0:3]  # a free joint's linear velocity is in the world


def world_ang_vel(env) -> np.ndarray:
    # a free joint's angular velocity is in the body frame: turn it into the world's
    return quat_rotate(env.engine.qpos[:, 3:7], env.engine.qvel[:, 3:6])


def base_drift_term(env) -> np.ndarray:
    return base_drift(world_lin_vel(env))


def yaw_rate_term(env) -> np.ndarray:
    return yaw_rate(world_ang_vel(env))


def hold_ground_term(env) -> np.ndarray:
    return hold_ground(world_lin_vel(env), env.cfg.hold_ground_sigma_m_s)


def hold_heading_term(env) -> np.ndarray:
    return hold_heading(world_ang_vel(env), env.cfg.hold_heading_sigma_rad_s)


REWARDS: tuple[RewardTerm, ...] = (
    *G1_REWARDS,
    RewardTerm("base_drift", base_drift_term, weight=0.0),
    RewardTerm("yaw_rate", yaw_rate_term, weight=0.0),
    RewardTerm("hold_ground", hold_ground_term, weight=0.0),
    RewardTerm("hold_heading", hold_heading_term, weight=0.0),
)
"""The G1's terms and the standing-ground ones, these at weight 0 (logged, not computed)
so that runs before them train the same; `--set task.reward_weights.hold_ground=W`
weighs one."""
