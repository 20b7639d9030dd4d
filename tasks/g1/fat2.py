"""FAT2, the force-adaptive torso tilt: the lean that keeps the centre of pressure (CoP)
where it is in the unforced stance while external forces act, and how far the torso is
from it. The robot is one rigid body leaning about the ground point O below its standing
CoM, quasi-static; per horizontal direction the target lean is
theta* = atan2(A, -B) with A = sum_k (u_k F_kz - z_k F_ku) - m g u_c and
B = sum_k (z_k F_kz + u_k F_ku) - m g z_c (the derivation and its symbols: docs/g1.md,
"FAT2: the target lean"). The torso's lean from vertical (`torso_lean`) is what tracks it.
"""

from __future__ import annotations

import numpy as np

GRAVITY = 9.81


def fat2_target_tilt(
    forces: np.ndarray, points: np.ndarray, com: np.ndarray, mass: float, max_tilt: float
) -> np.ndarray:
    """Target lean (num_envs, 2) in rad, towards heading +x and +y, clipped to +-max_tilt.

    forces: (N, K, 3) external forces in the heading frame (x forward, y left, z up), N.
    points: (K, 3) where they act in the upright reference pose, relative to O, m.
    com: (3,) the CoM in the reference pose relative to O (x = y = 0 by construction).
    """
    fz = forces[..., 2]
    lean = np.empty((forces.shape[0], 2))
    for axis in (0, 1):
        fu, u = forces[..., axis], points[:, axis]
        a = np.sum(u * fz - points[:, 2] * fu, axis=1) - mass * GRAVITY * com[axis]
        b = np.sum(points[:, 2] * fz + u * fu, axis=1) - mass * GRAVITY * com[2]
        lean[:, axis] = np.arctan2(a, -b)
    return np.clip(lean, -max_tilt, max_tilt)


def torso_lean(torso_up: np.ndarray) -> np.ndarray:
    """Lean (num_envs, 2) in rad of a body whose up axis is `torso_up` (N, 3) in the heading
    frame: towards +x (forward) and towards +y (left), the angles FAT2 targets."""
    return np.stack(
        [
            np.arctan2(torso_up[:, 0], torso_up[:, 2]),
            np.arctan2(torso_up[:, 1], torso_up[:, 2]),
        ],
        axis=1,
    )
