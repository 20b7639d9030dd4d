"""Low fidelity: analytic feasibility of minimum-snap plans for the Crazyflie.

Why: the planner proposes thousands of time allocations; most can be judged from the
polynomial alone, without flying them. A quadrotor is differentially flat in position
and yaw (Mellinger & Kumar 2011), so the thrust and body rates it needs follow from the
plan's derivatives:

- collective thrust per mass f = a + g e_z; its norm must stay within
  thrust_to_weight * g (all four motors at full speed) and above `min_thrust_accel`
  (rotors cannot push down: a plan that falls faster than g needs f pointing down,
  which shows as a tilt of pi);
- body z axis b3 = f / |f|, tilt = angle(b3, e_z) within the tracking controller's
  largest commanded tilt (medium fidelity flies through that controller);
- roll and pitch rate |omega_xy| = |j - (j . b3) b3| / |f| (yaw held constant, so the
  small yaw-rate term of the heading is left out) within the gyroscope's range;
- speed |v| within the airframe's top speed.

Limits are read from `CrazyflieParams` (robots/crazyflie/params.py, sources in
docs/facts.md) and the controller gains; nothing is restated here. Derivatives are
sampled on a fine time grid (`dt`), which is exact up to the grid: peaks of a 7th-order
segment do not hide between 5 ms samples at the segment lengths used here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.robots.crazyflie import CrazyflieParams
from simreal.robots.crazyflie.params import GRAVITY
from simreal.tasks.quad_replan.minsnap import PiecewisePolynomial
from simreal.tasks.quadrotor.controller import VelocityControllerGains

CHECKS = ("thrust", "min_thrust", "body_rate", "speed", "tilt")


@dataclass(frozen=True)
class Limits:
    """What the low fidelity checks a plan against (SI units)."""

    max_thrust_accel: float
    """Largest collective thrust per mass (m/s^2)."""
    min_thrust_accel: float
    """Smallest collective thrust per mass (m/s^2)."""
    max_body_rate: float
    max_speed: float
    max_tilt: float

    @classmethod
    def crazyflie(
        cls,
        params: CrazyflieParams | None = None,
        gains: VelocityControllerGains | None = None,
        min_thrust_accel: float = 0.0,
    ) -> Limits:
        p = params or CrazyflieParams()
        g = gains or VelocityControllerGains()
        return cls(
            max_thrust_accel=4.0 * p.max_thrust / p.mass,
            min_thrust_accel=min_thrust_accel,
            max_body_rate=p.max_body_rate,
            max_speed=p.max_speed,
            max_tilt=g.max_tilt,
        )


@dataclass
class Feasibility:
    """Per plan (B,): whether every check holds, the relative margin of each check
    (1 - peak / limit; negative where violated; min_thrust: (lowest - limit) / g), and
    the peaks themselves."""

    feasible: np.ndarray
    margins: dict[str, np.ndarray]
    peaks: dict[str, np.ndarray]

    @property
    def worst_margin(self) -> np.ndarray:
        """(B,) the smallest margin over the checks: one number for an optimizer."""
        return np.min(np.stack([self.margins[c] for c in CHECKS]), axis=0)


def flat_outputs(vel: np.ndarray, acc: np.ndarray, jerk: np.ndarray) -> dict[str, np.ndarray]:
    """Thrust per mass, tilt, roll-pitch rate and speed of (..., 3) derivatives."""
    f = acc + np.array([0.0, 0.0, GRAVITY])
    thrust = np.linalg.norm(f, axis=-1)
    b3 = f / np.maximum(thrust, 1e-9)[..., None]
    j_perp = jerk - np.sum(jerk * b3, axis=-1, keepdims=True) * b3
    return {
        "thrust": thrust,
        "tilt": np.arccos(np.clip(b3[..., 2], -1.0, 1.0)),
        "body_rate": np.linalg.norm(j_perp, axis=-1) / np.maximum(thrust, 1e-9),
        "speed": np.linalg.norm(vel, axis=-1),
    }


def check(plan: PiecewisePolynomial, limits: Limits, dt: float = 0.005) -> Feasibility:
    """Feasibility of every plan in the batch (samples past a plan's end are at rest)."""
    _, d = plan.sample(dt, derivatives=3)
    out = flat_outputs(d[1], d[2], d[3])
    peaks = {
        "thrust": out["thrust"].max(axis=1),
        "min_thrust": out["thrust"].min(axis=1),
        "body_rate": out["body_rate"].max(axis=1),
        "speed": out["speed"].max(axis=1),
        "tilt": out["tilt"].max(axis=1),
    }
    margins = {
        "thrust": 1.0 - peaks["thrust"] / limits.max_thrust_accel,
        "min_thrust": (peaks["min_thrust"] - limits.min_thrust_accel) / GRAVITY,
        "body_rate": 1.0 - peaks["body_rate"] / limits.max_body_rate,
        "speed": 1.0 - peaks["speed"] / limits.max_speed,
        "tilt": 1.0 - peaks["tilt"] / limits.max_tilt,
    }
    feasible = np.all(np.stack([margins[c] >= 0.0 for c in CHECKS]), axis=0)
    return Feasibility(feasible, margins, peaks)
