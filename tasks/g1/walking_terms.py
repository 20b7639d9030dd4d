"""What the walking G1 tasks (`g1-pull`, `g1-walk`) share: the command and gait-clock
observation terms (the deploy node feeds the same terms: `deploy/g1/observation.py`)
and the walking rewards, pure functions returning (num_envs,) unweighted values."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from simreal.tasks.g1 import gait
from simreal.tasks.g1.rewards import REWARDS as G1_REWARDS
from simreal.tasks.terms import ObservationTerm, RewardTerm, layout


@dataclass
class GaitReading:
    """What the walking terms are computed from: the command (N, 3) (vx, vy in m/s in the
    heading frame, yaw rate in rad/s), the gait clock's phase (N,) and whether the command
    asks for steps (N,) bool."""

    command: np.ndarray
    phase: np.ndarray
    walking: np.ndarray


def command_velocity(r: GaitReading) -> np.ndarray:
    """Commanded (vx, vy) in m/s in the heading frame and yaw rate in rad/s."""
    return r.command


def gait_phase(r: GaitReading) -> np.ndarray:
    """(sin, cos) of the gait clock's left-leg phase 2 pi phi while walking is commanded,
    (0, 0) while standing (gait.py). The right leg runs half a period behind."""
    return gait.clock_observation(r.phase, r.walking)


COMMAND_VELOCITY = ObservationTerm("command_velocity", 3, command_velocity)
"""The velocity command, one term object: the deploy node recognizes a policy that takes
a command by it."""
GAIT_TERMS: tuple[ObservationTerm, ...] = (ObservationTerm("gait_phase", 2, gait_phase),)
GAIT_OBSERVATION = layout(GAIT_TERMS)


# -- walking rewards -------------------------------------------------------------------


def track_lin_vel(base_lin_vel: np.ndarray, command: np.ndarray, sigma: float) -> np.ndarray:
    """Horizontal base velocity (N, 2+) close to the command (N, 2+), in the frame the
    caller chooses: g1-pull's `track_lin_vel` passes the heading frame, `track_rail_vel`
    the world frame (along the rails), which pays nothing to a robot walking at the
    commanded speed after turning away from the rails (under the heading-frame term alone,
    backward walkers spun by 2-3 rad)."""
    error = np.sum(np.square(base_lin_vel[:, :2] - command[:, :2]), axis=1)
    return np.exp(-error / sigma**2)


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
    """Squared error (m^2) of swinging feet's sole height above the ground (N, 2) from
    target_m, summed,
    while a speed is commanded: steps clear the floor without high kicks."""
    swing = (contact == 0) * walking[:, None]
    return np.sum(np.square(foot_height - target_m) * swing, axis=1)


# -- the terms, read from a walking G1 environment (G1GaitEnv) ---------------------


def track_velocity_term(env, frame: str) -> np.ndarray:
    """The base velocity against the command, in the heading frame or the world's (the
    rails' direction)."""
    vel = env.engine.qvel[:, 0:3]
    if frame == "heading":
        vel = env.to_heading(vel)
    return track_lin_vel(vel, env.command, env.cfg.lin_vel_sigma_m_s)


def track_yaw_rate_term(env) -> np.ndarray:
    return track_yaw_rate(env.base_yaw_rate(), env.command[:, 2], env.cfg.yaw_rate_sigma)


def feet_phase_contact_term(env) -> np.ndarray:
    stance = gait.stance(env.phase(), env.walking(), env.cfg.stance_fraction)
    return feet_phase_contact(env.foot_contact(), stance)


FEET_AIR_TIME_INPUTS = ("touchdown_air_time", "cfg.feet_air_time_s", "walking")
FEET_SWING_HEIGHT_INPUTS = ("foot_clearance", "foot_contact", "cfg.swing_height_m", "walking")
"""The state `feet_air_time` and `feet_swing_height` read (`RewardTerm.inputs`)."""

WALKING_G1_REWARDS: tuple[RewardTerm, ...] = tuple(
    replace(term, weight=-0.02) if term.name == "joint_deviation" else term for term in G1_REWARDS
)
"""The G1's balance and effort terms as the walking tasks weigh them: joint_deviation
lighter, since walking moves the legs away from the default pose."""
