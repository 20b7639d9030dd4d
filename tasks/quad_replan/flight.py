"""Medium fidelity: plans flown closed-loop in mjbatch by the Crazyflie's onboard
controller (tasks/quadrotor/controller.py), nominal airframe, batched over plans.

Why closed-loop: feasibility on paper is not completion; the controller lags the
reference, saturates its tilt and acceleration, and overshoots waypoints at speed.
The controller is the velocity-setpoint cascade the swarm flies, run at the physics
rate; the plan enters it as a velocity command with position feedback and the plan's
acceleration fed forward through the velocity loop:

    v* = v_ref + k_p (p_ref - p) + a_ref / k_v

so the outer loop asks for a_ref + k_v (v_ref - v) + k_v k_p (p_ref - p).

A flight completes when the drone passes within `waypoint_tolerance` of every waypoint
in order (the first is the start) without crashing (below `crash_height`, tilted past
`crash_tilt`, or a diverged simulation); its flight time is when it reached the last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simreal.robots.crazyflie import CrazyflieParams, build_mjcf
from simreal.sim.engine import make_engine
from simreal.tasks.quad_replan.minsnap import PiecewisePolynomial
from simreal.tasks.quadrotor.controller import (
    VelocityControllerGains,
    mixer_matrix,
    rotor_thrusts,
)
from simreal.tasks.rotations import quat_to_matrix


def tracking_gains() -> VelocityControllerGains:
    """The swarm's cascade with room for a plan's acceleration: up to 10 m/s^2 besides
    gravity (the swarm caps its own commands at 6)."""
    return VelocityControllerGains(velocity_gain=6.0, max_accel=10.0)


@dataclass(frozen=True)
class FlightConfig:
    physics_hz: int = 240
    position_gain: float = 3.0
    """k_p (1/s): commanded velocity per metre of position error."""
    gains: VelocityControllerGains = field(default_factory=tracking_gains)
    waypoint_tolerance: float = 0.15
    """Distance (m) within which a waypoint counts as passed."""
    settle_s: float = 2.0
    """Time after the plan's end allowed to reach the last waypoint."""
    crash_height: float = 0.05
    crash_tilt: float = 1.2
    """Roll or pitch magnitude (rad) counted as lost control."""
    record_dt: float = 1.0 / 30.0
    """Period (s) at which a task records a flight for its video."""

    def validate(self) -> None:
        if self.physics_hz <= 0 or self.position_gain < 0 or self.settle_s < 0:
            raise ValueError(
                "flight: physics_hz must be > 0, position_gain and settle_s >= 0, got "
                f"{self.physics_hz}, {self.position_gain}, {self.settle_s}"
            )
        if self.waypoint_tolerance <= 0:
            raise ValueError(
                f"flight: waypoint_tolerance must be > 0, got {self.waypoint_tolerance}"
            )


@dataclass
class FlightResult:
    """Per plan (B,)."""

    completed: np.ndarray
    crashed: np.ndarray
    flight_time_s: np.ndarray
    """When the last waypoint was reached (nan where not completed)."""
    waypoints_reached: np.ndarray
    """How many waypoints (the start included) were passed in order."""
    max_error_m: np.ndarray
    """Largest distance from the plan's reference position while flying it."""
    trajectory: np.ndarray
    """(K, 7) qpos of plan `record` every `record_every` physics steps (for a video)."""


def fly(
    plan: PiecewisePolynomial,
    waypoints: np.ndarray,
    cfg: FlightConfig | None = None,
    params: CrazyflieParams | None = None,
    num_threads: int = 1,
    engine=None,
    record: int = 0,
    record_every: int = 8,
) -> FlightResult:
    """Fly every plan of the batch from rest at its first waypoint (waypoints (B, M+1, 3)),
    in `engine` (B simulations of `build_mjcf(params)` at the config's physics rate; a
    task's own) or a new mjbatch engine."""
    cfg = cfg or FlightConfig()
    cfg.validate()
    p = params or CrazyflieParams()
    b, points, _ = waypoints.shape
    if plan.durations.shape != (b, points - 1):
        raise ValueError(
            f"flight: plan durations {plan.durations.shape} do not match waypoints "
            f"{waypoints.shape}"
        )
    dt = 1.0 / cfg.physics_hz
    if engine is None:
        engine = make_engine("mjbatch", build_mjcf(p, physics_dt=dt), b, num_threads)
    if engine.num_envs != b or abs(engine.physics_dt - dt) > 1e-6 * dt:
        raise ValueError(
            f"flight: the engine has {engine.num_envs} simulations at dt {engine.physics_dt}, "
            f"the plans need {b} at {dt}"
        )
    qpos = np.zeros((b, 7))
    qpos[:, 0:3] = waypoints[:, 0]
    qpos[:, 3] = 1.0
    engine.reset(np.arange(b), qpos, np.zeros((b, 6)))
    horizon = float(plan.total_time.max()) + cfg.settle_s
    steps = int(np.ceil(horizon / dt))
    t, ref = plan.sample(dt, derivatives=2)
    mixer_inverse = np.linalg.inv(mixer_matrix(p))
    k_v = cfg.gains.velocity_gain
    next_wp = np.ones(b, dtype=np.int64)
    reach_time = np.full(b, np.nan)
    crashed = np.zeros(b, dtype=bool)
    max_error = np.zeros(b)
    flying = np.ones(b, dtype=bool)
    rows = np.arange(b)
    trajectory = [engine.qpos[record].copy()]
    for k in range(steps):
        i = min(k, t.shape[1] - 1)
        pos = engine.qpos[:, 0:3]
        p_ref, v_ref, a_ref = ref[0, :, i], ref[1, :, i], ref[2, :, i]
        command = v_ref + cfg.position_gain * (p_ref - pos) + a_ref / k_v
        thrusts = rotor_thrusts(
            p,
            cfg.gains,
            engine.qpos[:, 3:7],
            engine.qvel[:, 0:3],
            engine.qvel[:, 3:6],
            command,
            mixer_inverse,
        )
        engine.ctrl[:] = np.where(flying[:, None], thrusts, 0.0)
        engine.step(1)
        if (k + 1) % record_every == 0 and flying[record]:
            trajectory.append(engine.qpos[record].copy())
        pos = engine.qpos[:, 0:3]
        time_now = (k + 1) * dt
        max_error = np.where(
            flying, np.maximum(max_error, np.linalg.norm(pos - p_ref, axis=1)), max_error
        )
        target = waypoints[rows, np.minimum(next_wp, points - 1)]
        hit = flying & (np.linalg.norm(pos - target, axis=1) < cfg.waypoint_tolerance)
        next_wp += hit
        done = hit & (next_wp == points)
        reach_time[done] = time_now
        rot = quat_to_matrix(engine.qpos[:, 3:7])
        tilt = np.arccos(np.clip(rot[:, 2, 2], -1.0, 1.0))
        lost = (pos[:, 2] < cfg.crash_height) | (tilt > cfg.crash_tilt) | engine.unstable()
        crashed |= flying & ~done & lost
        flying &= ~(done | crashed)
        if not flying.any():
            break
    completed = next_wp == points
    return FlightResult(
        completed, crashed, reach_time, next_wp.copy(), max_error, np.stack(trajectory)
    )
