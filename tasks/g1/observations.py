"""Observation terms of every G1 task, pure functions of what the G1 itself measures.

`policy_observation` is the one definition used in training, evaluation and on the
robot: the pelvis IMU (gyro and orientation) and the joint encoders, all in the SDK
motor order. The external force is not observed: the policy infers it from how the
body responds. The critic additionally sees the privileged terms below.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.rotations import projected_gravity
from simreal.tasks.terms import ObservationTerm, layout, observe

NUM_JOINTS = 29


@dataclass
class G1State:
    """What the robot's sensors report, batched: base_quat (N, 4) wxyz of the pelvis IMU,
    base_ang_vel (N, 3) pelvis frame, joint_pos and joint_vel (N, 29) measured, SDK order."""

    base_quat: np.ndarray
    base_ang_vel: np.ndarray
    joint_pos: np.ndarray
    joint_vel: np.ndarray


@dataclass
class G1Reading:
    """What the policy observation is computed from, batched: the sensors, the default
    pose the joint angles are measured against and the policy's previous action (N, 29)."""

    state: G1State
    default_joint_pos: np.ndarray
    last_action: np.ndarray


def base_ang_vel(r: G1Reading) -> np.ndarray:
    """Pelvis IMU gyro (rad/s, pelvis frame)."""
    return r.state.base_ang_vel


def gravity_in_base(r: G1Reading) -> np.ndarray:
    """Unit gravity in the pelvis frame, from the IMU's orientation."""
    return projected_gravity(r.state.base_quat)


def joint_pos(r: G1Reading) -> np.ndarray:
    """Encoder angles relative to the default pose (rad), SDK order."""
    return r.state.joint_pos - r.default_joint_pos


def joint_vel(r: G1Reading) -> np.ndarray:
    return r.state.joint_vel


def last_action(r: G1Reading) -> np.ndarray:
    """The policy's previous output in [-1, 1] (the action clip allows more)."""
    return r.last_action


POLICY_TERMS: tuple[ObservationTerm, ...] = (
    ObservationTerm("base_ang_vel", 3, base_ang_vel, noise="gyro_noise"),
    ObservationTerm("projected_gravity", 3, gravity_in_base, noise="gravity_noise"),
    ObservationTerm("joint_pos", NUM_JOINTS, joint_pos, noise="joint_pos_noise"),
    ObservationTerm("joint_vel", NUM_JOINTS, joint_vel, noise="joint_vel_noise"),
    ObservationTerm("last_action", NUM_JOINTS, last_action),
)
"""The G1's policy observation, declared once; noise names fields of `G1Randomization`."""

POLICY_OBSERVATION: tuple[tuple[str, int], ...] = layout(POLICY_TERMS)


def policy_observation(
    state: G1State, default_joint_pos: np.ndarray, last_action: np.ndarray
) -> np.ndarray:
    """(N, 93) float32 observation in POLICY_TERMS order."""
    return observe(POLICY_TERMS, G1Reading(state, default_joint_pos, last_action))


# -- critic-only terms, read from the simulation (a G1Env) ------------------------------


def _per_sim(values: np.ndarray) -> np.ndarray:
    return values[:, None]


PRIVILEGED_TERMS: tuple[ObservationTerm, ...] = (
    ObservationTerm("base_lin_vel", 3, lambda env: env.to_heading(env.engine.qvel[:, 0:3])),
    ObservationTerm("base_height", 1, lambda env: env.base_height()[:, None]),
    ObservationTerm(
        "external_force", 9, lambda env: env.to_heading(env.external_force).reshape(-1, 9)
    ),
    ObservationTerm("fat2_target_tilt", 2, lambda env: env.fat2_target()),
    ObservationTerm("foot_contact", 2, lambda env: env.foot_contact()),
    ObservationTerm("friction", 1, lambda env: _per_sim(env.friction)),
    ObservationTerm("torso_added_mass_kg", 1, lambda env: _per_sim(env.torso_added_mass)),
    ObservationTerm("torso_com_offset", 3, lambda env: env.torso_com_offset),
    ObservationTerm("kp_scale_mean", 1, lambda env: env.kp_scale.mean(axis=1, keepdims=True)),
    ObservationTerm("kd_scale_mean", 1, lambda env: env.kd_scale.mean(axis=1, keepdims=True)),
    ObservationTerm(
        "motor_strength_mean", 1, lambda env: env.motor_strength.mean(axis=1, keepdims=True)
    ),
    ObservationTerm("latency_substeps", 1, lambda env: _per_sim(env.latency_substeps)),
    ObservationTerm("joint_offset", NUM_JOINTS, lambda env: env.joint_offset),
)
"""Critic-only terms, appended to the clean policy observation: base_lin_vel (m/s, heading
frame), base_height (m, above the ground), external_force (N, heading frame; torso, left hand, right hand),
the FAT2 target lean (rad), foot contact (0/1), and the randomized parameters."""

PRIVILEGED_OBSERVATION: tuple[tuple[str, int], ...] = layout(PRIVILEGED_TERMS)
