"""A privileged expert for `quad-swarm`: the teacher the attention policy imitates.

Why a teacher: PPO alone, from the goal-seeking prior, never made a swarm succeed on this
2-core machine (docs/quad-swarm.md: drones stall in front of columns or hold back to
avoid collisions; the swarm papers train with ~1e9 steps). Robot learning's usual answer
is a privileged teacher distilled into a student that sees only its own sensors (the
"learning by cheating" recipe of Chen et al. 2019, the teacher-student legged policies of
Lee et al. 2020). The expert here knows what no drone observes, the room's whole column
layout, through the geodesic distance maps of `geodesic.py`; the student keeps its own
observation (itself, its nearest drones and columns) and is trained against the expert's
actions on the states it visits itself (DAgger: PPO's rollouts with
`train.ppo.imitation_coef`), so it learns to recover from its own mistakes.

The expert's velocity command, per drone (all terms in m/s, world frame):

- path: straight at the goal where that line clears every column, else along the
  negative gradient of the geodesic distance to the goal (the way round the columns), at min(max_speed, goal_gain * planar distance), with
  climb = height_gain * height error;
- columns: a push away from each column axis, growing linearly from 0 at
  `column_margin` of free space to `column_gain` at contact;
- drones: a 3-D push away from each other drone closer than `drone_margin`, growing
  to `drone_gain` (x1.5 when overlapping the collision distance), plus `drone_yield`
  times the same push turned 90 degrees clockwise in the horizontal plane: two drones
  meeting head on both veer to their left and pass each other instead of pushing each
  other to a halt.

The sum is capped at the task's speed limits. Pure functions of arrays shaped
(num_sims, num_drones, ...).
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.quad_swarm.config import ExpertConfig
from simreal.tasks.quad_swarm.geodesic import FloorGrid, path_distance
from simreal.tasks.quad_swarm.neighbours import other_drones


def path_direction(
    maps: np.ndarray, grid: FloorGrid, pos: np.ndarray, goal: np.ndarray, step: float = 0.05
) -> np.ndarray:
    """(..., 2) unit horizontal direction of steepest descent of the geodesic distance
    for drones at pos (..., 3), maps (..., n * n) being their goal maps (central
    differences over `step` m); zero where the map is flat."""
    grad = np.zeros((*pos.shape[:-1], 2))
    for axis in range(2):
        ahead, behind = pos.copy(), pos.copy()
        ahead[..., axis] += step
        behind[..., axis] -= step
        grad[..., axis] = path_distance(maps, grid, ahead, goal) - path_distance(
            maps, grid, behind, goal
        )
    norm = np.linalg.norm(grad, axis=-1, keepdims=True)
    return np.where(norm > 1e-9, -grad / np.maximum(norm, 1e-9), 0.0)


def clear_line(
    pos: np.ndarray, goal: np.ndarray, columns_xy: np.ndarray, present: np.ndarray, keep_out: float
) -> np.ndarray:
    """(S, N) bool: the straight horizontal segment from each drone to its goal passes
    every present column's axis farther than `keep_out` (m). The geodesic maps live on
    an 8-connected grid, whose distances favour the eight grid directions (up to 8 % on
    a diagonal), so in the open the expert flies the straight line instead."""
    start, end = pos[..., :2], goal[..., :2]
    seg = end - start
    length2 = np.maximum(np.sum(seg * seg, axis=-1), 1e-12)
    rel = columns_xy[:, None, :, :] - start[:, :, None, :]
    t = np.clip(np.sum(rel * seg[:, :, None, :], axis=-1) / length2[..., None], 0.0, 1.0)
    closest = start[:, :, None, :] + t[..., None] * seg[:, :, None, :]
    gap = np.linalg.norm(columns_xy[:, None, :, :] - closest, axis=-1)
    return np.all((gap > keep_out) | ~present[:, None, :], axis=-1)


def column_push(
    pos: np.ndarray,
    columns_xy: np.ndarray,
    present: np.ndarray,
    clearance: float,
    margin: float,
    gain: float,
) -> np.ndarray:
    """(S, N, 2) push away from present columns whose free space (`clearance` = column
    radius + drone radius subtracted from the axis distance) is below `margin`."""
    rel = pos[:, :, None, :2] - columns_xy[:, None, :, :]
    dist = np.linalg.norm(rel, axis=-1)
    weight = np.clip((margin - (dist - clearance)) / margin, 0.0, 1.0) * present[:, None, :]
    unit = rel / np.maximum(dist[..., None], 1e-9)
    return gain * np.sum(weight[..., None] * unit, axis=2)


def active_neighbours(pos: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`other_drones(pos)` with the drones that are not active (active (S, N) bool) at
    infinite distance: what the drone push and the crowd speed cap both read, computed
    once per expert step."""
    to_other, dist = other_drones(pos)
    return to_other, np.where(active[:, None, :], dist, np.inf)


def drone_push(
    to_other: np.ndarray,
    dist: np.ndarray,
    collision_distance: float,
    margin: float,
    gain: float,
    yield_gain: float,
) -> np.ndarray:
    """(S, N, 3) push away from the other active drones (`active_neighbours`) within
    `margin` m, with a clockwise horizontal turn of it weighted `yield_gain`."""
    rel = -to_other  # away from each other drone
    weight = np.clip((margin - dist) / (margin - collision_distance), 0.0, 1.5)
    push = np.sum(weight[..., None] * rel / np.maximum(dist[..., None], 1e-9), axis=2)
    turned = np.stack([push[..., 1], -push[..., 0], np.zeros_like(push[..., 0])], axis=-1)
    return gain * push + yield_gain * turned


def cruise_height(
    cfg: ExpertConfig, pos: np.ndarray, goal: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """(S, N) height (m) each drone flies at: with `cruise_levels`, its level in the band
    (by the rank of goal x - start x within its simulation) while farther than
    `cruise_arrive_m` from its goal; else, and near the goal, the goal's height."""
    if not cfg.cruise_levels:
        return goal[..., 2]
    sideways = (goal - start)[..., 0]
    rank = np.argsort(np.argsort(sideways, axis=-1), axis=-1) / max(sideways.shape[-1] - 1, 1)
    low, high = cfg.cruise_band_m
    far = np.linalg.norm((goal - pos)[..., :2], axis=-1) > cfg.cruise_arrive_m
    return np.where(far, low + (high - low) * rank, goal[..., 2])


def crowd_speed_cap(cfg: ExpertConfig, dist: np.ndarray) -> np.ndarray | float:
    """(S, N, 1) path speed cap (m/s): max_speed, or with `crowd_slow_m` less in
    proportion to the gap to the nearest other active drone (dist from
    `active_neighbours`), down to crowd_min_speed_fraction of it."""
    if cfg.crowd_slow_m == 0.0:
        return cfg.max_speed
    nearest = dist.min(axis=-1, keepdims=True)
    fraction = np.clip(nearest / cfg.crowd_slow_m, cfg.crowd_min_speed_fraction, 1.0)
    return cfg.max_speed * fraction


def expert_velocity(
    cfg: ExpertConfig,
    pos: np.ndarray,
    goal: np.ndarray,
    direction: np.ndarray,
    column: np.ndarray,
    drones: np.ndarray,
    max_speed_xy: float,
    max_speed_z: float,
    height: np.ndarray,
    speed_cap: np.ndarray | float,
) -> np.ndarray:
    """(S, N, 3) commanded world velocity (m/s) from the path direction (S, N, 2), the
    column push (S, N, 2) and the drone push (S, N, 3), climbing or descending to
    `height` (S, N) (`cruise_height`) at a path speed up to `speed_cap` ((S, N, 1),
    `crowd_speed_cap`), within the speed limits."""
    planar = np.linalg.norm((goal - pos)[..., :2], axis=-1, keepdims=True)
    velocity = np.zeros(pos.shape)
    velocity[..., :2] = direction * np.minimum(speed_cap, cfg.goal_gain * planar)
    velocity[..., 2] = cfg.height_gain * (height - pos[..., 2])
    velocity[..., :2] += column
    velocity += drones
    speed = np.linalg.norm(velocity[..., :2], axis=-1, keepdims=True)
    velocity[..., :2] *= np.minimum(1.0, max_speed_xy / np.maximum(speed, 1e-9))
    velocity[..., 2] = np.clip(velocity[..., 2], -max_speed_z, max_speed_z)
    return velocity
