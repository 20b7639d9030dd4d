"""Batched forward kinematics of a few G1 links, from the robot's own joint tables.

The engine exposes generalized state only; the task needs the torso's orientation and
the soles' positions, so it walks the chains pelvis -> link itself, vectorized over
simulations (`robots.g1.kinematics.link_poses` is the same walk for one pose, unbatched).
`LinkChains` folds each chain's constants (mount offsets and rotations, the
joint axes' cross-product matrices) once at construction and walks links whose chains
have the same shape (both legs) together, so a control step costs one (N, L, 3, 3)
product per joint instead of several small products per link.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simreal.robots.g1.joints import JOINT_NAMES, JOINTS, LINK_MOUNTS, ROOT_LINK, JointSpec
from simreal.robots.g1.kinematics import cross_matrix, rpy_matrix

_PARENT_JOINT = {j.child: j for j in (*JOINTS.values(), *LINK_MOUNTS)}


def chain(link: str) -> tuple[JointSpec, ...]:
    """Joints and mounts from the pelvis down to `link`, root first."""
    out = []
    while link != ROOT_LINK:
        joint = _PARENT_JOINT[link]
        out.append(joint)
        link = joint.parent
    return tuple(reversed(out))


class LinkChains:
    """World poses of links whose chains from the pelvis have the same shape (the same
    sequence of joints and fixed mounts), walked together.

    A joint's transform is its offset, then R_mount R_axis(q) with Rodrigues' R_axis(q) =
    I + sin q K + (1 - cos q) K^2, so R_mount R_axis(q) = A + sin q B + (1 - cos q) C with
    A = R_mount, B = R_mount K, C = R_mount K^2 fixed per joint: the constants are folded
    here, and a step multiplies one (N, L, 3, 3) stack per joint.
    """

    def __init__(self, links: Sequence[str]) -> None:
        chains = [chain(link) for link in links]
        shape = [[isinstance(j, JointSpec) for j in c] for c in chains]
        if any(s != shape[0] for s in shape):
            raise ValueError(f"LinkChains: the chains of {list(links)} differ in shape")
        self.links = tuple(links)
        self._steps = []
        for depth, actuated in enumerate(shape[0]):
            joints = [c[depth] for c in chains]
            offset = np.array([j.pos for j in joints])  # (L, 3)
            mount = np.array([rpy_matrix(j.rpy) for j in joints])  # (L, 3, 3)
            if actuated:
                K = np.array([cross_matrix(j.axis) for j in joints])
                index = [JOINT_NAMES.index(j.name) for j in joints]
                self._steps.append((offset, mount, mount @ K, mount @ K @ K, index))
            else:
                self._steps.append((offset, mount, None, None, None))

    def poses(
        self, base_pos: np.ndarray, base_rot: np.ndarray, joint_pos: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """World rotations (N, L, 3, 3) and origins (N, L, 3) of the links, in order.

        base_pos (N, 3), base_rot (N, 3, 3) world from pelvis, joint_pos (N, 29) SDK order.
        """
        n, count = base_pos.shape[0], len(self.links)
        rot = np.broadcast_to(base_rot[:, None], (n, count, 3, 3))
        pos = np.broadcast_to(base_pos[:, None], (n, count, 3))
        for offset, A, B, C, index in self._steps:
            pos = pos + np.einsum("nlij,lj->nli", rot, offset)
            if index is None:
                rot = rot @ A
                continue
            q = joint_pos[:, index][..., None, None]  # (N, L, 1, 1)
            rot = rot @ (A + np.sin(q) * B + (1.0 - np.cos(q)) * C)
        return rot, pos
