"""`quad-replan` environment: one decision per episode, the time allocation of a
minimum-snap plan through the next waypoints, judged at the active fidelity.

Why one-step episodes: the MFRL planner outputs a whole plan at once (and again at
every replan); what it is scored on, feasibility or a closed-loop flight, comes after
the decision, so the episode is a contextual bandit: observe the waypoints, act once,
receive the judged reward. A replan starts from the drone's state at the time, which
is why the observation carries it (at rest at the first waypoint here).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simreal.robots.crazyflie import CrazyflieParams, build_mjcf
from simreal.tasks.env import TaskEnv
from simreal.tasks.quad_replan import baseline as minsnap_baseline
from simreal.tasks.quad_replan import feasibility, flight, minsnap
from simreal.tasks.quad_replan import waypoints as wp
from simreal.tasks.quad_replan.config import QuadReplanConfig
from simreal.tasks.quad_replan.rewards import REWARDS
from simreal.tasks.quadrotor.env import EVALUATION_STREAM
from simreal.tasks.quadrotor.observations import ang_vel, lin_vel, rotation
from simreal.tasks.quadrotor.state import QuadState
from simreal.tasks.terms import ObservationTerm, TerminationTerm, layout, observe


@dataclass
class ReplanReading:
    """The drone's state and the waypoints ahead of it (N, M, 3), world frame."""

    state: QuadState
    waypoints_ahead: np.ndarray


def waypoints_relative(r: ReplanReading) -> np.ndarray:
    pos = r.state.base_pos
    return (r.waypoints_ahead - pos[:, None, :]).reshape(pos.shape[0], -1)


def policy_terms(num_segments: int) -> tuple[ObservationTerm, ...]:
    """The next waypoints relative to the drone, then its attitude, velocity and body
    rates: 3 * num_segments + 15 values."""
    return (
        ObservationTerm("waypoints_relative", 3 * num_segments, waypoints_relative),
        ObservationTerm("base_rot", 9, rotation),
        ObservationTerm("base_lin_vel", 3, lin_vel),
        ObservationTerm("base_ang_vel", 3, ang_vel),
    )


def planned(env) -> np.ndarray:
    """Every episode ends after its one plan: nothing follows to bootstrap from."""
    return np.ones(env.num_envs, dtype=bool)


class QuadReplanEnv(TaskEnv):
    cfg: QuadReplanConfig
    reward_terms = REWARDS
    termination_terms = (TerminationTerm("planned", planned),)
    robot = "crazyflie"
    observe_after_resets = True

    def __init__(
        self,
        cfg: QuadReplanConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
        params: CrazyflieParams | None = None,
    ):
        cfg.validate()
        self.cfg = cfg
        self.params = params or CrazyflieParams()
        self.policy_terms = policy_terms(cfg.num_segments)
        self.critic_observation_layout = layout(self.policy_terms)
        self.action_groups = {"segment_times": tuple(range(cfg.num_segments))}
        self.decimation = cfg.decimation
        self.max_episode_steps = cfg.max_episode_steps
        self.limits = feasibility.Limits.crazyflie(self.params, cfg.flight.gains)
        mjcf = build_mjcf(self.params, physics_dt=1.0 / cfg.flight.physics_hz)
        super().__init__(mjcf, num_envs, engine, seed, num_threads)
        if cfg.evaluation:
            self.rng = np.random.default_rng([seed, EVALUATION_STREAM])
        m = cfg.num_segments
        self.waypoints = np.zeros((num_envs, m + 1, 3))
        self.durations = np.ones((num_envs, m))
        self.succeeded = np.zeros(num_envs, dtype=bool)
        self.time_s = np.zeros(num_envs)
        self.worst_margin = np.zeros(num_envs)
        self.flight_time_s = np.full(num_envs, np.nan)
        self.plan_latency_s = np.zeros(num_envs)
        """Wall time per plan: the solve (batched, shared out), plus what a planner
        that optimizes (the baseline) adds through `planner_latency_s`."""
        self.planner_latency_s = np.zeros(num_envs)
        self.shown_waypoints = self.waypoints
        """The waypoints a video draws: those of the plan just flown, until the next."""
        self.flown_qpos = np.zeros((0, 7))
        """Simulation 0's last medium-fidelity flight, at `video_dt` (for `--video`)."""
        self.video_dt = cfg.flight.record_dt
        self.video_frames = 1 + int(np.ceil(60.0 / cfg.flight.record_dt))

    @property
    def nominal_durations(self) -> np.ndarray:
        lengths = np.linalg.norm(np.diff(self.waypoints, axis=1), axis=2)
        return np.maximum(lengths, 1e-3) / self.cfg.nominal_speed

    def durations_from_action(self, action: np.ndarray) -> np.ndarray:
        return self.nominal_durations * self.cfg.time_scale_range ** np.asarray(action)

    def action_from_durations(self, durations: np.ndarray) -> np.ndarray:
        """The action in [-1, 1] that asks for `durations` (clipped where out of range)."""
        ratio = np.asarray(durations) / self.nominal_durations
        return np.clip(np.log(ratio) / np.log(self.cfg.time_scale_range), -1.0, 1.0)

    @property
    def state(self) -> QuadState:
        return QuadState.from_free_joint(self.engine.qpos, self.engine.qvel)

    def apply_action(self, action: np.ndarray) -> None:
        self.durations[:] = self.durations_from_action(action)

    def simulate(self) -> None:
        """Solve the plans, judge them at low fidelity, and fly them at medium."""
        t0 = time.perf_counter()
        plan = minsnap.solve(self.waypoints, self.durations)
        solve_s = (time.perf_counter() - t0) / self.num_envs
        self.plan_latency_s[:] = solve_s + self.planner_latency_s
        self.planner_latency_s[:] = 0.0
        low = feasibility.check(plan, self.limits)
        self.worst_margin[:] = low.worst_margin
        self.flight_time_s[:] = np.nan
        if self.cfg.active_fidelity == "low":
            # analytically a feasible plan is flown as planned: its flight time is its own
            self.succeeded[:] = low.feasible
            self.time_s[:] = plan.total_time
            self.flight_time_s[:] = np.where(low.feasible, plan.total_time, np.nan)
        else:
            t0 = time.perf_counter()
            every = max(1, round(self.video_dt * self.cfg.flight.physics_hz))
            flown = flight.fly(
                plan,
                self.waypoints,
                self.cfg.flight,
                self.params,
                engine=self.engine,
                record_every=every,
            )
            self.shown_waypoints = self.waypoints.copy()
            self.flown_qpos = flown.trajectory
            self.physics_time_s += time.perf_counter() - t0
            self.succeeded[:] = flown.completed
            self.flight_time_s[:] = flown.flight_time_s
            self.time_s[:] = np.where(flown.completed, flown.flight_time_s, plan.total_time)

    def episode_video_qpos(self, sim: int) -> np.ndarray:
        """The frames of the episode that just ended, after its first: simulation 0's
        flight at medium fidelity (none at low); `render_episode` appends them."""
        return self.flown_qpos if sim == 0 else np.zeros((0, 7))

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        reading = ReplanReading(self.state, self.waypoints[:, 1:])
        obs = observe(self.policy_terms, reading)
        return obs, obs.copy()

    def reset_state(self, ids: np.ndarray) -> None:
        drawn = wp.sample(self.rng, ids.size, self.cfg.num_segments + 1, self.cfg.box)
        self.waypoints[ids] = drawn
        qpos = np.zeros((ids.size, 7))
        qpos[:, 0:3] = drawn[:, 0]
        qpos[:, 3] = 1.0
        self.engine.reset(ids, qpos, np.zeros((ids.size, 6)))

    metric_reductions: ClassVar[dict[str, str]] = {}

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        return {
            "completed": self.succeeded[ids].astype(float),
            "flight_time_s": self.flight_time_s[ids].copy(),
            "plan_time_s": self.durations[ids].sum(axis=1),
            "worst_margin": self.worst_margin[ids].copy(),
        }

    def summarize_episodes(self, ended: dict[str, list[float]]) -> dict[str, float]:
        """completion_rate at the evaluated fidelity; flight_time_s the mean over completed
        plans (low: the plan's duration; medium: when the last waypoint was reached);
        the plan latency's median over the last step's plans, which are the evaluation's
        episodes (one step each). Latency is wall time, so it stays out of the episode
        values that rollout hashes cover."""
        completed = np.asarray(ended["completed"])
        times = np.asarray(ended["flight_time_s"])
        flown = times[np.isfinite(times)]
        return {
            "completion_rate": float(completed.mean()),
            "flight_time_s": float(flown.mean()) if flown.size else float("nan"),
            "plan_latency_p50_ms": float(1e3 * np.median(self.plan_latency_s)),
        }

    def evaluation_conditions(self) -> dict:
        c = self.cfg
        return {
            **super().evaluation_conditions(),
            "fidelity": c.active_fidelity,
            "num_segments": c.num_segments,
            "waypoint_box": {
                "low": list(c.box.low),
                "high": list(c.box.high),
                "step_m": [c.box.min_step, c.box.max_step],
            },
            "waypoint_tolerance_m": c.flight.waypoint_tolerance,
        }

    def baseline_policy(self, name: str):
        """`minsnap`: segment times optimized per plan by SLSQP under the low-fidelity
        limits (baseline.py); it reads the waypoints from the simulation, and its
        optimization time is the plan's latency."""
        if name != "minsnap":
            raise ValueError(f"quad-replan: unknown baseline {name!r}; available: minsnap")

        def act(obs: np.ndarray) -> np.ndarray:
            durations = np.empty_like(self.durations)
            for i in range(self.num_envs):
                result = minsnap_baseline.plan(self.waypoints[i], self.limits, self.cfg.baseline)
                durations[i] = result.durations
                self.planner_latency_s[i] = result.planning_s
            return self.action_from_durations(durations).astype(np.float32)

        return act
