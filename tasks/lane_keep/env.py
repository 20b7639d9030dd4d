"""`lane-keep` environment: a car keeps the right lane of procedural roads.

The policy acts at 20 Hz with a steering angle and a target speed; physics runs at
100 Hz (MuJoCo chassis and steering servo, tyre forces from the bicycle model). After
each control period the car is located on its road (`_measure`), the PID correction
advances, and rewards, terminations and the observation read those measurements.
"""

from __future__ import annotations

from operator import attrgetter
from typing import ClassVar

import numpy as np

from simreal.robots.car import CHASSIS_BODY, CarParams, build_mjcf, chassis_wrench
from simreal.robots.car.dynamics import body_velocity
from simreal.robots.car.params import GRAVITY
from simreal.tasks.env import TaskEnv
from simreal.tasks.lane_keep import geometry as geo
from simreal.tasks.lane_keep import lidar as lidar_mod
from simreal.tasks.lane_keep import rewards as rw
from simreal.tasks.lane_keep.captions import VOCAB, SceneFacts, caption_speed
from simreal.tasks.lane_keep.config import LaneKeepConfig
from simreal.tasks.lane_keep.observations import (
    PRIVILEGED_OBSERVATION,
    PRIVILEGED_TERMS,
    LaneReading,
    policy_terms,
)
from simreal.tasks.lane_keep.perception import DelayLine, LaneEstimate, detect_lane
from simreal.tasks.lane_keep.roads import RoadBank, build_bank, evaluation_seeds, train_seeds
from simreal.tasks.lane_keep.semantic import CaptionEncoder, make_encoder
from simreal.tasks.terms import TerminationTerm, first_columns, layout, observe

CAPTION_LOOKAHEAD_M = (5.0, 25.0)
"""A caption speaks of the road 5-25 m ahead: what the forward camera and the 20 m LiDAR
see, not the map's curvature beyond."""
OBSTACLE_HORIZON_M = 50.0
NARROWING_LOOKAHEAD_M = 40.0
COMFORT_LATERAL_ACCEL = 0.4
"""Desired speed keeps lateral acceleration within this share of the friction limit."""


class LaneKeepEnv(TaskEnv):
    robot = "car"
    reward_terms = rw.REWARDS
    termination_terms = (
        TerminationTerm("collision", attrgetter("collided")),
        TerminationTerm("off_road", attrgetter("off_road")),
    )
    """The step's measurements (`_measure`): a body met an obstacle, or the car
    left the road by more than `off_road_margin_m`."""
    action_groups: ClassVar[dict[str, tuple[int, ...]]] = {"drive": (0, 1)}
    command_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        cfg: LaneKeepConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
        params: CarParams | None = None,
    ):
        cfg.validate()
        self.cfg = cfg
        self.params = params or CarParams()
        self.decimation = cfg.decimation
        self.max_episode_steps = cfg.max_episode_steps
        self.encoder = make_encoder(cfg.semantic.provider, cfg.semantic.blip_weights)
        self.truth_captions = CaptionEncoder()
        self.policy_terms = policy_terms(cfg, self.encoder.num_tokens)
        self.critic_terms = tuple(t for t in self.policy_terms if t.name != "caption_tokens")
        """The critic reads the captions' facts directly (privileged), not their tokens."""
        t = self.encoder.num_tokens
        self.critic_observation_layout = layout(self.critic_terms) + PRIVILEGED_OBSERVATION
        n_obs = sum(term.size for term in self.policy_terms)
        self.observation_structure = (
            {"embedding": [n_obs - t, t, len(VOCAB), cfg.semantic.embed_dim]} if t else None
        )
        limit = self.params.max_curvature
        if cfg.evaluation:
            seeds = evaluation_seeds(cfg.road_set, seed)
            self.bank: RoadBank = build_bank(seeds, cfg.eval_roads, cfg.road, limit)
        else:
            road_rng = np.random.default_rng([seed, 8])
            self.bank = build_bank(train_seeds(road_rng), cfg.train_roads, cfg.road, limit)
        super().__init__(
            build_mjcf(self.params, 1.0 / cfg.physics_hz), num_envs, engine, seed, num_threads
        )
        n = num_envs
        self.chassis = int(self.engine.model.body(CHASSIS_BODY).id) if engine == "mjbatch" else 1
        self.road = np.zeros(n, dtype=np.int64)
        self.idx = np.zeros(n, dtype=np.int64)
        self.action = np.zeros((n, 2))
        self.last_action = np.zeros((n, 2))
        self.target_speed = np.zeros(n)
        self.pid_integral = np.zeros(n)
        self.prev_offset = np.zeros(n)
        self.pid_correction = np.zeros(n)
        self.tokens = np.zeros((n, t), dtype=np.int64)
        self.truth_tokens = np.zeros((n, self.truth_captions.num_tokens), dtype=np.int64)
        self.caption_stamp = np.full(n, -1)
        self.caption_speed = np.full(n, cfg.target_speed_mps)
        self.ranges = np.full((n, cfg.lidar.beams), cfg.lidar.max_range_m)
        self.ranges_valid = np.zeros(n, dtype=bool)
        self.sums = {k: np.zeros(n) for k in ("e2", "width", "speed")}
        self.collided_any = np.zeros(n, dtype=bool)
        self.off_road_any = np.zeros(n, dtype=bool)
        self.perceives = cfg.perception.lane_state_source == "perception"
        self.directions = lidar_mod.beam_directions(cfg.lidar.beams, cfg.lidar.fov_deg)
        self.delay = DelayLine(n, cfg.perception.delay_steps(self.control_dt), 4)
        self.error_samples: list[np.ndarray] = []
        """|lateral error| (m) of every step of every first episode, in evaluation: what the
        pooled RMSE and its percentiles are taken over."""
        self.first_episode = np.ones(n, dtype=bool)
        self._measure()
        everyone = np.arange(n)
        self.perceived = self._truth_estimate(everyone)
        """The lane estimate the policy sees now (made `perception.delay_s` ago)."""
        self.latest_detection = self._truth_estimate(everyone)
        """The detector's newest estimate, the previous one its next detection falls back on."""
        self.delay.fill(everyone, self.perceived.stack())

    def _measure(self) -> None:
        """Locate every car on its road and evaluate what rewards and observations need."""
        p, q, v = self.params, self.engine.qpos, self.engine.qvel
        pos, yaw = q[:, 0:2], q[:, 2]
        self.idx = geo.nearest_index(self.bank, self.road, self.idx, pos)
        offset, road_heading, width, _ = geo.lane_frame(self.bank, self.road, self.idx, pos)
        self.centre_offset = offset
        self.lane_width = width
        self.lane_offset = offset + width / 2  # the right lane's centre is at -width/2
        self.heading_error = geo.wrap_angle(yaw - road_heading)
        vx, vy = body_velocity(yaw, v[:, 0:2])
        self.body_vel = np.stack([vx, vy], axis=1)
        self.yaw_rate = v[:, 2].copy()
        self.steer = q[:, 3].copy()
        circles = geo.car_circles(pos, yaw, p.length, p.width)
        self.gap = geo.obstacle_clearance(self.bank, self.road, circles, p.width / 2)
        self.collided = self.gap < 0.0
        self.off_road = np.abs(offset) + p.width / 2 > width + self.cfg.off_road_margin_m
        kappa = np.abs(geo.curvature_ahead(self.bank, self.road, self.idx, np.arange(0, 30, 2)))
        mu = self.bank.friction[self.road]
        v_curve = np.sqrt(COMFORT_LATERAL_ACCEL * mu * GRAVITY / np.maximum(kappa.max(1), 1e-6))
        self.desired_speed = np.minimum(self.cfg.target_speed_mps, v_curve)
        self.ranges_valid[:] = False

    @property
    def forward_speed(self) -> np.ndarray:
        """(N,) the car's speed along its heading (m/s)."""
        return self.body_vel[:, 0]

    def _truth_estimate(self, ids: np.ndarray) -> LaneEstimate:
        return LaneEstimate(
            self.lane_offset[ids].copy(),
            self.heading_error[ids].copy(),
            self.lane_width[ids].copy(),
            self.bank.curvature[self.road[ids], self.idx[ids]].copy(),
        )

    def _perceive(self) -> None:
        """This step's lane estimate from the LiDAR, and the one the policy sees now (made
        `perception.delay_s` ago); the exact lane state in ground-truth mode."""
        if not self.perceives:
            self.perceived = self._truth_estimate(np.arange(self.num_envs))
            return
        c = self.cfg.lidar
        fresh = detect_lane(
            self._scan(), self.directions, c.forward_m, c.max_range_m,
            self.cfg.perception, self.latest_detection,
        )  # fmt: skip
        self.latest_detection = fresh
        self.perceived = LaneEstimate.unstack(self.delay.push(fresh.stack()))

    def _update_pid(self) -> None:
        """The PID correction from the lane state the policy sees (the estimate)."""
        c, dt = self.cfg.pid, self.control_dt
        e = self.perceived.offset
        self.pid_integral = np.clip(self.pid_integral + e * dt, -c.integral_limit, c.integral_limit)
        derivative = (e - self.prev_offset) / dt
        self.prev_offset = e.copy()
        raw = -(c.kp * e + c.ki * self.pid_integral + c.kd * derivative)
        raw -= c.kh * self.perceived.heading
        self.pid_correction = np.clip(raw, -self.params.max_steer, self.params.max_steer)

    def scene_facts(self) -> SceneFacts:
        s = self.idx * self.bank.ds
        place, dist = geo.nearest_obstacle_ahead(self.bank, self.road, s, OBSTACLE_HORIZON_M)
        ahead_w = self.bank.lane_width[
            self.road[:, None],
            geo.ahead(self.bank, self.road, self.idx, np.arange(0, NARROWING_LOOKAHEAD_M, 2)),
        ]
        return SceneFacts(
            curvature_ahead=geo.extreme_curvature(
                self.bank, self.road, self.idx, *CAPTION_LOOKAHEAD_M
            ),
            obstacle_place=place,
            obstacle_dist=dist,
            narrowing=ahead_w.min(axis=1) < self.lane_width - 0.2,
        )

    def apply_action(self, action: np.ndarray) -> None:
        self.last_action[:] = self.action
        self.action[:] = action
        steer = self.params.max_steer * action[:, 0]
        self.engine.ctrl[:, 0] = steer
        self.engine.ctrl[:, 1] = steer
        self.target_speed = 0.5 * (action[:, 1] + 1.0) * self.params.max_speed

    def simulate(self) -> None:
        mu = self.bank.friction[self.road]
        for _ in range(self.decimation):
            q, v = self.engine.qpos, self.engine.qvel
            self.engine.xfrc_applied[:, self.chassis] = chassis_wrench(
                q[:, 2], v[:, 0:2], v[:, 2], q[:, 3], self.target_speed, mu, self.params
            )
            self.step_physics(1)
        self._measure()
        self._perceive()
        self._update_pid()

    def after_step(self) -> None:
        if self.cfg.evaluation:
            self.error_samples.append(np.abs(self.lane_offset[self.first_episode]))
        self.sums["e2"] += self.lane_offset**2
        self.sums["width"] += self.lane_width
        self.sums["speed"] += self.body_vel[:, 0]
        self.collided_any |= self.collided
        self.off_road_any |= self.off_road

    def _refresh_captions(self) -> None:
        due = np.flatnonzero(
            (self.episode_step % self.cfg.semantic.refresh_steps == 0)
            & (self.caption_stamp != self.episode_step)
        )
        if not due.size:
            return
        self.caption_stamp[due] = self.episode_step[due]
        truth = self.truth_captions.encode(self, due)
        self.truth_tokens[due] = truth
        self.caption_speed[due] = caption_speed(truth, self.cfg.target_speed_mps)
        if isinstance(self.encoder, CaptionEncoder):
            self.tokens[due] = truth
        elif self.encoder.num_tokens:
            self.tokens[due] = self.encoder.encode(self, due)

    def _scan(self) -> np.ndarray:
        stale = np.flatnonzero(~self.ranges_valid)
        if stale.size:
            c = self.cfg.lidar
            q = self.engine.qpos[stale]
            yaw = q[:, 2]
            origin = q[:, 0:2] + c.forward_m * np.stack([np.cos(yaw), np.sin(yaw)], axis=1)
            ranges = lidar_mod.scan(
                self.bank,
                self.road[stale],
                self.idx[stale],
                origin,
                yaw,
                c.fov_deg,
                c.beams,
                c.max_range_m,
            )
            if c.noise_std_m > 0:
                ranges = ranges + self.rng.normal(0.0, c.noise_std_m, ranges.shape)
            self.ranges[stale] = np.clip(ranges, 0.0, c.max_range_m)
            self.ranges_valid[stale] = True
        return self.ranges

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        """The policy reads the lane estimate, odometry and gyro with their noise; the
        critic reads the simulator's exact lane state and the privileged terms."""
        self._refresh_captions()
        preview = geo.curvature_ahead(self.bank, self.road, self.idx, self.cfg.curvature_preview_m)
        lidar = self._scan() if self.cfg.lidar.enabled else None
        truth = LaneReading(
            self.lane_offset,
            self.heading_error,
            self.body_vel,
            self.yaw_rate,
            self.steer,
            self.lane_width,
            preview,
            self.action,
            self.pid_correction,
            lidar,
            self.tokens,
        )
        critic = observe(self.critic_terms, truth)
        critic = np.concatenate([critic, observe(PRIVILEGED_TERMS, self)], axis=1)
        if not self.perceives:
            return observe(self.policy_terms, truth), critic
        p, e = self.cfg.perception, self.perceived
        sensed = LaneReading(
            e.offset,
            e.heading,
            self.body_vel + self.rng.normal(0.0, p.speed_noise_mps, self.body_vel.shape),
            self.yaw_rate + self.rng.normal(0.0, p.yaw_rate_noise_rad_s, self.num_envs),
            self.steer,
            e.width,
            np.repeat(e.curvature[:, None], preview.shape[1], axis=1),
            self.action,
            self.pid_correction,
            lidar,
            self.tokens,
        )
        return observe(self.policy_terms, sensed), critic

    def reset_state(self, ids: np.ndarray) -> None:
        c, n = self.cfg, ids.size
        if c.evaluation:
            road = ids % self.bank.size
            s0 = np.zeros(n)
            lateral = self.rng.uniform(-c.eval_start_offset_m, c.eval_start_offset_m, n)
            dyaw = self.rng.uniform(-c.eval_start_heading_rad, c.eval_start_heading_rad, n)
            speed = self.rng.uniform(*c.eval_start_speed_mps, n)
        else:
            road = self.rng.integers(0, self.bank.size, n)
            s0 = self.rng.uniform(*c.start_s_m, n)
            lateral = self.rng.uniform(-c.start_offset_m, c.start_offset_m, n)
            dyaw = self.rng.uniform(-c.start_heading_rad, c.start_heading_rad, n)
            speed = self.rng.uniform(*c.start_speed_mps, n)
        idx = np.round(s0 / self.bank.ds).astype(np.int64)
        centre = self.bank.xy[road, idx]
        th = self.bank.heading[road, idx]
        width = self.bank.lane_width[road, idx]
        normal = np.stack([-np.sin(th), np.cos(th)], axis=1)
        qpos = np.zeros((n, self.engine.qpos.shape[1]))
        qpos[:, 0:2] = centre + (lateral - width / 2)[:, None] * normal
        qpos[:, 2] = th + dyaw
        qvel = np.zeros((n, self.engine.qvel.shape[1]))
        qvel[:, 0] = speed * np.cos(qpos[:, 2])
        qvel[:, 1] = speed * np.sin(qpos[:, 2])
        self.engine.reset(ids, qpos, qvel)
        self.road[ids] = road
        self.idx[ids] = idx
        self.action[ids] = 0.0
        self.action[ids, 1] = 2.0 * speed / self.params.max_speed - 1.0
        self.last_action[ids] = self.action[ids]
        self.engine.ctrl[ids] = 0.0
        self.caption_stamp[ids] = -1
        for values in self.sums.values():
            values[ids] = 0.0
        self.collided_any[ids] = False
        self.off_road_any[ids] = False

    def after_reset(self, ids: np.ndarray) -> None:
        """The restarted cars located on their roads, their perception and PID started
        from the exact lane state."""
        self._measure()
        self._restart_perception(ids)
        self.pid_integral[ids] = 0.0
        self.prev_offset[ids] = self.lane_offset[ids]
        c_pid = self.cfg.pid
        self.pid_correction[ids] = np.clip(
            -c_pid.kp * self.lane_offset[ids] - c_pid.kh * self.heading_error[ids],
            -self.params.max_steer,
            self.params.max_steer,
        )

    def _restart_perception(self, ids: np.ndarray) -> None:
        """A restarted car's detector starts from the exact lane state (as if it had
        locked on before the episode), its delay line full of it."""
        start = self._truth_estimate(ids)
        self.delay.fill(ids, start.stack())
        self.latest_detection.set_rows(ids, start)
        self.perceived.set_rows(ids, start)

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        self.first_episode[ids] = False
        steps = np.maximum(self.episode_step[ids], 1)
        rmse = np.sqrt(self.sums["e2"][ids] / steps)
        return {
            "lateral_rmse_m": rmse,
            "nrmse": rmse / (self.sums["width"][ids] / steps),
            "collision_rate": self.collided_any[ids].astype(float),
            "off_road_rate": self.off_road_any[ids].astype(float),
            "mean_speed_mps": self.sums["speed"][ids] / steps,
        }

    def summarize_episodes(self, ended: dict[str, list[float]]) -> dict[str, float]:
        """Beyond evaluate()'s means (`lateral_rmse_m` is the mean of the roads' RMSEs):
        their spread, and the error pooled over every step of every road (RMSE, 95th
        percentile, maximum), so that long easy roads cannot hide a short bad one."""
        out = {"lateral_rmse_std_m": float(np.std(ended["lateral_rmse_m"]))}
        if self.error_samples:
            errors = np.concatenate(self.error_samples)
            out.update(
                lateral_rmse_pooled_m=float(np.sqrt(np.mean(errors**2))),
                lateral_error_p95_m=float(np.percentile(errors, 95)),
                lateral_error_max_m=float(errors.max()),
            )
        return out

    def evaluation_conditions(self) -> dict:
        c = self.cfg
        return {
            **super().evaluation_conditions(),
            "road_set": c.road_set,
            "lane_state_source": c.perception.lane_state_source,
            "lane_estimate_delay_s": c.perception.delay_s if self.perceives else 0.0,
            "obstacles_in_lane": c.road.ego_lane_obstacle_prob > 0,
            "ego_lane_obstacle_prob": c.road.ego_lane_obstacle_prob,
            "start_offset_m": c.eval_start_offset_m,
            "start_heading_rad": c.eval_start_heading_rad,
            "start_speed_mps": list(c.eval_start_speed_mps),
            "road_friction": list(c.road.friction),
            "lidar_noise_m": c.lidar.noise_std_m,
            "semantic_provider": c.semantic.provider,
        }

    def baseline_policy(self, name: str):
        """A policy callable obs -> action that needs no training, reading the same
        observation as the policy (the lane estimate in perception mode):

        - `pid`: steers with the PID correction of the observation;
        - `stanley`: Stanley's law with curvature feed-forward, delta = -e_psi -
          atan(k e / (v_soft + v)) + atan(L kappa);
        - `pure_pursuit`: aims at the lane centre a look-ahead distance ahead
          (max(min, gain v)), read from the estimate's offset, heading and curvature:
          delta = atan(2 L y / l^2).

        Each holds `baselines.speed_mps`. Their gains were picked on training roads only
        (`experiments/lane_keep_baselines.py`)."""
        b = self.cfg.baselines
        column = first_columns(self.observation_layout)
        max_steer, wheelbase = self.params.max_steer, self.params.wheelbase
        if name == "pid":
            if "pid_correction" not in column:
                raise ValueError("baseline pid needs task.pid.feature=true (the PID observation)")
            speed = self.cfg.pid.baseline_speed_mps

            def steer(obs: np.ndarray) -> np.ndarray:
                return obs[:, column["pid_correction"]]

        elif name in ("stanley", "pure_pursuit"):
            if "lane_offset" not in column:
                raise ValueError(f"baseline {name} needs task.geometry=true (the lane estimate)")
            speed = b.speed_mps
            off, head = column["lane_offset"], column["heading_error"]
            vx, kappa = column["base_lin_vel"], column["curvature_preview"]

            def steer(obs: np.ndarray) -> np.ndarray:
                e, e_psi, v = obs[:, off], obs[:, head], np.maximum(obs[:, vx], 0.0)
                k = obs[:, kappa] / 10.0  # the observation scales curvature by 10
                if name == "stanley":
                    return (
                        -e_psi
                        - np.arctan(b.stanley_gain * e / (b.stanley_soft_mps + v))
                        + np.arctan(wheelbase * k)
                    )
                ahead = np.maximum(b.pursuit_min_m, b.pursuit_gain_s * v)
                # the lane centre `ahead` metres on, in the car frame (small angles)
                y = -e - np.tan(e_psi) * ahead + 0.5 * k * ahead**2
                return np.arctan(2.0 * wheelbase * y / ahead**2)

        else:
            raise ValueError(
                f"lane-keep: unknown baseline {name!r}; available: pid, stanley, pure_pursuit"
            )
        throttle = 2.0 * speed / self.params.max_speed - 1.0

        def act(obs: np.ndarray) -> np.ndarray:
            out = np.empty((obs.shape[0], 2), dtype=np.float32)
            out[:, 0] = np.clip(steer(obs) / max_steer, -1.0, 1.0)
            out[:, 1] = throttle
            return out

        return act

    def deployment_metadata(self) -> dict:
        p = self.params
        return {
            **super().deployment_metadata(),
            "robot": "car",
            "joint_names": ["steer_angle", "target_speed"],
            "default_joint_pos": [0.0, p.max_speed / 2],
            "action_scale": [p.max_steer, p.max_speed / 2],
            "kp": [],
            "kd": [],
            "observation_structure": self.observation_structure,
            "semantic_provider": self.cfg.semantic.provider,
            "caption_vocabulary": list(VOCAB),
            "caption_refresh_steps": self.cfg.semantic.refresh_steps,
        }
