"""The G1's domain randomization (`G1Config.randomization`), drawn from the env's one
random generator in a fixed order: the robot's model and motors at every training reset
(`randomize_robot`), the push schedule after the task's loads (`schedule_pushes`) and the
pushes themselves (`push`). The ranges are centred on the calibration overlay's values
where it sets them."""

from __future__ import annotations

import numpy as np


def randomize_robot(env, ids: np.ndarray) -> None:
    """New friction, torso mass and centre of mass, PD gains, torque limits, encoder
    offsets, command latency, joint friction and link masses for simulations `ids`,
    written into their model fields and committed."""
    r, rng, n = env.cfg.randomization, env.rng, ids.size
    env.friction[ids] = rng.uniform(*r.friction, n)
    env.torso_added_mass[ids] = rng.uniform(*r.torso_added_mass_kg, n)
    env.torso_com_offset[ids] = rng.uniform(-1.0, 1.0, (n, 3)) * r.torso_com_offset_m
    env.kp_scale[ids] = rng.uniform(*r.kp_scale, (n, 29)) * env.cal_kp_scale
    env.kd_scale[ids] = rng.uniform(*r.kd_scale, (n, 29)) * env.cal_kd_scale
    env.motor_strength[ids] = rng.uniform(*r.motor_strength, (n, 29)) * env.cal_motor_strength
    env.joint_offset[ids] = (
        env.cal_joint_offset + rng.uniform(-1.0, 1.0, (n, 29)) * r.joint_offset_rad
    )
    low, high = latency_range(env)
    env.latency_substeps[ids] = rng.uniform(low, high, n)
    env.joint_frictionloss[ids] = rng.uniform(*env.coulomb_range, (n, 29))
    env.joint_damping[ids] = rng.uniform(*env.viscous_range, (n, 29))
    nom, field, dofs = env.nominal, env.engine.model_field, env.joint_dof_ids
    field("dof_frictionloss")[np.ix_(ids, dofs)] = env.joint_frictionloss[ids]
    field("dof_damping")[np.ix_(ids, dofs)] = env.joint_damping[ids]
    scale = rng.uniform(*r.link_mass_scale, (n, nom["body_mass"].size))
    scale[:, ~env.robot_body] = 1.0  # the world and any scene body
    mass = nom["body_mass"] * scale
    mass[:, env.torso_id] += env.torso_added_mass[ids]
    field("body_mass")[ids] = mass
    inertia_scale = mass / np.maximum(nom["body_mass"], 1e-9)
    field("body_inertia")[ids] = nom["body_inertia"] * inertia_scale[:, :, None]
    ipos = np.broadcast_to(nom["body_ipos"], (n, *nom["body_ipos"].shape)).copy()
    ipos[:, env.torso_id] += env.torso_com_offset[ids]
    field("body_ipos")[ids] = ipos
    friction = np.broadcast_to(nom["geom_friction"], (n, *nom["geom_friction"].shape)).copy()
    friction[:, env.friction_geom_ids, 0] = env.friction[ids, None]
    field("geom_friction")[ids] = friction
    env.write_actuators(ids)
    env.engine.commit_model(ids)


def schedule_pushes(env, ids: np.ndarray) -> None:
    """The first push of new episodes in simulations `ids`: a draw from push_interval_s."""
    env.next_push_s[ids] = env.rng.uniform(*env.cfg.randomization.push_interval_s, ids.size)


def push(env, t: np.ndarray) -> None:
    """Impulsive pushes of the simulations due at episode times t (N,): a random
    horizontal jump of the base velocity, and the next push a push_interval_s later."""
    due = np.flatnonzero(t >= env.next_push_s)
    if due.size:
        r = env.cfg.randomization
        env.engine.qvel[due, 0:2] += env.rng.uniform(-r.push_vel_m_s, r.push_vel_m_s, (due.size, 2))
        env.next_push_s[due] = t[due] + env.rng.uniform(*r.push_interval_s, due.size)


def latency_range(env) -> tuple[float, float]:
    """The latency range in physics steps; with a calibration it keeps its width and is
    centred on the calibrated latency (clipped at 0)."""
    low, high = env.cfg.randomization.latency_substeps
    if env.cfg.calibration is None:
        return float(low), float(high)
    centre, half = env.cal_latency_substeps, (high - low) / 2
    return max(0.0, centre - half), max(0.0, centre + half)


def friction_range(span: tuple[float, float], calibrated: np.ndarray) -> np.ndarray:
    """(2, 29) low and high joint friction: the configured `span`, and for the joints a
    calibration overlay sets (non-NaN `calibrated`), the same width centred on the
    calibrated value (clipped at 0)."""
    low, high = span
    half = (high - low) / 2
    centred = np.stack([np.maximum(calibrated - half, 0.0), calibrated + half])
    return np.where(np.isnan(calibrated), np.array([[low], [high]]), centred)
