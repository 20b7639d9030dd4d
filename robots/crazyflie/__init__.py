"""Bitcraze Crazyflie 2.x in the X configuration (CF2X), as gym-pybullet-drones models it."""

from simreal.robots.crazyflie.mjcf import build_mjcf, drone_body_xml, motor_actuators_xml
from simreal.robots.crazyflie.params import MOTOR_NAMES, CrazyflieParams
from simreal.robots.crazyflie.physics import (
    PhysicsTerms,
    downwash_force,
    drag_force,
    ground_effect_thrust,
    motor_thrust,
    motor_yaw_torque,
)
from simreal.robots.crazyflie.urdf import build_urdf, describe

__all__ = [
    "MOTOR_NAMES",
    "CrazyflieParams",
    "PhysicsTerms",
    "build_mjcf",
    "build_urdf",
    "describe",
    "downwash_force",
    "drag_force",
    "drone_body_xml",
    "ground_effect_thrust",
    "motor_actuators_xml",
    "motor_thrust",
    "motor_yaw_torque",
]
