"""The Crazyflie task base: RPM actions to MuJoCo thrust controls, aerodynamics, randomization."""

from __future__ import annotations

import dataclasses
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
from simreal.tasks.env import TaskEnv
from simreal.tasks.quadrotor import airframe
from simreal.tasks.quadrotor.config import QuadRandomization, QuadrotorConfig
from simreal.tasks.quadrotor.observations import PRIVILEGED_TERMS
from simreal.tasks.quadrotor.state import QuadState
from simreal.tasks.rotations import quat_from_roll_pitch_yaw, quat_to_matrix, roll_pitch
from simreal.tasks.terms import EventTerm, ObservationTerm, noise_scale, observe

BASE_BODY = 1
EVALUATION_STREAM = 0x7E57
"""An evaluation's generator is seeded by [its seed, this tag]: a stream that no training
generator (seeded by the training seed alone) draws from, so evaluation airframes, wind
and references never repeat training draws, whichever seeds the two were given."""
RPM_TO_RAD_S = 2.0 * np.pi / 60.0


def randomize_airframe(env, ids: np.ndarray) -> None:
    """New airframe and motor scales, motor lag and command latency for simulations `ids`
    (`airframe.sample`), written into their model; with sub-step latency its physics
    steps, and with gusts a wind force from their stationary distribution (gusts are
    already blowing)."""
    drawn = airframe.sample(env.rng, env.cfg.randomization, (ids.size, 1))
    for name, values in env.scales.items():
        values[ids] = drawn[name][:, 0]
    env.motor_lag_s[ids] = drawn["motor_lag_s"][:, 0]
    env.latency_steps[ids] = drawn["latency_steps"][:, 0]
    env._nominal.write(env.engine, ids, drawn)
    if env.late:
        low, high = env.cfg.randomization.latency_physics_steps
        env.latency_physics_steps[ids] = env.rng.integers(low, high + 1, ids.size)
    if env.gusty:
        std = env.cfg.randomization.wind_gust_std_n
        env.wind_force[ids] = env.rng.normal(0.0, std, (ids.size, 3))


EVENTS = (EventTerm("airframe", randomize_airframe, "reset", randomization=True),)
"""The Crazyflie tasks' events: the airframe randomized at resets (training, and
evaluation with `eval_randomize`)."""


class QuadrotorEnv(TaskEnv):
    """Per-motor RPM control of a Crazyflie; one action group, `motors`.

    Subclasses define the observation (`policy_terms`, read from the task's reading),
    rewards, terminations beyond tilting over, and the evaluation start (`start_pose`).
    """

    policy_terms: tuple[ObservationTerm, ...]

    robot = "crazyflie"
    action_groups: ClassVar[dict[str, tuple[int, ...]]] = {"motors": (0, 1, 2, 3)}
    event_terms = EVENTS
    command_fields: ClassVar[tuple[str, ...]] = ("rpm",)
    command_tracks: ClassVar[tuple[str, float]] = ("velocity", RPM_TO_RAD_S)

    def __init__(
        self,
        cfg: QuadrotorConfig,
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
        mjcf = build_mjcf(self.params, physics_dt=1.0 / cfg.physics_hz)
        super().__init__(mjcf, num_envs, engine, seed, num_threads)
        if cfg.evaluation:
            self.rng = np.random.default_rng([seed, EVALUATION_STREAM])
        self.action = np.zeros((num_envs, 4))
        self.last_action = np.zeros((num_envs, 4))
        self.rpm = np.zeros((num_envs, 4))
        self.randomize = cfg.randomization.enabled and (not cfg.evaluation or cfg.eval_randomize)
        names = ("mass_scale", "inertia_scale", "kf_scale", "km_scale")
        self.scales = {name: np.ones(num_envs) for name in names}
        self.motor_lag_s = np.zeros(num_envs)
        self.latency_steps = np.zeros(num_envs, dtype=np.int64)
        depth = cfg.randomization.latency_steps[1] + 1
        self.action_queue = np.zeros((depth, num_envs, 4))
        """Past actions, newest first: row k is what the policy sent k steps ago."""
        self.wind_force = np.zeros((num_envs, 3))
        """World-frame wind force (N) on each airframe, held over a control period."""
        self.gusty = self.randomize and cfg.randomization.wind_gust_std_n > 0
        self.latency_physics_steps = np.zeros(num_envs, dtype=np.int64)
        self.late = self.randomize and cfg.randomization.latency_physics_steps[1] > 0
        self.held_thrust = np.zeros((num_envs, 4))
        """Thrust commanded in the previous control period: what the motors fly until a
        late command arrives (`latency_physics_steps`)."""
        self._nominal = airframe.Nominal(self.engine, np.array([BASE_BODY]))

    @property
    def state(self) -> QuadState:
        return QuadState.from_free_joint(self.engine.qpos, self.engine.qvel)

    def start_pose(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(n, 7) qpos and (n, 6) qvel of the evaluation start."""
        raise NotImplementedError

    def random_pose(self, qpos: np.ndarray, qvel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A random training start in the air, given the evaluation starts of the same rows."""
        raise NotImplementedError

    def apply_action(self, action: np.ndarray) -> None:
        self.last_action[:] = self.action
        self.action[:] = action
        self.action_queue = np.roll(self.action_queue, 1, axis=0)
        self.action_queue[0] = action
        delayed = self.action_queue[self.latency_steps, np.arange(self.num_envs)]
        self.apply_command(self.command_from_action(delayed))

    def command_from_action(self, action: np.ndarray) -> np.ndarray:
        """(N, 4) motor speeds (RPM) commanded by actions in [-1, 1]: the low-level command."""
        rpm = self.params.hover_rpm * (1.0 + self.cfg.action_rpm_scale * action)
        return np.clip(rpm, 0.0, self.params.max_rpm)

    def apply_command(self, command: np.ndarray) -> None:
        """Drive the motors at `command` (N, 4) RPM until the next command."""
        self.rpm[:] = command
        kf = self.params.kf * self.scales["kf_scale"][:, None]
        self.engine.ctrl[:] = motor_thrust(self.rpm, kf)

    def joint_state(self) -> tuple[None, np.ndarray, None]:
        """Measured rotor speeds (N, 4) in rad/s, from the motor filter's thrust; a rotor's
        angle and torque are not measured."""
        kf = self.params.kf * self.scales["kf_scale"][:, None]
        rpm = np.sqrt(np.maximum(self.engine.act, 0.0) / kf)
        return None, rpm * RPM_TO_RAD_S, None

    def simulate(self) -> None:
        if self.gusty:
            self.wind_force[:] = gust_step(
                self.rng, self.wind_force, self.cfg.randomization, self.control_dt
            )
        aerodynamics = self.cfg.physics.ground_effect or self.cfg.physics.drag
        if not (aerodynamics or self.late):
            if self.gusty:
                self.engine.xfrc_applied[:, BASE_BODY, :3] = self.wind_force
            self.step_physics(self.decimation)
            return
        thrust = self.engine.ctrl.copy()
        for k in range(self.decimation):
            if self.late:
                waiting = (k < self.latency_physics_steps)[:, None]
                self.engine.ctrl[:] = np.where(waiting, self.held_thrust, thrust)
            wrench = self.aerodynamic_wrench() if aerodynamics else np.zeros((self.num_envs, 6))
            wrench[:, :3] += self.wind_force
            self.engine.xfrc_applied[:, BASE_BODY] = wrench
            self.step_physics(1)
        self.held_thrust[:] = thrust

    def aerodynamic_wrench(self) -> np.ndarray:
        """(N, 6) world-frame force and torque at the centre of mass from enabled terms."""
        state = self.state
        rot = quat_to_matrix(state.base_quat)
        wrench = np.zeros((self.num_envs, 6))
        if self.cfg.physics.ground_effect:
            offsets = np.einsum("nij,kj->nki", rot, np.asarray(self.params.rotor_offsets))
            heights = state.base_pos[:, None, 2] + offsets[:, :, 2]
            kf = self.params.kf * self.scales["kf_scale"][:, None]
            extra = ground_effect_thrust(self.rpm, heights, kf, self.params)
            roll, pitch = roll_pitch(state.base_quat)
            extra *= ((np.abs(roll) < np.pi / 2) & (np.abs(pitch) < np.pi / 2))[:, None]
            forces = extra[:, :, None] * rot[:, None, :, 2]  # along body z, (N, 4, 3)
            wrench[:, :3] += forces.sum(axis=1)
            wrench[:, 3:] += np.cross(offsets, forces).sum(axis=1)
        if self.cfg.physics.drag:
            wrench[:, :3] += drag_force(self.rpm, state.base_lin_vel, rot, self.params)
        return wrench

    def observe_with(self, reading) -> tuple[np.ndarray, np.ndarray]:
        """Policy observation of `reading` from `policy_terms` (noisy when randomizing)
        and critic observation (clean, then the privileged terms)."""
        obs = observe(self.policy_terms, reading)
        critic = np.concatenate([obs, observe(PRIVILEGED_TERMS, self)], axis=1)
        if self.randomize and self.cfg.randomization.obs_noise_std > 0:
            scale = noise_scale(self.policy_terms, self.cfg.randomization)
            obs = obs + (self.rng.normal(size=obs.shape) * scale).astype(np.float32)
        return obs, critic

    def latency_control_steps(self) -> np.ndarray:
        """(N,) each drone's command latency in control periods, whole and sub-step."""
        return self.latency_steps + self.latency_physics_steps / self.decimation

    def tilted_over(self) -> np.ndarray:
        roll, pitch = roll_pitch(self.state.base_quat)
        return (np.abs(roll) > self.cfg.max_tilt) | (np.abs(pitch) > self.cfg.max_tilt)

    def deployment_metadata(self) -> dict:
        return {**super().deployment_metadata(), **motor_metadata(self.params, self.cfg)}

    def reset_state(self, ids: np.ndarray) -> None:
        qpos, qvel = self.start_pose(ids.size)
        if not self.cfg.evaluation and self.cfg.random_init_fraction > 0:
            air = self.rng.random(ids.size) < self.cfg.random_init_fraction
            qpos[air], qvel[air] = self.random_pose(qpos[air], qvel[air])
        self.engine.reset(ids, qpos, qvel)
        self.action[ids] = 0.0
        self.last_action[ids] = 0.0
        self.action_queue[:, ids] = 0.0

    def after_reset(self, ids: np.ndarray) -> None:
        """After the reset events: the thrust held at hover with the (randomized) motors."""
        hover = np.full((ids.size, 4), self.params.hover_rpm)
        self.held_thrust[ids] = motor_thrust(
            hover, self.params.kf * self.scales["kf_scale"][ids, None]
        )

    def random_tilted_quat(self, n: int, max_tilt: float = 0.2) -> np.ndarray:
        tilt = self.rng.uniform(-max_tilt, max_tilt, (n, 2))
        return quat_from_roll_pitch_yaw(tilt[:, 0], tilt[:, 1], self.rng.uniform(-np.pi, np.pi, n))

    def evaluation_conditions(self) -> dict:
        """The randomization the numbers hold under: none, or the training ranges drawn
        again from the evaluation's seed (`eval_randomize`)."""
        conditions = {**super().evaluation_conditions(), "randomized": self.randomize}
        if self.randomize:
            conditions["randomization"] = dataclasses.asdict(self.cfg.randomization)
        return conditions


def gust_step(
    rng: np.random.Generator, force: np.ndarray, r: QuadRandomization, dt: float
) -> np.ndarray:
    """The wind force `dt` seconds later: an exact Ornstein-Uhlenbeck step, so the force
    keeps its standard deviation and forgets its past over `wind_gust_tau_s`."""
    keep = np.exp(-dt / r.wind_gust_tau_s)
    return keep * force + r.wind_gust_std_n * np.sqrt(1.0 - keep**2) * rng.normal(size=force.shape)


def motor_metadata(params: CrazyflieParams, cfg: QuadrotorConfig) -> dict:
    """A drone's "joints" are its motors: commands are RPM, default is hover, no PD."""
    hover = params.hover_rpm
    return {
        "robot": "crazyflie",
        "joint_names": list(MOTOR_NAMES),
        "default_joint_pos": [hover] * 4,
        "action_scale": [cfg.action_rpm_scale * hover] * 4,
        "kp": [],
        "kd": [],
    }


def rest_pose(n: int, position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """n drones level and at rest at `position` (3,)."""
    qpos = np.zeros((n, 7))
    qpos[:, 0:3] = position
    qpos[:, 3] = 1.0
    return qpos, np.zeros((n, 6))
