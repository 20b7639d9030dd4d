"""Batched forward kinematics of a few G1 links, from the robot's own joint tables.

The engine exposes generalized state only; the task needs the torso's orientation and
the soles' positions, so it walks the chains pelvis -> link itself, vectorized over
simulations (a few dozen (N, 3, 3) products per control step).
"""

from __future__ import annotations

import numpy as np

from simreal.robots.g1.joints import JOINT_NAMES, JOINTS, LINK_MOUNTS, ROOT_LINK, JointSpec
from simreal.robots.g1.kinematics import rpy_matrix

_PARENT_JOINT = {j.child: j for j in (*JOINTS.values(), *LINK_MOUNTS)}


def chain(link: str) -> tuple[JointSpec, ...]:
    """Joints and mounts from the pelvis down to `link`, root first."""
    out = []
    while link != ROOT_LINK:
        joint = _PARENT_JOINT[link]
        out.append(joint)
        link = joint.parent
    return tuple(reversed(out))


def _axis_rotation(axis: tuple[float, float, float], angle: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations by `angle` (N,) about the unit `axis`."""
    k = np.asarray(axis, dtype=float)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def link_pose(
    base_pos: np.ndarray, base_rot: np.ndarray, joint_pos: np.ndarray, link: str
) -> tuple[np.ndarray, np.ndarray]:
    """World rotation (N, 3, 3) and origin (N, 3) of `link`.

    base_pos (N, 3), base_rot (N, 3, 3) world from pelvis, joint_pos (N, 29) in SDK order.
    """
    rot, pos = base_rot, base_pos
    for joint in chain(link):
        pos = pos + rot @ np.asarray(joint.pos)
        rot = rot @ rpy_matrix(joint.rpy)
        if isinstance(joint, JointSpec):
            rot = rot @ _axis_rotation(joint.axis, joint_pos[:, JOINT_NAMES.index(joint.name)])
    return rot, pos
