"""g1-force's own reward terms: standing one's ground under a load, on top of the G1's
balance and effort terms (`tasks/g1/rewards.py`).

A robot under a sustained push that may walk with it survives any push and holds none:
the g1-force headline walked 6.9 m back over a 4 s, 80 N hold and turned by up to 2.6 rad
(docs/findings.md). These terms pay for the pelvis standing still (no
horizontal speed, no yaw rate), so leaning into the push beats walking away from it.
Two forms: squared penalties (`base_drift`, `yaw_rate`), which made the per-step reward
negative wherever a fall's tumble dominated them and, at weights that kept it positive,
cost a steady walk too little to matter; and the bounded kernels
(`hold_ground`, `hold_heading`), in (0, 1], paid only while the robot is up.

Neither made it lean: the pelvis stood still only at loads a stiff stance holds anyway
(~30 N for the G1's soles), and beyond it the robot stepped. `cop_support` pays for the
quantity that decides whether a load can be held flat-footed, the centre of pressure the
robot's posture would need under it (`quasi_static_cop`), kept at the middle of its feet:
the whole-body lean FAT2 approximates with the torso's tilt, measured on the whole body.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.g1.fat2 import GRAVITY
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


def quasi_static_cop(
    com: np.ndarray, mass: float, forces: np.ndarray, points: np.ndarray, ground_z: np.ndarray
) -> np.ndarray:
    """(N, 2) the point on the ground where the ground reaction must act for a robot held
    still to balance gravity and the external forces: the centre of pressure (CoP) of its
    posture under the load, accelerations neglected.

    com (N, 3) whole-body centre of mass and points (N, K, 3) where forces (N, K, 3) act,
    world frame (m, N); mass (kg); ground_z (N,) the floor's height. Zero moment about the
    CoP P, per horizontal axis u (h_k = height of point k above the floor):

        P_u (m g - sum F_kz) = m g c_u + sum h_k F_ku - sum p_ku F_kz.

    A backward push F at height h moves the CoP F h / (m g) behind the CoM, so holding it
    flat-footed needs the CoM that far ahead of the feet. Loads that would lift the robot
    (sum F_kz near m g) leave P undefined; the vertical load is floored at a tenth of the
    weight to keep it finite."""
    weight = mass * GRAVITY
    height = points[..., 2] - ground_z[:, None]
    fz = forces[..., 2]
    moment = height[..., None] * forces[..., :2] - points[..., :2] * fz[..., None]
    load = np.maximum(weight - fz.sum(axis=1), 0.1 * weight)
    return (weight * com[:, :2] + moment.sum(axis=1)) / load[:, None]


def cop_support(
    cop: np.ndarray, support_centre: np.ndarray, both_feet_down: np.ndarray, sigma: float
) -> np.ndarray:
    """Kernel on the distance (m) from the quasi-static CoP (N, 2) to the middle of the two
    soles (N, 2), paid while both feet are down (N,): 1 for a posture whose CoP under the
    load sits mid-stance, 0 when stepping or fallen."""
    distance2 = np.sum(np.square(cop - support_centre), axis=1)
    return both_feet_down * np.exp(-distance2 / sigma**2)


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


def posture_cop(env) -> tuple[np.ndarray, np.ndarray]:
    """(N, 2) the quasi-static CoP of a G1ForceEnv's posture under its loads and (N, 2)
    the middle of its soles, world frame (m)."""
    ground_z = env.foot_pos[..., 2].mean(axis=1)
    cop = quasi_static_cop(
        env.robot_com(), env.mass, env.external_force, env.load_points(), ground_z
    )
    return cop, env.foot_pos[..., :2].mean(axis=1)


def cop_support_term(env) -> np.ndarray:
    cop, centre = posture_cop(env)
    both_down = env.foot_contact().min(axis=1)
    return cop_support(cop, centre, both_down, env.cfg.cop_sigma_m)


REWARDS: tuple[RewardTerm, ...] = (
    *G1_REWARDS,
    RewardTerm("base_drift", base_drift_term, weight=0.0),
    RewardTerm("yaw_rate", yaw_rate_term, weight=0.0),
    RewardTerm("hold_ground", hold_ground_term, weight=0.0),
    RewardTerm("hold_heading", hold_heading_term, weight=0.0),
    RewardTerm("cop_support", cop_support_term, weight=0.0),
)
"""The G1's terms and the standing-ground ones, these at weight 0 (logged, not computed);
`--set task.reward_weights.hold_ground=W` weighs one."""
