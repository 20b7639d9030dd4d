r"""FAT2, the force-adaptive torso tilt: the lean that keeps the centre of pressure (CoP)
where it is in the unforced stance while external forces act, and how far the torso is
from it.

Model. The robot is one rigid body of mass m standing on flat ground, quasi-static
(accelerations neglected), and it leans as a whole about the horizontal axis through
the reference point O on the ground. Per horizontal direction u (the robot's heading x
for pitch, its left y for roll) the problem is planar, with coordinates (u, z):

    O      the ground point below the centre of mass (CoM) in the nominal standing pose;
           in the unforced stance the CoP lies there, inside the support polygon (for
           the G1's default pose 3 mm behind the centre of the soles).
    c      = (u_c, z_c): the CoM in the upright reference pose, u_c = 0 by the choice of O.
    p_k    = (u_k, z_k): where external force k acts (torso CoM, left and right hand),
           in the upright reference pose.
    F_k    = (F_ku, F_kz): external force k (world frame, resolved along u and up).
    theta  lean angle: a rotation by theta about O moves points above O towards +u.
    g      gravity, 9.81 m/s^2.

A point (u, z) of the upright pose sits, after the lean, at
u' = u cos(theta) + z sin(theta),  z' = -u sin(theta) + z cos(theta).
The ground reaction acts at the CoP; for the CoP to stay at O its moment about O is
zero, so the moments of gravity and of the external forces about O must cancel
(moment of F at (u', z'): u' F_z - z' F_u):

    -m g u_c' + sum_k (u_k' F_kz - z_k' F_ku) = 0.

Substituting the rotated coordinates and collecting cos and sin terms:

    A cos(theta) + B sin(theta) = 0,
    A = sum_k (u_k F_kz - z_k F_ku) - m g u_c                (moment about O, upright)
    B = sum_k (z_k F_kz + u_k F_ku) - m g z_c

so the target lean is

    theta* = atan2(A, -B)  =  atan( A / (m g z_c - sum_k (z_k F_kz + u_k F_ku)) ).

With no force A = -m g u_c = 0 and theta* = 0. A single horizontal force F at height h
on the body axis (u_k = 0, F_z = 0) gives tan(theta*) = -F h / (m g z_c): a push towards
-u (F < 0) asks for a forward lean of atan(|F| h / (m g z_c)), into the push. A load
pulling a forward-held hand down (u_k > 0, F_kz < 0) makes A < 0: lean back. theta* is
valid while m g z_c > sum_k (z_k F_kz + u_k F_ku) (the body is not lifted or levered
off the ground); atan2 keeps it defined beyond, and the target is clipped to a range
the waist and ankles can reach.

What is tracked. The torso's lean from vertical, along the heading x and y axes
(`torso_lean`), follows theta* (pitch, along x) and the matching roll lean (along y).
The torso carries most of the upper-body mass, so its tilt is the observable proxy for
the whole-body lean of the model; the policy still chooses how to split the lean
between ankles, hips and waist. The reference geometry (c, p_k) is the nominal standing
pose and m the nominal mass: the target depends only on the external forces, which the
reward (not the policy) may read.
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
