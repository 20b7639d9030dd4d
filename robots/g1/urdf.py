"""Build the G1's URDF from the same tables as its MuJoCo model, for ROS 2 tools.

Same links, joints, inertials and primitives as the MJCF; URDF has no capsule, so each
capsule is written as a cylinder between two spheres (the same solid). Links and joints
are written depth first with actuated children in hardware order, so tools that number
joints in file order (PyBullet) number the 29 revolute joints as JOINT_NAMES does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from simreal.robots.g1.geometry import SHAPES, Box, Capsule, Shape
from simreal.robots.g1.joints import FRAMES, ROOT_LINK, FixedMount, JointSpec, children_of
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


def _link(name: str) -> list[str]:
    if name in _FRAME_LINKS:
        return [
            f'  <link name="{name}"><inertial><mass value="0"/>'
            '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>'
        ]
    inertial = LINK_INERTIALS[name]
    ixx, iyy, izz, ixy, ixz, iyz = inertial.inertia
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


def _subtree(link: str) -> list[str]:
    lines = _link(link)
    for joint in children_of(link):
        lines += _joint(joint) + _subtree(joint.child)
    return lines


def build_urdf() -> str:
    """Return the G1 as a URDF string (pelvis as root, no meshes, SI units)."""
    return "\n".join(
        [
            '<?xml version="1.0"?>',
            '<robot name="unitree_g1">',
            '  <material name="g1_grey"><color rgba="0.7 0.7 0.72 1"/></material>',
            *_subtree(ROOT_LINK),
            "</robot>",
            "",
        ]
    )
