"""The G1 itself, shared by the G1 tasks (`G1Env`): the robot on a floor commanded by
joint position targets (q_target = default + action_scale * action, 50 Hz over 200 Hz
physics), calibrated and randomized, with its terms; its parts, one module each, are
listed in docs/tasks.md ("Shared parts"). A task's external forces act on the torso and
both hands (`apply_external_forces`), and the FAT2 reward asks the robot to lean into them.
"""

from __future__ import annotations

from typing import ClassVar

import mujoco
import numpy as np

from simreal.robots.g1 import JOINT_NAMES, build_mjcf
from simreal.robots.g1.contacts import SelfPenetration
from simreal.tasks.env import TaskEnv
from simreal.tasks.g1 import native_actuation, randomization, rewards
from simreal.tasks.g1.actuation import G1Actuation
from simreal.tasks.g1.calibration import read_calibration
from simreal.tasks.g1.config import G1Config
from simreal.tasks.g1.events import EVENTS
from simreal.tasks.g1.model import read_model
from simreal.tasks.g1.observations import (
    POLICY_OBSERVATION,
    POLICY_TERMS,
    PRIVILEGED_OBSERVATION,
    PRIVILEGED_TERMS,
    G1Reading,
)
from simreal.tasks.g1.sensing import ROBOT_QPOS, G1Sensing
from simreal.tasks.g1.terminations import TERMINATIONS
from simreal.tasks.terms import noise_scale, observe

ACTION_GROUPS: dict[str, tuple[int, ...]] = {
    "lower": tuple(range(0, 12)),
    "waist": (12, 13, 14),
    "upper": tuple(range(15, 29)),
}
"""Decoupled-body actor groups, indices in SDK order: legs, waist, arms."""

G1_ACTION_CLIP = 5.0
"""Actions may reach +-5: with action scale 0.25 x torque limit / kp, |a| = 4 asks for the
full torque from the default pose (why not +-1: docs/findings.md, G1)."""


class G1Env(G1Sensing, G1Actuation, TaskEnv):
    """The G1 on a floor, commanded by joint position targets; the task subclass adds its
    loads (its events, `apply_external_forces`, `episode_metrics`) and may extend the
    scene (`scene_mjcf`)."""

    robot = "g1"
    """`simreal eval --video` follows the pelvis from 3.5 m."""
    policy_terms = POLICY_TERMS
    critic_observation_layout = POLICY_OBSERVATION + PRIVILEGED_OBSERVATION
    action_groups: ClassVar[dict[str, tuple[int, ...]]] = ACTION_GROUPS
    reward_terms = rewards.REWARDS
    termination_terms = TERMINATIONS
    event_terms = EVENTS
    command_fields: ClassVar[tuple[str, ...]] = ("q",)
    action_clip = G1_ACTION_CLIP
    observe_after_resets = True  # noise only in training; g1-pull's command is recomputed

    metric_reductions: ClassVar[dict[str, str]] = {"self_penetration_m": "max"}
    """`simreal eval` reports the deepest self-penetration of any episode, not the mean."""

    def __init__(
        self,
        cfg: G1Config,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
    ):
        cfg.validate()
        self.native_motors = cfg.actuation == "native"
        """MuJoCo's own actuators take the command latency and the motor envelope
        (`G1Config.actuation`); they need mjbatch's per-simulation model fields."""
        if self.native_motors and engine != "mjbatch":
            raise ValueError(
                f"task.actuation='native' runs on the mjbatch engine only, got engine {engine!r}"
            )
        self.cfg = cfg
        self.decimation = cfg.decimation
        self.max_episode_steps = cfg.max_episode_steps
        mjcf = self.scene_mjcf(cfg)
        super().__init__(mjcf, num_envs, engine, seed, num_threads)
        self.randomize = cfg.randomize and not cfg.evaluation
        model = mujoco.MjModel.from_xml_string(mjcf)
        self._read_model(model)
        self.overlay = cfg.load_calibration()
        read_calibration(self, self.overlay)
        s = num_envs
        self.action = np.zeros((s, 29))
        self.last_action = np.zeros((s, 29))
        self.ctrl_target = np.tile(self.default_joint_pos, (s, 1))
        self.prev_ctrl_target = self.ctrl_target.copy()
        self.joint_offset = np.tile(self.cal_joint_offset, (s, 1))
        self.kp_scale = np.tile(self.cal_kp_scale, (s, 1))
        self.kd_scale = np.tile(self.cal_kd_scale, (s, 1))
        self.motor_strength = np.tile(self.cal_motor_strength, (s, 1))
        r = cfg.randomization
        self.coulomb_range = randomization.friction_range(
            r.joint_frictionloss_n_m, self.cal_frictionloss
        )
        self.viscous_range = randomization.friction_range(r.joint_damping_n_m_s, self.cal_damping)
        """(2, 29) low and high joint friction each training reset draws from."""
        self.joint_frictionloss = np.tile(self.coulomb_range.mean(axis=0), (s, 1))
        self.joint_damping = np.tile(self.viscous_range.mean(axis=0), (s, 1))
        """(N, 29) Coulomb (dof_frictionloss, N m) and viscous (dof_damping, N m s/rad)
        joint friction: the middle of the randomized range (evaluation) or a draw from it
        (training resets)."""
        self.latency_substeps = np.full(s, self.cal_latency_substeps)
        """Command latency in physics steps, fractional: a command takes effect part-way
        through a physics step (`actuation.py`), as on the robot and the virtual robot."""
        self.friction = np.ones(s)
        self.torso_added_mass = np.zeros(s)
        self.torso_com_offset = np.zeros((s, 3))
        self.next_push_s = np.full(s, np.inf)
        self.external_force = np.zeros((s, 3, 3))
        self.peak_force_n = np.zeros(s)
        self.foot_pos = np.zeros((s, 2, 3))
        self.foot_vel = np.zeros((s, 2, 3))
        self.torso_rot = np.tile(np.eye(3), (s, 1, 1))
        self.run_events("startup", np.arange(s))
        self.self_penetration_m = np.zeros(s)
        self._penetration = None
        self._sensor_views: dict[str, np.ndarray] = {}
        if cfg.evaluation:
            self.set_friction(cfg.eval_friction)
            self._penetration = SelfPenetration(model)

    def set_friction(self, mu: float) -> None:
        """Floor and soles at `mu` in every simulation: evaluation's condition (it has no
        randomization), and a probe's nominal one."""
        field = self.engine.model_field("geom_friction")
        field[:, self.friction_geom_ids, 0] = mu
        self.friction[:] = mu
        self.engine.commit_model()

    def evaluation_conditions(self) -> dict:
        return {
            **super().evaluation_conditions(),
            "integrator": self.cfg.integrator,
            "foot_friction": self.cfg.eval_friction if self.cfg.evaluation else None,
            "self_collision": self.cfg.self_collision,
            "terrain": "flat",
            "motor_envelope": self.cfg.motor_envelope,
            "actuation": self.cfg.actuation,
            "joint_frictionloss_n_m": _summary(self.joint_frictionloss),
            "joint_damping_n_m_s": _summary(self.joint_damping),
        }

    def scene_mjcf(self, cfg: G1Config) -> str:
        """The MuJoCo scene: the G1 on a floor (its body may touch the floor when it falls)."""
        return build_mjcf(
            cfg.physics_dt,
            body_floor_contact=True,
            visual_geoms=cfg.evaluation,
            integrator=cfg.integrator,
            self_collision=cfg.self_collision,
            terrain=self.terrain_mjcf(),
            native_motors=self.native_motors,
            motor_envelope=cfg.motor_envelope,
        )

    def terrain_mjcf(self) -> tuple[str, str] | None:
        """The floor as a height field (`build_mjcf`'s `terrain`); None: a plane."""
        return None

    def _read_model(self, model: mujoco.MjModel) -> None:
        """Ids, nominal model fields, PD tables and the FAT2 reference geometry
        (`model.py`); a task reads its scene's own ids after these."""
        read_model(self, model)

    # -- one step ---------------------------------------------------------------------
    def simulate(self) -> None:
        self.actuate()

    def after_physics(self) -> None:
        self.update_kinematics()

    def apply_external_forces(self, t: np.ndarray) -> None:
        """Set `external_force` (N, 3 bodies, 3) for the coming control period at episode
        times t and apply what the task applies; the base G1 has none."""

    def record_external_force(self) -> None:
        """Keep the largest total external force of each episode (peak_force_n)."""
        total = np.linalg.norm(self.external_force.sum(axis=1), axis=1)
        self.peak_force_n = np.maximum(self.peak_force_n, total)

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        reading = G1Reading(self.sensors, self.default_joint_pos, self.action)
        obs = observe(POLICY_TERMS, reading)
        critic = np.concatenate([obs, observe(PRIVILEGED_TERMS, self)], axis=1)
        if self.randomize:
            scale = noise_scale(POLICY_TERMS, self.cfg.randomization).astype(np.float32)
            obs = obs + self.rng.normal(size=obs.shape).astype(np.float32) * scale
        return obs, critic

    def after_step(self) -> None:
        """In evaluation, how deep the robot's geoms sink into each other."""
        if self._penetration is not None:
            depth = self._penetration(self.engine.qpos)
            np.maximum(self.self_penetration_m, depth, out=self.self_penetration_m)

    @property
    def fell(self) -> np.ndarray:
        """(N,) bool: the "fall" termination at the last step (`terminations.py`)."""
        return self.terminations["fall"]

    def ended_in_fall(self, ids: np.ndarray) -> np.ndarray:
        """Episodes of `ids` ending now that failed: a fall, or any end before the time limit
        (a diverged simulation)."""
        return self.fell[ids] | (self.episode_step[ids] < self.max_episode_steps)

    # -- resets -----------------------------------------------------------------------
    def reset_state(self, ids: np.ndarray) -> None:
        n = ids.size
        qpos = np.tile(self.stand_qpos, (n, 1))
        if not self.cfg.evaluation:
            noise = self.rng.uniform(-1.0, 1.0, (n, 29)) * self.cfg.reset_joint_noise_rad
            q = qpos[:, 7 : ROBOT_QPOS.stop]
            q[:] = np.clip(q + noise, self.soft_lower, self.soft_upper)
        self.place_on_ground(ids, qpos)
        self.engine.reset(ids, qpos, np.zeros((n, self.engine.qvel.shape[1])))
        self.action[ids] = 0.0
        self.last_action[ids] = 0.0
        self.external_force[ids] = 0.0
        self.peak_force_n[ids] = 0.0
        self.fell[ids] = False
        self.self_penetration_m[ids] = 0.0

    def after_reset(self, ids: np.ndarray) -> None:
        """After the reset events (`events.py`): the PD loop holds the default pose as the
        (randomized) encoders read it, and the link poses follow the new state."""
        self.ctrl_target[ids] = self.default_joint_pos - self.joint_offset[ids]
        self.prev_ctrl_target[ids] = self.ctrl_target[ids]
        self.engine.ctrl[ids] = self.ctrl_target[ids]
        if self.native_motors:  # a delayed command of the last episode must not act
            native_actuation.hold_in_history(self, ids, self.ctrl_target[ids])
        self.update_kinematics(ids)

    def place_on_ground(self, ids: np.ndarray, qpos: np.ndarray) -> None:
        """Where new episodes start: edit the rows of `qpos` (len(ids), nq) in place before
        they are written. The G1 stands at the origin of the flat floor; `g1-walk` puts
        it somewhere on its rough ground, facing any way."""

    def baseline_policy(self, name: str):
        """`stand`: zero actions, i.e. the PD loop holding the default pose; the floor any
        trained balance policy must beat."""
        if name != "stand":
            raise ValueError(f"{type(self).__name__}: unknown baseline {name!r}; available: stand")
        return self.zero_action_policy()

    def deployment_metadata(self) -> dict:
        """The ONNX metadata a deployment needs: joint order, default pose, action scale
        and PD gains (a command is default + action_scale * action)."""
        return {
            **super().deployment_metadata(),
            "robot": "g1",
            "joint_names": list(JOINT_NAMES),
            "default_joint_pos": self.default_joint_pos.tolist(),
            "action_scale": self.action_scale.tolist(),
            "kp": self.kp.tolist(),
            "kd": self.kd.tolist(),
        }


def _summary(values: np.ndarray) -> dict[str, float]:
    """Smallest, mean and largest of a per-joint table, for an evaluation's conditions."""
    stats = {"min": values.min(), "mean": values.mean(), "max": values.max()}
    return {name: round(float(value), 6) for name, value in stats.items()}
