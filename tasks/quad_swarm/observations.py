"""Observation of one swarm drone: itself, its k nearest drones and its nearest columns.

The layout is fixed whatever the swarm size: neighbour and column tokens are padded
with absent tokens (flag 0), and the policy pools them with attention, so one policy
runs any number of drones. Arrays lead with (num_sims, num_drones).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.quad_swarm.neighbours import other_drones
from simreal.tasks.quadrotor.observations import NOISE
from simreal.tasks.rotations import quat_to_matrix
from simreal.tasks.terms import ObservationTerm, layout

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


@dataclass
class SwarmReading:
    """What the observation is computed from, arrays leading with (num_sims, num_drones):
    positions, quaternions, velocities (world), body rates, goals, previous actions and
    the neighbour and column tokens (`neighbour_tokens`, `obstacle_tokens`)."""

    pos: np.ndarray
    quat: np.ndarray
    lin_vel: np.ndarray
    ang_vel: np.ndarray
    goal: np.ndarray
    last_action: np.ndarray
    neighbours: np.ndarray
    obstacles: np.ndarray


def _rows(values: np.ndarray) -> np.ndarray:
    """(S, N, ...) per drone -> (S * N, k): one row per drone."""
    return values.reshape(values.shape[0] * values.shape[1], -1)


def goal_pos_error(r: SwarmReading) -> np.ndarray:
    return _rows(r.goal - r.pos)


def base_rot(r: SwarmReading) -> np.ndarray:
    return quat_to_matrix(r.quat.reshape(-1, 4)).reshape(-1, 9)


def policy_terms(
    k: int, m: int, action_size: int, path: bool = False
) -> tuple[ObservationTerm, ...]:
    """The drone itself, then its k nearest drones and m nearest columns as padded token
    sets; the environment keeps the presence flags inside the tokens free of noise."""
    return (
        ObservationTerm("goal_pos_error", 3, goal_pos_error, NOISE),
        ObservationTerm("base_pos", 3, lambda r: _rows(r.pos), NOISE),
        ObservationTerm("base_lin_vel", 3, lambda r: _rows(r.lin_vel), NOISE),
        ObservationTerm("base_rot", 9, base_rot, NOISE),
        ObservationTerm("base_ang_vel", 3, lambda r: _rows(r.ang_vel), NOISE),
        ObservationTerm("last_action", action_size, lambda r: _rows(r.last_action), NOISE),
        ObservationTerm("neighbours", k * NEIGHBOUR_TOKEN, lambda r: _rows(r.neighbours), NOISE),
        ObservationTerm(
            "obstacles", m * obstacle_token_size(path), lambda r: _rows(r.obstacles), NOISE
        ),
    )


def observation_layout(
    k: int, m: int, action_size: int, path: bool = False
) -> tuple[tuple[str, int], ...]:
    return layout(policy_terms(k, m, action_size, path))


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
