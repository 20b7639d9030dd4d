"""Minimum-snap piecewise polynomials through waypoints (Mellinger & Kumar 2011; the
closed form of Richter, Bry & Roy 2016), batched over plans.

Why closed form: the quad-replan policy and the baseline's time optimizer both call the
solver thousands of times; for fixed segment times the minimum-snap trajectory is the
solution of one linear (KKT) system, so a batch of plans is one batched
`np.linalg.solve`, with no QP solver in the loop.

Each segment i is a 7th-order polynomial in normalized time s = (t - t_i) / T_i in
[0, 1], per axis: p_i(s) = sum_k c_ik s^k. The cost is the integral of the squared snap
over time, sum_i T_i^-7 c_i^T Q c_i, with Q the integral of the squared 4th s-derivative.
Constraints: the waypoints (every segment starts and ends on its two), rest at both ends
(velocity, acceleration and jerk zero), and continuity of the derivatives 1..`continuity`
(default 4: up to snap) at interior waypoints. The optimum is then smooth up to the 6th
derivative on its own (the Euler-Lagrange condition of the snap integral); the tests
check that, which is what says the KKT system is the optimum and not merely feasible.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np

ORDER = 7
NUM_COEFFS = ORDER + 1
SNAP = 4
REST_DERIVATIVES = 3
"""Velocity, acceleration and jerk are zero at both ends: the drone starts and stops at
rest (hover)."""


def _derivative_row(r: int, s: float) -> np.ndarray:
    """(NUM_COEFFS,) coefficients of d^r/ds^r sum_k c_k s^k at s."""
    row = np.zeros(NUM_COEFFS)
    for k in range(r, NUM_COEFFS):
        row[k] = factorial(k) / factorial(k - r) * s ** (k - r)
    return row


_ROWS = {(r, s): _derivative_row(r, s) for r in range(NUM_COEFFS) for s in (0.0, 1.0)}


def _snap_hessian() -> np.ndarray:
    """(NUM_COEFFS, NUM_COEFFS) Q with integral_0^1 (d^4p/ds^4)^2 ds = c^T Q c."""
    q = np.zeros((NUM_COEFFS, NUM_COEFFS))
    for i in range(SNAP, NUM_COEFFS):
        for j in range(SNAP, NUM_COEFFS):
            fi = factorial(i) / factorial(i - SNAP)
            fj = factorial(j) / factorial(j - SNAP)
            q[i, j] = fi * fj / (i + j - 2 * SNAP + 1)
    return q


Q_SNAP = _snap_hessian()


@dataclass
class PiecewisePolynomial:
    """A batch of B plans of M segments: coeffs (B, M, NUM_COEFFS, 3) in normalized
    time, durations (B, M) in seconds."""

    coeffs: np.ndarray
    durations: np.ndarray

    @property
    def total_time(self) -> np.ndarray:
        """(B,) seconds from the first waypoint to the last."""
        return self.durations.sum(axis=1)

    @property
    def knot_times(self) -> np.ndarray:
        """(B, M + 1) the times at which the plan passes its waypoints."""
        b = self.durations.shape[0]
        return np.concatenate([np.zeros((b, 1)), np.cumsum(self.durations, axis=1)], axis=1)

    def evaluate(self, t: np.ndarray, derivative: int = 0) -> np.ndarray:
        """(B, K, 3) the `derivative`-th time derivative at times t (B, K), clamped to
        [0, total_time] (before the start and after the end the plan is at rest)."""
        t = np.asarray(t, dtype=np.float64)
        total = self.total_time[:, None]
        tc = np.clip(t, 0.0, total)
        starts = self.knot_times[:, :-1]
        seg = np.sum(tc[:, :, None] >= starts[:, None, :], axis=2) - 1
        seg = np.clip(seg, 0, self.durations.shape[1] - 1)
        rows = np.arange(t.shape[0])[:, None]
        dur = self.durations[rows, seg]
        s = np.clip((tc - starts[rows, seg]) / dur, 0.0, 1.0)
        k = np.arange(NUM_COEFFS)
        power = np.maximum(k - derivative, 0)
        factor = np.array(
            [factorial(i) / factorial(i - derivative) if i >= derivative else 0.0 for i in k]
        )
        basis = factor * s[..., None] ** power  # (B, K, NUM_COEFFS)
        value = np.einsum("bkc,bkcd->bkd", basis, self.coeffs[rows, seg])
        value = value / dur[..., None] ** derivative
        if derivative > 0:
            outside = (t < 0.0) | (t > total)
            value[outside] = 0.0
        return value

    def sample(self, dt: float, derivatives: int = 3) -> tuple[np.ndarray, np.ndarray]:
        """Times (B, K) on a common grid of step dt up to the longest plan, and the
        derivatives 0..`derivatives` there, (derivatives + 1, B, K, 3)."""
        steps = int(np.ceil(self.total_time.max() / dt)) + 1
        t = np.broadcast_to(np.arange(steps) * dt, (self.durations.shape[0], steps))
        return t, np.stack([self.evaluate(t, r) for r in range(derivatives + 1)])


def _constraints(durations: np.ndarray, continuity: int) -> np.ndarray:
    """(B, C, n) equality-constraint matrices A of B plans (n = M * NUM_COEFFS). Rows in
    order: start position and rest, then per interior waypoint the two positions and
    the continuity rows, then end position and rest."""
    b, m = durations.shape
    n = m * NUM_COEFFS
    rows = []

    def row(seg: int, r: int, s: float) -> np.ndarray:
        out = np.zeros((b, n))
        out[:, seg * NUM_COEFFS : (seg + 1) * NUM_COEFFS] = (
            _ROWS[(r, s)][None, :] / durations[:, seg, None] ** r
        )
        return out

    for r in range(REST_DERIVATIVES + 1):
        rows.append(row(0, r, 0.0))
    for i in range(m - 1):
        rows.append(row(i, 0, 1.0))
        rows.append(row(i + 1, 0, 0.0))
        for r in range(1, continuity + 1):
            # scaled by the mean duration^r so that every row has a similar magnitude
            scale = (0.5 * (durations[:, i] + durations[:, i + 1]))[:, None] ** r
            rows.append(scale * (row(i, r, 1.0) - row(i + 1, r, 0.0)))
    for r in range(REST_DERIVATIVES + 1):
        rows.append(row(m - 1, r, 1.0))
    return np.stack(rows, axis=1)


def _targets(waypoints: np.ndarray, continuity: int) -> np.ndarray:
    """(B, C, 3) right-hand sides in the order of `_constraints`."""
    b, points, _ = waypoints.shape
    zero = np.zeros((b, 3))
    out = [waypoints[:, 0]] + [zero] * REST_DERIVATIVES
    for i in range(1, points - 1):
        out += [waypoints[:, i], waypoints[:, i]] + [zero] * continuity
    out += [waypoints[:, -1]] + [zero] * REST_DERIVATIVES
    return np.stack(out, axis=1)


def solve(
    waypoints: np.ndarray, durations: np.ndarray, continuity: int = SNAP
) -> PiecewisePolynomial:
    """Minimum-snap plans through waypoints (B, M + 1, 3) (or one plan, (M + 1, 3)) with
    segment durations (B, M) seconds, as one batched KKT solve.

    `continuity` is the highest derivative forced continuous at interior waypoints
    (2..6); 4 (snap) is the standard choice and gives the unconstrained optimum.
    """
    waypoints = np.asarray(waypoints, dtype=np.float64)
    durations = np.asarray(durations, dtype=np.float64)
    if waypoints.ndim == 2:
        waypoints = waypoints[None]
    if durations.ndim == 1:
        durations = durations[None]
    b, points, dim = waypoints.shape
    if dim != 3 or points < 2:
        raise ValueError(f"waypoints must be (B, M + 1 >= 2, 3), got {waypoints.shape}")
    if durations.shape != (b, points - 1):
        raise ValueError(
            f"durations must be (B, M) = {(b, points - 1)} for these waypoints, "
            f"got {durations.shape}"
        )
    if not np.all(np.isfinite(durations)) or np.any(durations <= 0):
        raise ValueError(f"durations must be positive and finite, got min {durations.min()}")
    if not 2 <= continuity <= ORDER - 1:
        # below 2 an interior segment keeps a cubic of zero snap that the joins do not
        # pin down: the optimum is not unique and the KKT matrix singular
        raise ValueError(f"continuity must be in 2..{ORDER - 1}, got {continuity}")
    m = points - 1
    n = m * NUM_COEFFS
    # snap cost of segment i in seconds: T_i^-7 c^T Q c; scaled per plan by T_mean^7
    # (the argmin is unchanged) so that the KKT matrix stays well conditioned
    rel = durations / durations.mean(axis=1, keepdims=True)
    hess = np.zeros((b, n, n))
    for i in range(m):
        block = slice(i * NUM_COEFFS, (i + 1) * NUM_COEFFS)
        hess[:, block, block] = 2.0 * Q_SNAP[None] / rel[:, i, None, None] ** 7
    a = _constraints(durations, continuity)
    c = a.shape[1]
    kkt = np.zeros((b, n + c, n + c))
    kkt[:, :n, :n] = hess
    kkt[:, :n, n:] = np.swapaxes(a, 1, 2)
    kkt[:, n:, :n] = a
    rhs = np.zeros((b, n + c, 3))
    rhs[:, n:] = _targets(waypoints, continuity)
    sol = np.linalg.solve(kkt, rhs)[:, :n]
    return PiecewisePolynomial(sol.reshape(b, m, NUM_COEFFS, 3), durations.copy())


def snap_cost(plan: PiecewisePolynomial) -> np.ndarray:
    """(B,) integral over time of the squared snap, summed over axes (m^2 / s^7)."""
    quad = np.einsum("bmkd,kl,bmld->bm", plan.coeffs, Q_SNAP, plan.coeffs)
    return np.sum(quad / plan.durations**7, axis=1)


def segment_ends(plan: PiecewisePolynomial, derivative: int) -> tuple[np.ndarray, np.ndarray]:
    """The `derivative`-th time derivative at the start and at the end of every segment,
    each (B, M, 3): where continuity is read off (end of i against start of i + 1)."""
    scale = plan.durations[..., None] ** derivative
    start = np.einsum("k,bmkd->bmd", _ROWS[(derivative, 0.0)], plan.coeffs) / scale
    end = np.einsum("k,bmkd->bmd", _ROWS[(derivative, 1.0)], plan.coeffs) / scale
    return start, end
