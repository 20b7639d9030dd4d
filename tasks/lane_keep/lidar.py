"""A planar LiDAR: ray casts against road edges and obstacle footprints, batched.

mjbatch offers batched `mj_ray`, but each simulation here drives its own road: road
edges and obstacles would have to be MuJoCo geoms placed per simulation (hundreds of
edge segments each, every one tested by every ray). Casting in NumPy against only the
edge segments near the car (a window of the road) and the obstacle boxes is cheaper,
and exact for the piecewise-linear edges. The rays lie in the car's frame, so the
segments are moved into it once per step and the 180 beam directions stay constants.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.lane_keep.roads import RoadBank

EDGE_STEP_M = 1.0
"""Edge segments are 1 m long (every other stored centreline point)."""


def beam_directions(beams: int, fov_deg: float) -> np.ndarray:
    """(beams, 2) unit directions in the car frame, from right to left."""
    a = np.deg2rad(np.linspace(-fov_deg / 2, fov_deg / 2, beams))
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def edge_segments(
    bank: RoadBank, road: np.ndarray, idx: np.ndarray, behind_m: float, ahead_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end points (N, S, 2) of both road edges from behind_m to ahead_m."""
    stride = max(round(EDGE_STEP_M / bank.ds), 1)
    offsets = np.arange(-round(behind_m / bank.ds), round(ahead_m / bank.ds) + 1, stride)
    i = np.clip(idx[:, None] + offsets[None], 0, bank.xy.shape[1] - 1)
    r = road[:, None]
    c, th, w = bank.xy[r, i], bank.heading[r, i], bank.lane_width[r, i]
    nrm = np.stack([-np.sin(th), np.cos(th)], axis=-1)
    left = c + w[..., None] * nrm
    right = c - w[..., None] * nrm
    start = np.concatenate([left[:, :-1], right[:, :-1]], axis=1)
    end = np.concatenate([left[:, 1:], right[:, 1:]], axis=1)
    return start, end


def obstacle_segments(bank: RoadBank, road: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end points (N, 4K, 2) of the obstacle footprints' sides."""
    corners = bank.obstacle_corners[road]  # (N, K, 4, 2)
    n = corners.shape[0]
    return corners.reshape(n, -1, 2), np.roll(corners, -1, axis=2).reshape(n, -1, 2)


def cast(
    origin: np.ndarray,
    yaw: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    directions: np.ndarray,
    max_range: float,
) -> np.ndarray:
    """(N, beams) distance to the first segment each beam hits, max_range if none.

    origin (N, 2), yaw (N,), start/end (N, S, 2) world frame; directions (beams, 2) in
    the sensor frame. Solves origin + t d = start + u (end - start) for t > 0, u in [0, 1].
    """
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    rel = (start - origin[:, None]).astype(np.float32)
    ax = c * rel[..., 0] + s * rel[..., 1]
    ay = -s * rel[..., 0] + c * rel[..., 1]
    e = (end - start).astype(np.float32)
    ex = c * e[..., 0] + s * e[..., 1]
    ey = -s * e[..., 0] + c * e[..., 1]
    dx = directions[:, 0].astype(np.float32)[None, :, None]
    dy = directions[:, 1].astype(np.float32)[None, :, None]
    ax, ay, ex, ey = (v[:, None, :] for v in (ax, ay, ex, ey))
    denom = dx * ey - dy * ex
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (ax * ey - ay * ex) / denom
        u = (ax * dy - ay * dx) / denom
    hit = (t > 0) & (u >= 0) & (u <= 1)
    return np.minimum(np.where(hit, t, np.inf).min(axis=2), max_range)


def scan(
    bank: RoadBank,
    road: np.ndarray,
    idx: np.ndarray,
    origin: np.ndarray,
    yaw: np.ndarray,
    directions: np.ndarray,
    max_range: float,
) -> np.ndarray:
    """(N, beams) ranges (m) to road edges and obstacles, noiseless."""
    es, ee = edge_segments(bank, road, idx, behind_m=4.0, ahead_m=max_range + 2.0)
    os_, oe = obstacle_segments(bank, road)
    start = np.concatenate([es, os_], axis=1)
    end = np.concatenate([ee, oe], axis=1)
    return cast(origin, yaw, start, end, directions, max_range)
