"""What the car's perception reports of its lane: a lane detector on the LiDAR returns,
late and noisy, as a real car's lane estimate is.

The policy of `lane-keep` sees this estimate, not the simulator's lane state (which goes
to the critic only). The detector fits each road edge with a quadratic in the car frame,
y = a + b x + c x^2, by least squares over the LiDAR returns on that side within
`fit_range_m` ahead; a second pass drops returns more than `outlier_m` from the first fit
(an obstacle's side, a beam past the edge). From the two fits it reads the lane width
(half the road's width), the offset from the right lane's centre, the heading error
(-atan b) and the curvature (2 c / (1 + b^2)^1.5). Its errors are its own: LiDAR noise,
obstacles and curves that bend the fit, too few returns on a side (that side is then
left out; with neither, the previous estimate is held), two fits too far apart or too
close for a lane (the right one alone is used), and a tracker's gate (a detection that
jumped more than `max_jump_m` since the last is rejected and the previous one held). The estimate reaches the policy
`delay_s` late (a ring buffer of whole control steps); speed and yaw rate carry white
noise. All functions are batched over simulations, no per-simulation loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SOURCES = ("perception", "ground_truth")


@dataclass
class PerceptionConfig:
    lane_state_source: str = "perception"
    """perception: the policy sees the detector's estimate; ground_truth: the simulator's
    exact lane state (a privileged variant, never to be compared with a paper)."""
    delay_s: float = 0.1
    """Age of the lane estimate the policy sees (s): camera or LiDAR frame, detection and
    transport; at least one control step (50 ms at 20 Hz)."""
    fit_range_m: tuple[float, float] = (0.5, 15.0)
    """Returns used by the edge fit, by distance ahead of the car's centre (m)."""
    min_returns: int = 5
    """Fewer returns on a side than this and that side's fit is left out."""
    outlier_m: float = 0.3
    """The second pass keeps returns within this distance of the first fit (m)."""
    lane_width_m: tuple[float, float] = (2.5, 4.5)
    """Plausible lane widths: two edge fits further apart or closer are not both edges
    (an obstacle's side taken for one), and the right one alone is used."""
    max_jump_m: float = 0.5
    """A detection whose offset moved more than this (m) in one control step is
    rejected (the tracker's gate) and the previous estimate held."""
    speed_noise_mps: float = 0.1
    """White noise on the measured body velocity (wheel odometry), m/s."""
    yaw_rate_noise_rad_s: float = 0.01
    """White noise on the measured yaw rate (gyro), rad/s."""

    def validate(self, control_dt: float) -> None:
        if self.lane_state_source not in SOURCES:
            raise ValueError(
                f"perception.lane_state_source: {self.lane_state_source!r} is not one of "
                f"{list(SOURCES)}"
            )
        if self.lane_state_source == "perception" and self.delay_s < control_dt - 1e-9:
            raise ValueError(
                f"perception.delay_s: {self.delay_s} s is shorter than one control step "
                f"({control_dt} s); a lane estimate is at least one frame old"
            )
        lo, hi = self.fit_range_m
        if not 0 <= lo < hi:
            raise ValueError(f"perception.fit_range_m: need 0 <= low < high, got {lo}, {hi}")
        if self.min_returns < 3:
            raise ValueError(f"perception.min_returns must be >= 3, got {self.min_returns}")
        lo_w, hi_w = self.lane_width_m
        if not 0 < lo_w < hi_w:
            raise ValueError(f"perception.lane_width_m: need 0 < low < high, got {lo_w}, {hi_w}")
        for name in ("outlier_m", "max_jump_m", "speed_noise_mps", "yaw_rate_noise_rad_s"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"perception.{name} must be finite and >= 0, got {value}")

    def delay_steps(self, control_dt: float) -> int:
        return max(1, round(self.delay_s / control_dt))


@dataclass
class LaneEstimate:
    """(N,) lane offset from the right lane's centre (m, left positive), heading error
    (rad), lane width (m), curvature (1/m, left positive)."""

    offset: np.ndarray
    heading: np.ndarray
    width: np.ndarray
    curvature: np.ndarray

    def stack(self) -> np.ndarray:
        return np.stack([self.offset, self.heading, self.width, self.curvature], axis=1)

    @staticmethod
    def unstack(values: np.ndarray) -> LaneEstimate:
        return LaneEstimate(values[:, 0], values[:, 1], values[:, 2], values[:, 3])

    def set_rows(self, ids: np.ndarray, other: LaneEstimate) -> None:
        """Rows `ids` take `other`'s values (one row of `other` per id)."""
        for name in ("offset", "heading", "width", "curvature"):
            getattr(self, name)[ids] = getattr(other, name)


def returns_in_car_frame(
    ranges: np.ndarray, directions: np.ndarray, forward_m: float, max_range_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Points (N, B, 2) of the LiDAR returns in the car frame (x ahead of the centre of
    mass, y left) and which beams returned (N, B) (a beam at its maximum range did not)."""
    points = ranges[..., None] * directions[None]
    points[..., 0] += forward_m
    return points, ranges < max_range_m - 1e-6


def fit_edge(x: np.ndarray, y: np.ndarray, use: np.ndarray, min_returns: int):
    """Weighted least-squares quadratic y = a + b x + c x^2 per row over the returns
    `use` (N, B); coefficients (N, 3) and whether the row had enough returns (N,)."""
    w = use.astype(float)
    basis = np.stack([np.ones_like(x), x, x * x], axis=-1)  # (N, B, 3)
    gram = np.einsum("nb,nbi,nbj->nij", w, basis, basis)
    rhs = np.einsum("nb,nbi,nb->ni", w, basis, y)
    ok = w.sum(axis=1) >= min_returns
    gram[~ok] = np.eye(3)  # rows without enough returns: any solvable system, ignored
    rhs[~ok] = 0.0
    gram += 1e-9 * np.eye(3)
    return np.linalg.solve(gram, rhs[..., None])[..., 0], ok


def detect_lane(
    ranges: np.ndarray,
    directions: np.ndarray,
    forward_m: float,
    max_range_m: float,
    cfg: PerceptionConfig,
    previous: LaneEstimate,
) -> LaneEstimate:
    """The lane detector on one LiDAR scan per simulation (see the module docstring)."""
    points, hit = returns_in_car_frame(ranges, directions, forward_m, max_range_m)
    x, y = points[..., 0], points[..., 1]
    lo, hi = cfg.fit_range_m
    near = hit & (x >= lo) & (x <= hi)
    fits = {}
    for side, on_side in (("right", y < 0.0), ("left", y > 0.0)):
        use = near & on_side
        coef, ok = fit_edge(x, y, use, cfg.min_returns)
        fitted = coef[:, 0:1] + coef[:, 1:2] * x + coef[:, 2:3] * x * x
        use = use & (np.abs(y - fitted) < cfg.outlier_m)
        coef, ok2 = fit_edge(x, y, use, cfg.min_returns)
        fits[side] = (coef, ok & ok2)
    (right, r_ok), (left, l_ok) = fits["right"], fits["left"]
    road_width = left[:, 0] - right[:, 0]
    lo_w, hi_w = cfg.lane_width_m
    both = r_ok & l_ok & (road_width >= 2 * lo_w) & (road_width <= 2 * hi_w)
    l_ok = l_ok & (both | ~r_ok)
    width = np.where(both, road_width / 2.0, previous.width)
    centre = np.where(r_ok, right[:, 0] + width / 2.0, left[:, 0] - 1.5 * width)
    b = np.where(both, (right[:, 1] + left[:, 1]) / 2.0, np.where(r_ok, right[:, 1], left[:, 1]))
    c = np.where(both, (right[:, 2] + left[:, 2]) / 2.0, np.where(r_ok, right[:, 2], left[:, 2]))
    seen = (r_ok | l_ok) & (np.abs(-centre - previous.offset) <= cfg.max_jump_m)
    width = np.where(seen, width, previous.width)
    return LaneEstimate(
        offset=np.where(seen, -centre, previous.offset),
        heading=np.where(seen, -np.arctan(b), previous.heading),
        width=width,
        curvature=np.where(seen, 2.0 * c / (1.0 + b * b) ** 1.5, previous.curvature),
    )


class DelayLine:
    """Hands out each simulation's estimate `steps` control steps after it was made."""

    def __init__(self, num_envs: int, steps: int, width: int):
        self.buffer = np.zeros((steps, num_envs, width))
        self.head = 0

    def push(self, values: np.ndarray) -> np.ndarray:
        """Store this step's values (N, width) and return those made `steps` ago."""
        out = self.buffer[self.head].copy()
        self.buffer[self.head] = values
        self.head = (self.head + 1) % self.buffer.shape[0]
        return out

    def fill(self, ids: np.ndarray, values: np.ndarray) -> None:
        """Simulations `ids` start over: their whole history is `values` (k, width)."""
        self.buffer[:, ids] = values[None]
