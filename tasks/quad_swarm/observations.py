"""Observation of one swarm drone: itself, its k nearest drones and its nearest columns.

The layout is fixed whatever the swarm size: neighbour and column tokens are padded
with absent tokens (flag 0), and the policy pools them with attention, so one policy
runs any number of drones. Arrays lead with (num_sims, num_drones).
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.quad_swarm.neighbours import other_drones
from simreal.tasks.rotations import quat_to_matrix

SELF_SIZE_WITHOUT_ACTION = 21
"""goal error, position, velocity (3 each), rotation matrix (9), angular velocity (3)."""
NEIGHBOUR_TOKEN = 7
"""Relative position (3), relative velocity (3), present flag (1)."""
OBSTACLE_TOKEN = 4
"""Relative horizontal position of the column axis (2), distance to its surface (1), present (1)."""
PATH_FEATURES = 2
"""With `path` features, a column token also carries the axis's position in the drone's
path frame (x towards the goal): how far ahead (m) and how far to the left (m), before
the presence flag, which stays last."""


def obstacle_token_size(path: bool) -> int:
    return OBSTACLE_TOKEN + (PATH_FEATURES if path else 0)


FAR = 10.0
"""Distance (m) written into absent tokens' distance field."""


def observation_layout(
    k: int, m: int, action_size: int, path: bool = False
) -> tuple[tuple[str, int], ...]:
    return (
        ("goal_pos_error", 3),
        ("base_pos", 3),
        ("base_lin_vel", 3),
        ("base_rot", 9),
        ("base_ang_vel", 3),
        ("last_action", action_size),
        ("neighbours", k * NEIGHBOUR_TOKEN),
        ("obstacles", m * obstacle_token_size(path)),
    )


def observation_structure(k: int, m: int, action_size: int, path: bool = False) -> dict:
    """How the attention encoder splits the flat observation into self and token sets."""
    return {
        "self": SELF_SIZE_WITHOUT_ACTION + action_size,
        "tokens": [
            ["neighbours", k, NEIGHBOUR_TOKEN, NEIGHBOUR_TOKEN - 1],
            ["obstacles", m, obstacle_token_size(path), obstacle_token_size(path) - 1],
        ],
    }


def neighbour_tokens(pos: np.ndarray, vel: np.ndarray, k: int) -> np.ndarray:
    """(S, N, k, 7): the k nearest other drones, nearest first."""
    s, n, _ = pos.shape
    rel, dist = other_drones(pos)  # [s, self, other]
    count = min(k, n - 1)
    order = np.argsort(dist, axis=2)[:, :, :count]
    tokens = np.zeros((s, n, k, NEIGHBOUR_TOKEN))
    if count:
        rel_vel = vel[:, None, :, :] - vel[:, :, None, :]
        tokens[:, :, :count, 0:3] = np.take_along_axis(rel, order[..., None], axis=2)
        tokens[:, :, :count, 3:6] = np.take_along_axis(rel_vel, order[..., None], axis=2)
        tokens[:, :, :count, 6] = 1.0
    return tokens


def obstacle_tokens(
    pos: np.ndarray,
    columns_xy: np.ndarray,
    present: np.ndarray,
    radius: float,
    m: int,
    goal: np.ndarray | None = None,
) -> np.ndarray:
    """(S, N, m, 4 or 6): the m nearest columns (vertical, floor to ceiling), nearest
    first, the presence flag last. Given `goal` (S, N, 3), each token adds the column
    axis in the path frame (ahead, left of the horizontal line to the goal): whether a
    column blocks the way is then one comparison, which the world-frame position alone
    leaves the network to learn from the goal error and the token together."""
    s, n, _ = pos.shape
    rel = columns_xy[:, None, :, :] - pos[:, :, None, :2]  # [s, drone, column, 2]
    surface = np.linalg.norm(rel, axis=-1) - radius
    surface = np.where(present[:, None, :], surface, np.inf)
    count = min(m, columns_xy.shape[1])
    order = np.argsort(surface, axis=2)[:, :, :count]
    near = np.take_along_axis(surface, order, axis=2)
    real = np.isfinite(near)
    tokens = np.zeros((s, n, m, obstacle_token_size(goal is not None)))
    near_rel = np.where(real[..., None], np.take_along_axis(rel, order[..., None], axis=2), 0.0)
    tokens[:, :, :count, 0:2] = near_rel
    tokens[:, :, :count, 2] = np.where(real, near, FAR)
    tokens[:, :, count:, 2] = FAR
    tokens[:, :, :count, -1] = real
    if goal is not None:
        heading = goal[..., :2] - pos[..., :2]
        heading /= np.maximum(np.linalg.norm(heading, axis=-1, keepdims=True), 1e-6)
        hx, hy = heading[..., None, 0], heading[..., None, 1]
        ahead = near_rel[..., 0] * hx + near_rel[..., 1] * hy
        tokens[:, :, :count, 3] = np.where(real, ahead, FAR)  # absent: far ahead
        tokens[:, :, :count, 4] = hx * near_rel[..., 1] - hy * near_rel[..., 0]
        tokens[:, :, count:, 3] = FAR
    return tokens


def policy_observation(
    pos: np.ndarray,
    quat: np.ndarray,
    lin_vel: np.ndarray,
    ang_vel: np.ndarray,
    goal: np.ndarray,
    last_action: np.ndarray,
    neighbours: np.ndarray,
    obstacles: np.ndarray,
) -> np.ndarray:
    """(S * N, D) float32, one row per drone, in observation_layout order."""
    s, n, _ = pos.shape
    rot = quat_to_matrix(quat.reshape(-1, 4)).reshape(s, n, 9)
    return np.concatenate(
        [
            goal - pos,
            pos,
            lin_vel,
            rot,
            ang_vel,
            last_action,
            neighbours.reshape(s, n, -1),
            obstacles.reshape(s, n, -1),
        ],
        axis=2,
        dtype=np.float32,
    ).reshape(s * n, -1)
