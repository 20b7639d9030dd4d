"""`quad-hover` environment: Crazyflie rotors turned into MuJoCo actuator controls."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from simreal.robots.crazyflie import (
    MOTOR_NAMES,
    CrazyflieParams,
    build_mjcf,
    drag_force,
    ground_effect_thrust,
    motor_thrust,
)
from simreal.tasks.env import RewardTerm, TaskEnv
from simreal.tasks.quad_hover import rewards
from simreal.tasks.quad_hover.config import QuadHoverConfig
from simreal.tasks.quad_hover.observations import (
    POLICY_OBSERVATION,
    PRIVILEGED_OBSERVATION,
    QuadState,
    policy_observation,
)
from simreal.tasks.rotations import quat_from_roll_pitch_yaw, quat_to_matrix, roll_pitch

BASE_BODY = 1


class QuadHoverEnv(TaskEnv):
    """Per-motor RPM control of a Crazyflie; one action group, `motors`."""

    robot = "crazyflie"
    observation_layout = POLICY_OBSERVATION
    critic_observation_layout = POLICY_OBSERVATION + PRIVILEGED_OBSERVATION
    action_groups: ClassVar[dict[str, tuple[int, ...]]] = {"motors": (0, 1, 2, 3)}

    def __init__(
        self,
        cfg: QuadHoverConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
        params: CrazyflieParams | None = None,
    ):
        cfg.validate()
        self.cfg = cfg
        self.params = params or CrazyflieParams()
        self.decimation = cfg.decimation
        self.max_episode_steps = cfg.max_episode_steps
        self.target = np.asarray(cfg.target, dtype=np.float64)
        mjcf = build_mjcf(self.params, physics_dt=1.0 / cfg.physics_hz)
        super().__init__(mjcf, num_envs, engine, seed, num_threads)
        self.action = np.zeros((num_envs, 4))
        self.last_action = np.zeros((num_envs, 4))
        self.rpm = np.zeros((num_envs, 4))
        self.mass_scale = np.ones(num_envs)
        self.kf_scale = np.ones(num_envs)
        self.motor_lag_s = np.zeros(num_envs)
        self.position_error_sum = np.zeros(num_envs)
        self._nominal_mass = self.engine.model_field("body_mass")[0, BASE_BODY].copy()
        self._nominal_inertia = self.engine.model_field("body_inertia")[0, BASE_BODY].copy()
        self._randomize = not cfg.evaluation and (
            cfg.randomization.mass_scale != (1.0, 1.0)
            or cfg.randomization.kf_scale != (1.0, 1.0)
            or cfg.randomization.motor_lag_s != (0.0, 0.0)
        )

    @property
    def state(self) -> QuadState:
        return QuadState.from_free_joint(self.engine.qpos, self.engine.qvel)

    def reward_weights(self) -> dict[str, float]:
        return self.cfg.reward_weights

    def reward_terms(self) -> dict[str, RewardTerm]:
        return {
            "hover": lambda env: rewards.hover(env.state.base_pos, env.target),
            "ang_vel": lambda env: rewards.ang_vel(env.state.base_ang_vel),
            "action_rate": lambda env: rewards.action_rate(env.action, env.last_action),
        }

    def apply_action(self, action: np.ndarray) -> None:
        self.last_action[:] = self.action
        self.action[:] = action
        rpm = self.params.hover_rpm * (1.0 + self.cfg.action_rpm_scale * action)
        self.rpm[:] = np.clip(rpm, 0.0, self.params.max_rpm)
        kf = self.params.kf * self.kf_scale[:, None]
        self.engine.ctrl[:] = motor_thrust(self.rpm, kf)

    def simulate(self) -> None:
        if not (self.cfg.physics.ground_effect or self.cfg.physics.drag):
            self.engine.step(self.decimation)
            return
        for _ in range(self.decimation):
            self.engine.xfrc_applied[:, BASE_BODY] = self._aerodynamic_wrench()
            self.engine.step(1)

    def _aerodynamic_wrench(self) -> np.ndarray:
        """(N, 6) world-frame force and torque at the centre of mass from enabled terms."""
        state = self.state
        rot = quat_to_matrix(state.base_quat)
        wrench = np.zeros((self.num_envs, 6))
        if self.cfg.physics.ground_effect:
            offsets = np.einsum("nij,kj->nki", rot, np.asarray(self.params.rotor_offsets))
            heights = state.base_pos[:, None, 2] + offsets[:, :, 2]
            kf = self.params.kf * self.kf_scale[:, None]
            extra = ground_effect_thrust(self.rpm, heights, kf, self.params)
            roll, pitch = roll_pitch(state.base_quat)
            extra *= ((np.abs(roll) < np.pi / 2) & (np.abs(pitch) < np.pi / 2))[:, None]
            forces = extra[:, :, None] * rot[:, None, :, 2]  # along body z, (N, 4, 3)
            wrench[:, :3] += forces.sum(axis=1)
            wrench[:, 3:] += np.cross(offsets, forces).sum(axis=1)
        if self.cfg.physics.drag:
            wrench[:, :3] += drag_force(self.rpm, state.base_lin_vel, rot, self.params)
        return wrench

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        obs = policy_observation(self.state, self.target, self.action)
        privileged = np.stack([self.mass_scale, self.kf_scale, self.motor_lag_s], axis=1)
        return obs, np.concatenate([obs, privileged], axis=1, dtype=np.float32)

    def terminated(self) -> np.ndarray:
        pos = self.state.base_pos
        self.position_error_sum += np.linalg.norm(self.target - pos, axis=1)
        roll, pitch = roll_pitch(self.state.base_quat)
        c = self.cfg
        return (
            (np.abs(pos[:, 0]) > c.max_xy)
            | (np.abs(pos[:, 1]) > c.max_xy)
            | (pos[:, 2] > c.max_z)
            | (np.abs(roll) > c.max_tilt)
            | (np.abs(pitch) > c.max_tilt)
        )

    def deployment_metadata(self) -> dict:
        """A drone's "joints" are its motors: commands are RPM, default is hover, no PD."""
        hover = self.params.hover_rpm
        return {
            **super().deployment_metadata(),
            "robot": self.robot,
            "joint_names": list(MOTOR_NAMES),
            "default_joint_pos": [hover] * 4,
            "action_scale": [self.cfg.action_rpm_scale * hover] * 4,
            "kp": [],
            "kd": [],
        }

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        final = np.linalg.norm(self.target - self.engine.qpos[ids, 0:3], axis=1)
        steps = np.maximum(self.episode_step[ids], 1)
        return {
            "final_position_error_m": final,
            "mean_position_error_m": self.position_error_sum[ids] / steps,
        }

    def reset_state(self, ids: np.ndarray) -> None:
        n = ids.size
        qpos = np.zeros((n, 7))
        qvel = np.zeros((n, 6))
        qpos[:, 2] = self.params.collision_height / 2 + self.cfg.start_height
        qpos[:, 3] = 1.0
        if not self.cfg.evaluation and self.cfg.random_init_fraction > 0:
            air = self.rng.random(n) < self.cfg.random_init_fraction
            k = int(air.sum())
            qpos[air, 0:2] = self.rng.uniform(-1.0, 1.0, (k, 2))
            qpos[air, 2] = self.rng.uniform(0.2, 1.8, k)
            tilt = self.rng.uniform(-0.2, 0.2, (k, 2))
            qpos[air, 3:7] = quat_from_roll_pitch_yaw(
                tilt[:, 0], tilt[:, 1], self.rng.uniform(-np.pi, np.pi, k)
            )
            qvel[air, 0:3] = self.rng.uniform(-0.5, 0.5, (k, 3))
            qvel[air, 3:6] = self.rng.uniform(-0.5, 0.5, (k, 3))
        self.engine.reset(ids, qpos, qvel)
        self.action[ids] = 0.0
        self.last_action[ids] = 0.0
        self.position_error_sum[ids] = 0.0
        if self._randomize:
            self._randomize_parameters(ids)

    def _randomize_parameters(self, ids: np.ndarray) -> None:
        r = self.cfg.randomization
        n = ids.size
        self.mass_scale[ids] = self.rng.uniform(*r.mass_scale, n)
        self.kf_scale[ids] = self.rng.uniform(*r.kf_scale, n)
        self.motor_lag_s[ids] = self.rng.uniform(*r.motor_lag_s, n)
        mass = self.engine.model_field("body_mass")
        inertia = self.engine.model_field("body_inertia")
        mass[ids, BASE_BODY] = self._nominal_mass * self.mass_scale[ids]
        inertia[ids, BASE_BODY] = self._nominal_inertia * self.mass_scale[ids, None]
        dynprm = self.engine.model_field("actuator_dynprm")
        dynprm[ids, :, 0] = np.maximum(self.motor_lag_s[ids, None], 1e-6)
        self.engine.commit_model(ids)
