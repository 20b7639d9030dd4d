"""Unitree G1 humanoid, 29 DoF: the project's own description, written from public facts.

Tables (`joints`, `links`, `geometry`, `actuators`) hold the facts; `build_mjcf` and
`build_urdf` generate both model formats from them, and `describe` prints them.
"""

from simreal.robots.g1.actuators import ACTUATORS, ActuatorSpec
from simreal.robots.g1.describe import describe
from simreal.robots.g1.geometry import FEET, SOLE
from simreal.robots.g1.joints import DEFAULT_JOINT_POS, JOINT_NAMES, JOINTS, JointSpec
from simreal.robots.g1.kinematics import link_poses, standing_height
from simreal.robots.g1.links import LINK_INERTIALS, total_mass
from simreal.robots.g1.mjcf import HAND_SITES, IMU_SITES, build_mjcf
from simreal.robots.g1.urdf import build_urdf

__all__ = [
    "ACTUATORS",
    "DEFAULT_JOINT_POS",
    "FEET",
    "HAND_SITES",
    "IMU_SITES",
    "JOINTS",
    "JOINT_NAMES",
    "LINK_INERTIALS",
    "SOLE",
    "ActuatorSpec",
    "JointSpec",
    "build_mjcf",
    "build_urdf",
    "describe",
    "link_poses",
    "standing_height",
    "total_mass",
]
