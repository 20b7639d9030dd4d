"""A G1 calibration overlay (`G1Config.calibration`) applied to the simulated robot, as
the virtual robot applies it (`simreal.deploy.g1.sim_robot`): encoders report q + offset
and the PD loop closes on them, kp, kd and torque limits carry the overlay's scales,
armature, Coulomb (dof_frictionloss) and viscous (dof_damping) friction are set per
simulation, commands arrive the overlay's latency late and the gyro reads its bias. The
accelerometer bias is kept (`accel_bias`) but enters no observation: the policy reads
gravity from the IMU's orientation. Domain randomization is centred on these values."""

from __future__ import annotations

import numpy as np

from simreal.robots.g1 import JOINT_NAMES
from simreal.robots.g1.overlay import Overlay


def read_calibration(env, overlay: Overlay) -> None:
    """Per-joint (29,) calibrated values, SDK order, onto `env`: the centre of the
    randomization."""
    joints = [overlay.joint(n) for n in JOINT_NAMES]
    dofs = env.joint_dof_ids
    env.cal_joint_offset = np.array([j.encoder_offset for j in joints])
    env.cal_kp_scale = np.array([j.kp_scale for j in joints])
    env.cal_kd_scale = np.array([j.kd_scale for j in joints])
    env.cal_motor_strength = np.array([j.torque_limit_scale for j in joints])
    env.cal_armature = np.array(
        [
            nominal if j.armature is None else j.armature
            for j, nominal in zip(joints, env.nominal["dof_armature"][dofs], strict=True)
        ]
    )
    env.cal_frictionloss = np.array(
        [np.nan if j.friction_coulomb is None else j.friction_coulomb for j in joints]
    )
    env.cal_damping = np.array(
        [np.nan if j.friction_viscous is None else j.friction_viscous for j in joints]
    )
    """NaN where the overlay leaves a joint's friction nominal."""
    env.cal_latency_substeps = overlay.latency_ms / (env.cfg.physics_dt * 1e3)
    env.gyro_bias = np.array(overlay.gyro_bias)
    env.accel_bias = np.array(overlay.accel_bias)


def apply_calibration(env, ids: np.ndarray) -> None:
    """Write the calibrated armature, joint friction and PD/limit tables into the
    simulations and commit them: at startup, `ids` every simulation."""
    field, dofs = env.engine.model_field, env.joint_dof_ids
    for name, values in (
        ("dof_armature", env.cal_armature),
        ("dof_frictionloss", env.joint_frictionloss),
        ("dof_damping", env.joint_damping),
    ):
        field(name)[:, dofs] = values
    env.write_actuators(ids)
    env.engine.commit_model(ids)
