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

The sum is capped at the task's speed limits. With `avoidance="orca"` the drone push
is replaced: the sum without it is the preferred velocity, which `reciprocal_avoidance`
changes as little as it can to leave every nearby drone's velocity obstacle (ORCA,
van den Berg et al. 2011, "Reciprocal n-body collision avoidance"), each drone taking
half of the change a pair needs. Pure functions of arrays shaped (num_sims, num_drones,
...).
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
    return speed_limited(velocity, max_speed_xy, max_speed_z)


def speed_limited(velocity: np.ndarray, max_speed_xy: float, max_speed_z: float) -> np.ndarray:
    """velocity (..., 3) with its horizontal speed scaled down to max_speed_xy and its
    vertical one clipped to +-max_speed_z."""
    velocity = velocity.copy()
    speed = np.linalg.norm(velocity[..., :2], axis=-1, keepdims=True)
    velocity[..., :2] *= np.minimum(1.0, max_speed_xy / np.maximum(speed, 1e-9))
    velocity[..., 2] = np.clip(velocity[..., 2], -max_speed_z, max_speed_z)
    return velocity


def orca_planes(
    rel_pos: np.ndarray,
    rel_vel: np.ndarray,
    vel: np.ndarray,
    radius: float,
    horizon_s: float,
    dt: float,
    share: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Half-spaces of the velocities that avoid each neighbour: rel_pos (..., 3) the
    neighbour seen from the drone, rel_vel (..., 3) the drone's velocity minus the
    neighbour's, vel (..., 3) the drone's own. Returns (point, normal), both (..., 3):
    a velocity v is allowed where (v - point) . normal >= 0.

    The velocity obstacle of a sphere of `radius` (both drones' combined) over
    `horizon_s` is a cone with its apex at the origin, capped by the ball of radius
    radius / horizon_s at rel_pos / horizon_s. u is the smallest change of rel_vel that
    reaches its boundary, through the cap or the side of the cone, whichever is nearer;
    the drone takes `share` of it: half for another drone (the reciprocal part, the other
    takes the rest), all of it for an obstacle that does not move. Already overlapping,
    the pair separates within one control step `dt`."""
    dist2 = np.sum(rel_pos * rel_pos, axis=-1, keepdims=True)
    r2 = radius * radius
    # Cap: w from the ball's centre; the cap is nearer where w points back towards the apex.
    w = rel_vel - rel_pos / horizon_s
    w_len2 = np.sum(w * w, axis=-1, keepdims=True)
    dot = np.sum(w * rel_pos, axis=-1, keepdims=True)
    on_cap = (dot < 0.0) & (dot * dot > r2 * w_len2)
    w_len = np.sqrt(np.maximum(w_len2, 1e-18))
    cap_normal = w / w_len
    cap_u = (radius / horizon_s - w_len) * cap_normal
    # Side of the cone: the ray t * rel_pos whose ball of radius r * t touches rel_vel.
    a = np.maximum(dist2, 1e-18)
    b = np.sum(rel_pos * rel_vel, axis=-1, keepdims=True)
    cross = np.cross(rel_pos, rel_vel)
    c = np.sum(rel_vel * rel_vel, axis=-1, keepdims=True) - np.sum(
        cross * cross, axis=-1, keepdims=True
    ) / np.maximum(dist2 - r2, 1e-9)
    t = (b + np.sqrt(np.maximum(b * b - a * c, 0.0))) / a
    side_w = rel_vel - t * rel_pos
    side_len = np.sqrt(np.maximum(np.sum(side_w * side_w, axis=-1, keepdims=True), 1e-18))
    # Closing in exactly along the line between them (every side is as near): both turn
    # to their own left (z x rel_pos), which for the pair are opposite ways.
    left = np.stack([-rel_pos[..., 1], rel_pos[..., 0], np.zeros_like(rel_pos[..., 0])], -1)
    left /= np.maximum(np.linalg.norm(left, axis=-1, keepdims=True), 1e-9)
    side_normal = np.where(side_len > 1e-6, side_w / side_len, left)
    side_u = (radius * t - side_len) * side_normal
    # Overlapping: leave within one control step.
    hit_w = rel_vel - rel_pos / dt
    hit_len = np.sqrt(np.maximum(np.sum(hit_w * hit_w, axis=-1, keepdims=True), 1e-18))
    hit_normal = hit_w / hit_len
    hit_u = (radius / dt - hit_len) * hit_normal
    overlap = dist2 <= r2
    normal = np.where(overlap, hit_normal, np.where(on_cap, cap_normal, side_normal))
    u = np.where(overlap, hit_u, np.where(on_cap, cap_u, side_u))
    return vel + share * u, normal


def reciprocal_avoidance(
    cfg: ExpertConfig,
    preferred: np.ndarray,
    pos: np.ndarray,
    vel: np.ndarray,
    to_other: np.ndarray,
    dist: np.ndarray,
    dt: float,
    columns: tuple[np.ndarray, np.ndarray, float] | None = None,
) -> np.ndarray:
    """(S, N, 3) a velocity near `preferred` (S, N, 3) that keeps out of the ORCA
    half-spaces (`orca_planes`) of each drone's `orca_neighbours` nearest active drones
    within reach of the horizon (to_other and dist from `active_neighbours` of pos
    (S, N, 3); vel (S, N, 3) the drones' current velocities) and, given `columns` = (columns_xy (S, C, 2),
    present (S, C), clearance: column radius + drone radius), of its
    `orca_neighbours` nearest columns, as static obstacles over `orca_column_horizon_s`
    plus `column_margin`, horizontally.

    ORCA solves a small linear program per drone; here `orca_passes` rounds of projecting
    onto each violated half-space in turn, the columns' last (they do not give way), which
    lands on a velocity inside all of them when they leave room for one, near the
    preferred one (not always the nearest)."""
    points, normals, relevant = [], [], []
    k = min(cfg.orca_neighbours, dist.shape[-1] - 1)
    if k >= 1:
        reach = cfg.orca_horizon_s * 2.0 * cfg.max_speed + cfg.orca_radius_m
        nearest, gap, rel_pos = _nearest(dist, to_other, k)
        sims = np.arange(vel.shape[0])[:, None, None]
        rel_vel = vel[:, :, None, :] - vel[sims, nearest]
        relevant.append(np.isfinite(gap) & (gap < reach))
        point, normal = orca_planes(
            np.where(relevant[0][..., None], rel_pos, 1.0),
            rel_vel,
            np.broadcast_to(vel[:, :, None, :], rel_vel.shape),
            cfg.orca_radius_m,
            cfg.orca_horizon_s,
            dt,
        )
        points.append(point)
        normals.append(normal)
    if columns is not None:
        columns_xy, present, clearance = columns
        c_point, c_normal, c_relevant = _column_planes(
            cfg, pos, vel, columns_xy, present, clearance, dt
        )
        points.append(c_point)
        normals.append(c_normal)
        relevant.append(c_relevant)
    if not points:
        return preferred
    point = np.concatenate(points, axis=2)
    normal = np.concatenate(normals, axis=2)
    relevant = np.concatenate(relevant, axis=2)
    velocity = preferred.copy()
    for _ in range(cfg.orca_passes):
        for j in range(point.shape[2]):
            short = np.sum((velocity - point[:, :, j]) * normal[:, :, j], axis=-1, keepdims=True)
            fix = np.where(relevant[:, :, j, None] & (short < 0.0), -short, 0.0)
            velocity += fix * normal[:, :, j]
    return velocity


def _nearest(
    dist: np.ndarray, rel: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of dist (S, N, M) and rel (S, N, M, D) the k nearest per drone, unordered:
    their indices (S, N, k), distances (S, N, k) and offsets (S, N, k, D)."""
    nearest = np.argpartition(dist, k - 1, axis=-1)[..., :k]
    return (
        nearest,
        np.take_along_axis(dist, nearest, axis=-1),
        np.take_along_axis(rel, nearest[..., None], axis=2),
    )


def _column_planes(
    cfg: ExpertConfig,
    pos: np.ndarray,
    vel: np.ndarray,
    columns_xy: np.ndarray,
    present: np.ndarray,
    clearance: float,
    dt: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ORCA half-spaces (point, normal (S, N, K, 3); relevant (S, N, K)) of each drone's
    K = orca_neighbours nearest present columns, in the floor plane: a column is a circle
    of `clearance` plus column_margin that does not move, avoided over
    orca_column_horizon_s."""
    rel = columns_xy[:, None, :, :] - pos[:, :, None, :2]
    dist = np.where(present[:, None, :], np.linalg.norm(rel, axis=-1), np.inf)
    k = min(cfg.orca_neighbours, dist.shape[-1])
    _, gap, rel_xy = _nearest(dist, rel, k)
    rel_pos = np.concatenate([rel_xy, np.zeros_like(rel_xy[..., :1])], axis=-1)
    flat_vel = vel.copy()
    flat_vel[..., 2] = 0.0
    flat_vel = np.broadcast_to(flat_vel[:, :, None, :], rel_pos.shape)
    radius = clearance + cfg.column_margin
    reach = radius + cfg.orca_column_horizon_s * 2.0 * cfg.max_speed
    relevant = np.isfinite(gap) & (gap < reach)
    point, normal = orca_planes(
        np.where(relevant[..., None], rel_pos, 1.0),
        flat_vel,
        flat_vel,
        radius,
        cfg.orca_column_horizon_s,
        dt,
        share=1.0,
    )
    return point, normal, relevant
