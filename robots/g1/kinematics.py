"""Forward kinematics of the G1 from its own tables (no simulator needed).

Used to place the pelvis so the soles rest on the floor in a given pose.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simreal.robots.g1.geometry import FEET, SOLE
from simreal.robots.g1.joints import JOINT_NAMES, ROOT_LINK, JointSpec, Vec3, children_of


def rpy_matrix(rpy: Vec3) -> np.ndarray:
    """Rotation of roll, pitch, yaw about fixed x, y, z (URDF's convention): Rz Ry Rx."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def rpy_quat(rpy: Vec3) -> tuple[float, float, float, float]:
    """The same rotation as a unit quaternion (w, x, y, z), MuJoCo's order."""
    r, p, y = (0.5 * a for a in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return (
        float(cr * cp * cy + sr * sp * sy),
        float(sr * cp * cy - cr * sp * sy),
        float(cr * sp * cy + sr * cp * sy),
        float(cr * cp * sy - sr * sp * cy),
    )


def cross_matrix(axis: Vec3) -> np.ndarray:
    """The 3x3 matrix K with K v = axis x v (Rodrigues' formula uses K and K^2)."""
    k = np.asarray(axis, dtype=float)
    return np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])


def _axis_angle(axis: Vec3, angle: float) -> np.ndarray:
    K = cross_matrix(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def link_poses(joint_pos: Sequence[float]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Pose (rotation 3x3, position 3) of every link and frame, pelvis at the origin.

    joint_pos: (29,) joint angles in JOINT_NAMES order.
    """
    angles = dict(zip(JOINT_NAMES, joint_pos, strict=True))
    poses = {ROOT_LINK: (np.eye(3), np.zeros(3))}
    stack = [ROOT_LINK]
    while stack:
        parent = stack.pop()
        rot, pos = poses[parent]
        for joint in children_of(parent):
            child_rot = rot @ rpy_matrix(joint.rpy)
            if isinstance(joint, JointSpec):
                child_rot = child_rot @ _axis_angle(joint.axis, angles[joint.name])
            poses[joint.child] = (child_rot, pos + rot @ np.asarray(joint.pos))
            stack.append(joint.child)
    return poses


def sole_corners(joint_pos: Sequence[float]) -> np.ndarray:
    """Bottom corners of both soles, (2, 4, 3), in the pelvis-at-origin frame."""
    poses = link_poses(joint_pos)
    hx, hy, hz = SOLE.half_size
    local = np.array([[sx * hx, sy * hy, -hz] for sx in (-1, 1) for sy in (-1, 1)])
    local += np.asarray(SOLE.center)
    return np.stack([local @ poses[foot][0].T + poses[foot][1] for foot in FEET])


def standing_height(joint_pos: Sequence[float]) -> float:
    """Pelvis height (m) that puts the lowest sole corner on the floor in this pose."""
    return float(-sole_corners(joint_pos)[..., 2].min())
