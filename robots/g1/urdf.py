"""Build the G1's URDF from the same tables as its MuJoCo model, for ROS 2 tools.

Same links, joints, inertials and primitives as the MJCF; URDF has no capsule, so each
capsule is written as a cylinder between two spheres (the same solid). Links and joints
are written depth first with actuated children in hardware order, so tools that number
joints in file order (PyBullet) number the 29 revolute joints as JOINT_NAMES does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from simreal.robots.g1.actuators import ACTUATORS
from simreal.robots.g1.geometry import SHAPES, Box, Capsule, Shape
from simreal.robots.g1.joints import (
    FRAMES,
    JOINTS,
    ROOT_LINK,
    FixedMount,
    JointSpec,
    children_of,
)
from simreal.robots.g1.links import LINK_INERTIALS

_FRAME_LINKS = {frame.child for frame in FRAMES}


def _v(values: Iterable[float]) -> str:
    return " ".join(f"{x:.9g}" for x in values)


def _solids(shape: Shape) -> list[str]:
    """URDF <origin/><geometry/> bodies for one primitive."""
    if isinstance(shape, Box):
        size = _v(2.0 * h for h in shape.half_size)
        return [f'<origin xyz="{_v(shape.center)}"/><geometry><box size="{size}"/></geometry>']
    if isinstance(shape, Capsule):
        start, end, r = shape.start, shape.end, shape.radius
        d = [b - a for a, b in zip(start, end, strict=True)]
        length = math.sqrt(sum(x * x for x in d))
        mid = [(a + b) / 2.0 for a, b in zip(start, end, strict=True)]
        rpy = (0.0, math.acos(d[2] / length), math.atan2(d[1], d[0]))
        return [
            f'<origin xyz="{_v(mid)}" rpy="{_v(rpy)}"/>'
            f'<geometry><cylinder radius="{r:.9g}" length="{length:.9g}"/></geometry>',
            *(
                f'<origin xyz="{_v(end_point)}"/><geometry><sphere radius="{r:.9g}"/></geometry>'
                for end_point in (start, end)
            ),
        ]
    return [
        f'<origin xyz="{_v(shape.center)}"/>'
        f'<geometry><sphere radius="{shape.radius:.9g}"/></geometry>'
    ]


def _armature_inertia(name: str) -> tuple[float, ...]:
    """The link's inertia (ixx, iyy, izz, ixy, ixz, iyz) with the armature of the joint that
    turns it added about that joint's axis (a coordinate axis of its frame): the rotor
    inertia that simulators without armature (PyBullet) then see on that joint's
    mass-matrix diagonal. An inertia about one axis alone is no rigid body's (PyBullet
    refuses it: each principal moment must be at most the sum of the other two), so the
    plane perpendicular to the axis gets the least addition that makes it one: what the
    link's own perpendicular moments lack. That addition is the approximation's error,
    felt by joints turning about those axes."""
    ixx, iyy, izz, ixy, ixz, iyz = LINK_INERTIALS[name].inertia
    joint = next((j for j in JOINTS.values() if j.child == name), None)
    if joint is None:
        return ixx, iyy, izz, ixy, ixz, iyz
    armature, axis = ACTUATORS[joint.name].armature, np.array(joint.axis)
    tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    tensor += armature * np.outer(axis, axis)
    perpendicular = np.eye(3) - np.outer(axis, axis)
    low, high = 0.0, armature
    if _rigid(tensor):
        high = 0.0
    for _ in range(60):  # bisection for the least addition that makes a rigid body
        mid = (low + high) / 2.0
        low, high = (low, mid) if _rigid(tensor + mid * perpendicular) else (mid, high)
    t = tensor + high * perpendicular
    return (t[0, 0], t[1, 1], t[2, 2], t[0, 1], t[0, 2], t[1, 2])


def _rigid(tensor: np.ndarray) -> bool:
    """Whether an inertia tensor is a rigid body's, with a 0.1 % margin (PyBullet checks
    each principal moment against the sum of the other two)."""
    moments = np.linalg.eigvalsh(tensor)
    return bool(moments.max() <= 0.999 * (moments.sum() - moments.max()))


def _link(name: str, armature_in_inertia: bool = False) -> list[str]:
    if name in _FRAME_LINKS:
        return [
            f'  <link name="{name}"><inertial><mass value="0"/>'
            '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>'
        ]
    inertial = LINK_INERTIALS[name]
    ixx, iyy, izz, ixy, ixz, iyz = (
        _armature_inertia(name) if armature_in_inertia else inertial.inertia
    )
    lines = [
        f'  <link name="{name}">',
        "    <inertial>",
        f'      <origin xyz="{_v(inertial.com)}"/>',
        f'      <mass value="{inertial.mass:.9g}"/>',
        f'      <inertia ixx="{ixx:.9g}" ixy="{ixy:.9g}" ixz="{ixz:.9g}" '
        f'iyy="{iyy:.9g}" iyz="{iyz:.9g}" izz="{izz:.9g}"/>',
        "    </inertial>",
    ]
    for shape in SHAPES.get(name, ()):
        for solid in _solids(shape):
            lines.append(f'    <visual>{solid}<material name="g1_grey"/></visual>')
            lines.append(f"    <collision>{solid}</collision>")
    lines.append("  </link>")
    return lines


def _joint(joint: JointSpec | FixedMount) -> list[str]:
    origin = f'<origin xyz="{_v(joint.pos)}" rpy="{_v(joint.rpy)}"/>'
    links = f'<parent link="{joint.parent}"/><child link="{joint.child}"/>'
    if isinstance(joint, FixedMount):
        return [f'  <joint name="{joint.name}" type="fixed">{origin}{links}</joint>']
    return [
        f'  <joint name="{joint.name}" type="revolute">',
        f"    {origin}{links}",
        f'    <axis xyz="{_v(joint.axis)}"/>',
        f'    <limit lower="{joint.lower:.9g}" upper="{joint.upper:.9g}" '
        f'effort="{joint.torque_limit:.9g}" velocity="{joint.velocity_limit:.9g}"/>',
        "  </joint>",
    ]


def _subtree(link: str, armature_in_inertia: bool) -> list[str]:
    lines = _link(link, armature_in_inertia)
    for joint in children_of(link):
        lines += _joint(joint) + _subtree(joint.child, armature_in_inertia)
    return lines


def build_urdf(armature_in_inertia: bool = False) -> str:
    """Return the G1 as a URDF string (pelvis as root, no meshes, SI units).

    URDF has no rotor armature; `armature_in_inertia` folds each joint's armature into
    its child link's inertia about the joint axis (`_armature_inertia`), for PyBullet
    (`simreal.sim.pybullet_articulated`). Off by default: the ROS 2 description is the
    robot's links alone."""
    return "\n".join(
        [
            '<?xml version="1.0"?>',
            '<robot name="unitree_g1">',
            '  <material name="g1_grey"><color rgba="0.7 0.7 0.72 1"/></material>',
            *_subtree(ROOT_LINK, armature_in_inertia),
            "</robot>",
            "",
        ]
    )
