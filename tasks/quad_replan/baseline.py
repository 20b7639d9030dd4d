"""The baseline planner: minimum snap with segment times optimized by a standard
optimizer under the low-fidelity limits (Richter, Bry & Roy 2016).

Why this baseline: it is what the MFRL paper compares against; it plans feasible,
smooth trajectories but takes an optimization per plan (the paper reports minutes for
its version), which is the latency the learned planner is to beat.

Per plan: SLSQP (scipy.optimize) over log segment times minimizes
total_time + snap_weight * snap_cost, subject to the worst feasibility margin staying
above `margin`; if the optimizer stops short of feasibility, all times are then
stretched by the smallest common factor (from a grid) that makes the plan feasible,
so the baseline always returns a feasible plan when one exists on that grid.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from simreal.tasks.quad_replan import feasibility, minsnap


@dataclass(frozen=True)
class BaselineConfig:
    snap_weight: float = 1e-5
    """s per (m^2/s^7): how much smoothness is worth against a second of flight."""
    margin: float = 0.1
    """Smallest feasibility margin a plan keeps (relative to each limit)."""
    initial_speed: float = 1.0
    """Mean speed (m/s) of the initial allocation, segment time = length / speed."""
    min_segment_s: float = 0.2
    max_iter: int = 60
    check_dt: float = 0.01
    """Sampling step (s) of the feasibility check inside the optimizer."""

    def validate(self) -> None:
        if self.snap_weight < 0 or not 0 <= self.margin < 1:
            raise ValueError(
                f"baseline: need snap_weight >= 0 and 0 <= margin < 1, got "
                f"{self.snap_weight}, {self.margin}"
            )
        if self.initial_speed <= 0 or self.min_segment_s <= 0 or self.check_dt <= 0:
            raise ValueError("baseline: initial_speed, min_segment_s, check_dt must be > 0")


@dataclass
class BaselinePlan:
    durations: np.ndarray
    """(M,) segment times (s)."""
    plan: minsnap.PiecewisePolynomial
    feasible: bool
    planning_s: float
    """Wall time of this plan's optimization."""
    iterations: int


def stretch_to_feasible(
    waypoints: np.ndarray,
    durations: np.ndarray,
    limits: feasibility.Limits,
    margin: float,
    dt: float,
) -> np.ndarray:
    """The durations times the smallest factor in 1..8 (geometric grid, one batched
    solve) whose plan keeps `margin`; the largest factor if none does."""
    factors = np.geomspace(1.0, 8.0, 25)
    scaled = factors[:, None] * durations[None]
    plans = minsnap.solve(np.broadcast_to(waypoints, (factors.size, *waypoints.shape)), scaled)
    ok = feasibility.check(plans, limits, dt).worst_margin >= margin
    return scaled[int(np.argmax(ok))] if ok.any() else scaled[-1]


def plan(
    waypoints: np.ndarray, limits: feasibility.Limits, cfg: BaselineConfig | None = None
) -> BaselinePlan:
    """Optimize the segment times of one waypoint sequence (M + 1, 3)."""
    cfg = cfg or BaselineConfig()
    cfg.validate()
    t0 = time.perf_counter()
    lengths = np.linalg.norm(np.diff(waypoints, axis=0), axis=1)
    x0 = np.log(np.maximum(lengths / cfg.initial_speed, cfg.min_segment_s))

    def solved(x: np.ndarray) -> minsnap.PiecewisePolynomial:
        return minsnap.solve(waypoints, np.exp(x))

    def objective(x: np.ndarray) -> float:
        return float(np.exp(x).sum() + cfg.snap_weight * minsnap.snap_cost(solved(x))[0])

    def constraint(x: np.ndarray) -> float:
        return float(
            feasibility.check(solved(x), limits, cfg.check_dt).worst_margin[0] - cfg.margin
        )

    result = minimize(
        objective,
        x0,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": constraint}],
        bounds=[(np.log(cfg.min_segment_s), np.log(60.0))] * lengths.size,
        options={"maxiter": cfg.max_iter},
    )
    durations = stretch_to_feasible(waypoints, np.exp(result.x), limits, cfg.margin, cfg.check_dt)
    final = minsnap.solve(waypoints, durations)
    feasible = bool(feasibility.check(final, limits).feasible[0])
    return BaselinePlan(durations, final, feasible, time.perf_counter() - t0, int(result.nit))
