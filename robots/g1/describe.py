"""A text table of the G1's joints in hardware order, for `simreal robot g1`."""

from __future__ import annotations

from simreal.robots.g1.actuators import (
    ACTION_SCALE_TORQUE_FRACTION,
    ACTUATORS,
    DAMPING_RATIO,
    NATURAL_FREQ_HZ,
)
from simreal.robots.g1.joints import DEFAULT_JOINT_POS, JOINT_NAMES, JOINTS
from simreal.robots.g1.kinematics import standing_height
from simreal.robots.g1.links import total_mass


def describe() -> str:
    """Joints in Unitree SDK order with limits (rad, N m, rad/s), PD gains and default pose."""
    header = (
        f"Unitree G1, 29 DoF, {total_mass():.2f} kg; pelvis "
        f"{standing_height(DEFAULT_JOINT_POS):.3f} m above the floor in the default pose\n"
        f"kp = armature x (2 pi {NATURAL_FREQ_HZ:g} Hz)^2, kd for damping ratio "
        f"{DAMPING_RATIO:g}; action scale = {ACTION_SCALE_TORQUE_FRACTION:g} x torque / kp"
    )
    columns = (
        f"{'idx':>3}  {'joint':<27}{'lower':>8}{'upper':>8}{'torque':>8}{'vel':>6}"
        f"{'kp':>7}{'kd':>6}{'armature':>10}{'scale':>7}{'default':>9}"
    )
    rows = []
    for i, (name, default) in enumerate(zip(JOINT_NAMES, DEFAULT_JOINT_POS, strict=True)):
        j, a = JOINTS[name], ACTUATORS[name]
        rows.append(
            f"{i:>3}  {name:<27}{j.lower:>8.4f}{j.upper:>8.4f}{j.torque_limit:>8.0f}"
            f"{j.velocity_limit:>6.0f}{a.kp:>7.1f}{a.kd:>6.1f}{a.armature:>10.5f}"
            f"{a.action_scale:>7.3f}{default:>9.3f}"
        )
    return "\n".join([header, columns, *rows])
