"""A 16-joint, four-finger Allegro-like right hand on a 6-DoF position-servoed wrist."""

from simreal.robots.allegro.describe import build_urdf, describe
from simreal.robots.allegro.hand import (
    FINGER_JOINT_NAMES,
    FINGERS,
    FINGERTIP_SITES,
    JOINT_NAMES,
    WRIST_HEIGHT,
    WRIST_JOINT_NAMES,
    hand_mass,
    joint_limits,
    servo,
)
from simreal.robots.allegro.mjcf import (
    actuator_xml,
    build_mjcf,
    default_xml,
    hand_xml,
    model_xml,
    sensor_xml,
)

__all__ = [
    "FINGERS",
    "FINGERTIP_SITES",
    "FINGER_JOINT_NAMES",
    "JOINT_NAMES",
    "WRIST_HEIGHT",
    "WRIST_JOINT_NAMES",
    "actuator_xml",
    "build_mjcf",
    "build_urdf",
    "default_xml",
    "describe",
    "hand_mass",
    "hand_xml",
    "joint_limits",
    "model_xml",
    "sensor_xml",
    "servo",
]
