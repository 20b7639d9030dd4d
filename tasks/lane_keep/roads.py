"""Procedural two-lane roads: curvature profiles integrated into centrelines, lanes,
edges, static obstacles and friction; a bank of them stacked into batched arrays.

A road is drawn from its seed alone, so a seed names a road. Curvature along the arc
length is a sequence of pieces: straights, constant-radius arcs entered and left
through clothoid transitions (curvature ramping linearly with arc length), and S-bends
(an arc straight into one of the opposite sense). The car drives in the right lane;
the lane width may narrow over a stretch. Obstacles (parked cars, cones) stand in the
left lane or on the shoulders, or, when asked, in the car's own lane.

A seed whose road is self-intersecting, or curves tighter than the car can turn,
raises `InvalidRoadError` with the reason; banks skip such seeds and count them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HELD_OUT_SEED0 = 1_000_000
"""Training roads use seeds below this, held-out (evaluation) roads this and above."""
OBSTACLE_KINDS = ("cone", "parked_car")
OBSTACLE_SIZE = {"cone": (0.2, 0.2), "parked_car": (2.2, 0.95)}
"""Half-length and half-width (m) of each obstacle kind's footprint."""
PLACES = ("ego_lane", "left_lane", "right_shoulder", "left_shoulder")


class InvalidRoadError(ValueError):
    """A road seed that gives an unusable road; the message says why."""


@dataclass(frozen=True)
class RoadConfig:
    length_m: float = 360.0
    ds_m: float = 0.5
    """Arc-length spacing of the stored centreline points."""
    lane_width_m: tuple[float, float] = (3.0, 3.7)
    min_radius_m: float = 25.0
    """Tightest arc of a generated road."""
    max_radius_m: float = 200.0
    transition_m: tuple[float, float] = (8.0, 25.0)
    """Clothoid transition lengths."""
    straight_m: tuple[float, float] = (10.0, 50.0)
    arc_m: tuple[float, float] = (10.0, 60.0)
    s_bend_prob: float = 0.3
    narrowing_prob: float = 0.3
    narrowing_m: float = 0.5
    """How much narrower (m) a lane gets over a narrowing stretch."""
    obstacles: tuple[int, int] = (0, 4)
    ego_lane_obstacle_prob: float = 0.0
    """Chance that an obstacle stands in the car's own lane (then keeping the lane centre
    is no longer the goal around it); 0 by default: lateral error then measures lane
    keeping only, and obstacles elsewhere still bound the LiDAR and end episodes on
    collision."""
    friction: tuple[float, float] = (0.6, 1.0)
    max_curvature_ratio: float = 0.5
    """A road is rejected when its curvature exceeds this share of the car's turning limit."""

    def validate(self) -> None:
        lo, hi = self.lane_width_m
        if not 2.0 <= lo <= hi <= 5.0:
            raise ValueError(f"road.lane_width_m: need 2 <= low <= high <= 5, got {lo}, {hi}")
        if not 0 < self.min_radius_m <= self.max_radius_m:
            raise ValueError("road.min_radius_m must be positive and <= road.max_radius_m")
        if self.length_m < 50 or not 0 < self.ds_m <= 2.0:
            raise ValueError("road.length_m must be >= 50 and road.ds_m in (0, 2]")
        if not 0 <= self.obstacles[0] <= self.obstacles[1] <= 8:
            raise ValueError(f"road.obstacles: need 0 <= low <= high <= 8, got {self.obstacles}")
        if not 0 < self.friction[0] <= self.friction[1] <= 1.5:
            raise ValueError(f"road.friction: need 0 < low <= high <= 1.5, got {self.friction}")


@dataclass
class Road:
    """One road, sampled every ds_m along its centreline (M points)."""

    seed: int
    xy: np.ndarray
    """(M, 2) centreline points (m)."""
    heading: np.ndarray
    """(M,) centreline direction (rad)."""
    curvature: np.ndarray
    """(M,) signed curvature (1/m), positive to the left."""
    lane_width: np.ndarray
    """(M,) lane width (m); the road is two lanes, edges at +-lane_width."""
    obstacles: np.ndarray
    """(K, 5) s (m), lateral offset from the centreline (m, left positive), kind index,
    half-length, half-width."""
    obstacle_place: tuple[str, ...]
    friction: float


def curvature_profile(rng: np.random.Generator, cfg: RoadConfig, n: int) -> np.ndarray:
    """(n,) curvature at s = i * ds: straights, clothoid-entered arcs and S-bends."""
    kappa = np.zeros(n)
    i = round(rng.uniform(15.0, 30.0) / cfg.ds_m)  # start on a straight
    while i < n:
        straight = round(rng.uniform(*cfg.straight_m) / cfg.ds_m)
        i += straight
        senses = [rng.choice([-1.0, 1.0])]
        if rng.random() < cfg.s_bend_prob:
            senses.append(-senses[0])
        level = 0.0
        for sense in senses:
            radius = np.exp(rng.uniform(np.log(cfg.min_radius_m), np.log(cfg.max_radius_m)))
            target = sense / radius
            ramp = max(round(rng.uniform(*cfg.transition_m) / cfg.ds_m), 1)
            arc = round(rng.uniform(*cfg.arc_m) / cfg.ds_m)
            seg = np.concatenate([np.linspace(level, target, ramp), np.full(arc, target)])
            i = _write(kappa, i, seg)
            level = target
        ramp = max(round(rng.uniform(*cfg.transition_m) / cfg.ds_m), 1)
        i = _write(kappa, i, np.linspace(level, 0.0, ramp))
    return kappa


def _write(kappa: np.ndarray, i: int, seg: np.ndarray) -> int:
    """Write `seg` into kappa from index i (clipped at the end); return the next index."""
    end = min(i + seg.size, kappa.size)
    if i < end:
        kappa[i:end] = seg[: end - i]
    return i + seg.size


def integrate(kappa: np.ndarray, ds: float) -> tuple[np.ndarray, np.ndarray]:
    """Heading (n,) and centreline (n, 2) from curvature, starting at the origin along +x."""
    heading = np.concatenate([[0.0], np.cumsum(0.5 * (kappa[1:] + kappa[:-1]) * ds)])
    step = np.stack([np.cos(heading), np.sin(heading)], axis=1)
    xy = np.concatenate([[[0.0, 0.0]], np.cumsum(0.5 * (step[1:] + step[:-1]) * ds, axis=0)])
    return heading, xy


def check_road(
    seed: int, xy: np.ndarray, kappa: np.ndarray, width: np.ndarray, ds: float, limit: float
) -> None:
    """Raise InvalidRoadError if the road curves beyond `limit` (1/m) or comes back onto itself."""
    worst = int(np.argmax(np.abs(kappa)))
    if abs(kappa[worst]) > limit:
        raise InvalidRoadError(
            f"road seed {seed}: curvature {abs(kappa[worst]):.3f} 1/m at s = {worst * ds:.0f} m "
            f"is beyond the car's turning limit {limit:.3f} 1/m"
        )
    stride = max(round(2.0 / ds), 1)
    pts = xy[::stride]
    s = np.arange(pts.shape[0]) * stride * ds
    dist = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    far_along = np.abs(s[:, None] - s[None]) > 40.0
    clearance = 2 * width.max() + 6.0  # two roads plus their shoulders
    close = far_along & (dist < clearance)
    if close.any():
        a, b = np.argwhere(close)[0]
        raise InvalidRoadError(
            f"road seed {seed}: self-intersecting: s = {s[a]:.0f} m passes {dist[a, b]:.1f} m "
            f"from s = {s[b]:.0f} m (needs {clearance:.1f} m)"
        )


def lane_width_profile(rng: np.random.Generator, cfg: RoadConfig, n: int) -> np.ndarray:
    width = np.full(n, rng.uniform(*cfg.lane_width_m))
    if rng.random() < cfg.narrowing_prob:
        start = rng.uniform(60.0, cfg.length_m - 80.0) / cfg.ds_m
        span = rng.uniform(30.0, 60.0) / cfg.ds_m
        i = np.arange(n)
        inside = np.clip(np.minimum(i - start, start + span - i) / (10.0 / cfg.ds_m), 0.0, 1.0)
        width -= cfg.narrowing_m * (0.5 - 0.5 * np.cos(np.pi * inside))
    return width


def place_obstacles(
    rng: np.random.Generator, cfg: RoadConfig, width: np.ndarray
) -> tuple[np.ndarray, tuple[str, ...]]:
    count = int(rng.integers(cfg.obstacles[0], cfg.obstacles[1] + 1))
    rows, places = [], []
    for _ in range(count):
        s = rng.uniform(40.0, cfg.length_m - 20.0)
        w = width[min(round(s / cfg.ds_m), width.size - 1)]
        kind = int(rng.integers(len(OBSTACLE_KINDS)))
        half_len, half_wid = OBSTACLE_SIZE[OBSTACLE_KINDS[kind]]
        if rng.random() < cfg.ego_lane_obstacle_prob:
            place, lateral = "ego_lane", -w / 2
        else:
            place = str(rng.choice(PLACES[1:]))
            lateral = {
                "left_lane": w / 2,
                "right_shoulder": -w - half_wid - 0.3,
                "left_shoulder": w + half_wid + 0.3,
            }[place]
        rows.append([s, lateral, kind, half_len, half_wid])
        places.append(place)
    return np.asarray(rows, dtype=np.float64).reshape(-1, 5), tuple(places)


def generate_road(seed: int, cfg: RoadConfig, max_curvature: float) -> Road:
    """The road of `seed`; raises InvalidRoadError naming the reason when it is unusable.

    `max_curvature` is the car's kinematic turning limit (1/m)."""
    rng = np.random.default_rng(seed)
    n = int(cfg.length_m / cfg.ds_m) + 1
    kappa = curvature_profile(rng, cfg, n)
    heading, xy = integrate(kappa, cfg.ds_m)
    width = lane_width_profile(rng, cfg, n)
    check_road(seed, xy, kappa, width, cfg.ds_m, cfg.max_curvature_ratio * max_curvature)
    obstacles, places = place_obstacles(rng, cfg, width)
    friction = float(rng.uniform(*cfg.friction))
    return Road(seed, xy, heading, kappa, width, obstacles, places, friction)


@dataclass
class RoadBank:
    """Roads stacked for batched lookup: arrays lead with the road index (B)."""

    seeds: np.ndarray
    xy: np.ndarray
    """(B, M, 2)"""
    heading: np.ndarray
    curvature: np.ndarray
    lane_width: np.ndarray
    """(B, M)"""
    obstacles: np.ndarray
    """(B, K, 5) padded with far-away dummies (kind -1)."""
    obstacle_corners: np.ndarray
    """(B, K, 4, 2) world-frame footprint corners, counter-clockwise."""
    obstacle_lane: np.ndarray
    """(B, K) index into PLACES, -1 for padding."""
    friction: np.ndarray
    """(B,)"""
    rejected: dict[int, str]
    """Seeds skipped while building the bank, with the reason."""
    ds: float

    @property
    def size(self) -> int:
        return self.seeds.size


def build_bank(seeds, count: int, cfg: RoadConfig, max_curvature: float) -> RoadBank:
    """The first `count` valid roads from the seed iterator `seeds`.

    Raises ValueError when more roads are rejected than kept (a config the car cannot
    drive), quoting the first rejection."""
    roads: list[Road] = []
    rejected: dict[int, str] = {}
    for seed in seeds:
        if len(roads) == count:
            break
        try:
            roads.append(generate_road(int(seed), cfg, max_curvature))
        except InvalidRoadError as err:
            rejected[int(seed)] = str(err)
            if len(rejected) > max(2 * count, 20):
                raise ValueError(
                    f"task.road: {len(rejected)} road seeds rejected, only {len(roads)} valid; "
                    f"first: {next(iter(rejected.values()))}"
                ) from err
    if len(roads) < count:
        raise ValueError(f"task.road: only {len(roads)} valid roads of {count} wanted")
    k = max(1, cfg.obstacles[1])
    obstacles = np.zeros((count, k, 5))
    obstacles[:, :, 0] = 1e6  # padding far beyond every road's end
    obstacles[:, :, 2] = -1
    obstacles[:, :, 3:5] = 0.1
    lane = np.full((count, k), -1)
    for b, road in enumerate(roads):
        obstacles[b, : road.obstacles.shape[0]] = road.obstacles
        lane[b, : len(road.obstacle_place)] = [PLACES.index(p) for p in road.obstacle_place]
    xy = np.stack([r.xy for r in roads])
    heading = np.stack([r.heading for r in roads])
    corners = obstacle_corners(obstacles, xy, heading, cfg.ds_m)
    return RoadBank(
        seeds=np.array([r.seed for r in roads]),
        xy=xy,
        heading=heading,
        curvature=np.stack([r.curvature for r in roads]),
        lane_width=np.stack([r.lane_width for r in roads]),
        obstacles=obstacles,
        obstacle_corners=corners,
        obstacle_lane=lane,
        friction=np.array([r.friction for r in roads]),
        rejected=rejected,
        ds=cfg.ds_m,
    )


def obstacle_corners(
    obstacles: np.ndarray, xy: np.ndarray, heading: np.ndarray, ds: float
) -> np.ndarray:
    """(B, K, 4, 2) footprints aligned with the road at each obstacle's arc length."""
    b = obstacles.shape[0]
    idx = np.clip(np.round(obstacles[:, :, 0] / ds).astype(int), 0, xy.shape[1] - 1)
    rows = np.arange(b)[:, None]
    centre_line = xy[rows, idx]
    th = heading[rows, idx]
    t = np.stack([np.cos(th), np.sin(th)], axis=-1)
    nrm = np.stack([-np.sin(th), np.cos(th)], axis=-1)
    centre = centre_line + obstacles[:, :, 1:2] * nrm
    signs = np.array([[1, -1], [1, 1], [-1, 1], [-1, -1]], dtype=float)
    hl, hw = obstacles[:, :, 3:4], obstacles[:, :, 4:5]
    corners = (
        centre[:, :, None]
        + signs[None, None, :, 0:1] * (hl * t)[:, :, None]
        + signs[None, None, :, 1:2] * (hw * nrm)[:, :, None]
    )
    far = obstacles[:, :, 2] < 0
    corners[far] += 1e6  # translated far away, still a proper box
    return corners


def train_seeds(rng: np.random.Generator):
    """Endless random training seeds (below HELD_OUT_SEED0)."""
    while True:
        yield int(rng.integers(0, HELD_OUT_SEED0))


def held_out_seeds(first: int = HELD_OUT_SEED0):
    """Held-out seeds in order from `first`: evaluation road i is the i-th valid one."""
    seed = first
    while True:
        yield seed
        seed += 1


VALIDATION_SEED0 = 2_000_000
"""Validation roads (model selection, training-time evaluation) start here: apart from
the training seeds (below HELD_OUT_SEED0) and from the held-out roads' first 1,000,000."""

ROAD_SETS = ("held_out", "validation", "train")


def evaluation_seeds(road_set: str, seed: int):
    """The seeds of an evaluation's roads: held-out (the final numbers), validation
    (choosing among checkpoints or gains) or training roads (the training bank's draw of
    `seed`: tuning a baseline on training roads only)."""
    if road_set == "held_out":
        return held_out_seeds()
    if road_set == "validation":
        return held_out_seeds(VALIDATION_SEED0)
    if road_set == "train":
        return train_seeds(np.random.default_rng([seed, 8]))
    raise ValueError(f"road_set: {road_set!r} is not one of {list(ROAD_SETS)}")
