"""The G1 itself, shared by the G1 tasks (`G1Env`): actions, the calibrated and randomized
robot, observations, rewards and falls; `g1-force` adds random external forces, `g1-pull`
a towed load.

Actions are PD targets: q_target = default + action_scale * action through the model's
position actuators at 50 Hz over 200 Hz physics; MuJoCo clips the torques at the motors'
torque-speed envelope, rewritten before every physics step (`motor_torque_range`). A task's external forces act on the torso and both hands
(`apply_external_forces`), and the FAT2 reward asks the robot to lean into them.

With `cfg.calibration` (a G1 calibration overlay) the simulated robot is the calibrated
one, applied as the virtual robot applies it (`simreal.deploy.g1.sim_robot`): encoders
report q + offset and the PD loop closes on them, kp, kd and torque limits carry the
overlay's scales, armature, Coulomb (dof_frictionloss) and viscous (dof_damping)
friction are set per simulation, commands arrive the overlay's latency late (to a
fraction of a physics step: the step in which a command lands blends the old and new
targets in proportion) and the gyro reads its bias. Domain randomization is centred on these
values. The accelerometer bias is kept (`accel_bias`) but enters no observation: the
policy reads gravity from the IMU's orientation.
"""

from __future__ import annotations

from typing import ClassVar

import mujoco
import numpy as np

from simreal.robots.g1 import (
    ACTUATORS,
    DEFAULT_JOINT_POS,
    FEET,
    JOINT_NAMES,
    JOINTS,
    SOLE,
    build_mjcf,
)
from simreal.robots.g1.actuators import (
    MOTOR_CONSTANT,
    VELOCITY_LIMITS,
    driver_resistance,
    torque_speed_range,
)
from simreal.robots.g1.contacts import SelfPenetration
from simreal.robots.g1.mjcf import LOAD_BODIES, SELF_CONTACT_SENSOR
from simreal.robots.g1.overlay import Overlay
from simreal.sim.engine import sensor_view
from simreal.tasks.env import TaskEnv
from simreal.tasks.g1 import rewards
from simreal.tasks.g1.config import G1Config
from simreal.tasks.g1.fat2 import fat2_target_tilt, torso_lean
from simreal.tasks.g1.kinematics import LinkChains
from simreal.tasks.g1.observations import (
    POLICY_OBSERVATION,
    POLICY_TERMS,
    PRIVILEGED_OBSERVATION,
    PRIVILEGED_TERMS,
    G1Reading,
    G1State,
)
from simreal.tasks.rotations import projected_gravity, quat_to_matrix
from simreal.tasks.terms import noise_scale, observe

ACTION_GROUPS: dict[str, tuple[int, ...]] = {
    "lower": tuple(range(0, 12)),
    "waist": (12, 13, 14),
    "upper": tuple(range(15, 29)),
}
"""Decoupled-body actor groups, indices in SDK order: legs, waist, arms."""

SOFT_LIMIT_FRACTION = 0.9
CONTACT_HEIGHT_M = 0.02
MAX_BASE_HEIGHT_M = 2.0
"""A pelvis thrown above this counts as a fall too."""
_SOLE_BOTTOM = np.array([SOLE.center[0], SOLE.center[1], SOLE.center[2] - SOLE.half_size[2]])
_TORSO = LinkChains(["torso_link"])
_FEET = LinkChains(list(FEET))
ROBOT_QPOS = slice(0, 7 + 29)
ROBOT_QVEL = slice(0, 6 + 29)
"""The robot's free joint and 29 joints lead qpos and qvel; a scene's other bodies follow."""


G1_ACTION_CLIP = 5.0
"""Actions may reach +-5: with action scale 0.25 x torque limit / kp, |a| = 4 asks for the
full torque from the default pose. At +-1 (the generic clip) an ankle could lean on at
most a quarter of its torque and a hip could swing 0.2 rad, too little to step or to lean
into a large load. As in legged_gym and mjlab, the Gaussian mean is otherwise unbounded."""


class G1Env(TaskEnv):
    """The G1 on a floor, commanded by joint position targets; the task subclass adds its
    loads (`apply_external_forces`, `reset_loads`, `episode_metrics`) and may extend the
    scene (`scene_mjcf`)."""

    robot = "g1"
    """`simreal eval --video` follows the pelvis from 3.5 m."""
    policy_terms = POLICY_TERMS
    critic_observation_layout = POLICY_OBSERVATION + PRIVILEGED_OBSERVATION
    action_groups: ClassVar[dict[str, tuple[int, ...]]] = ACTION_GROUPS
    reward_terms = rewards.REWARDS
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
        self._read_calibration(self.overlay)
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
        self.coulomb_range = _friction_range(r.joint_frictionloss_n_m, self.cal_frictionloss)
        self.viscous_range = _friction_range(r.joint_damping_n_m_s, self.cal_damping)
        """(2, 29) low and high joint friction each training reset draws from."""
        self.joint_frictionloss = np.tile(self.coulomb_range.mean(axis=0), (s, 1))
        self.joint_damping = np.tile(self.viscous_range.mean(axis=0), (s, 1))
        """(N, 29) Coulomb (dof_frictionloss, N m) and viscous (dof_damping, N m s/rad)
        joint friction: the middle of the randomized range (evaluation) or a draw from it
        (training resets)."""
        self.latency_substeps = np.full(s, self.cal_latency_substeps)
        """Command latency in physics steps, fractional: a command takes effect part-way
        through a physics step (see `simulate`), as on the robot and the virtual robot."""
        self.friction = np.ones(s)
        self.torso_added_mass = np.zeros(s)
        self.torso_com_offset = np.zeros((s, 3))
        self.next_push_s = np.full(s, np.inf)
        self.external_force = np.zeros((s, 3, 3))
        self.peak_force_n = np.zeros(s)
        self.fell = np.zeros(s, dtype=bool)
        self.foot_pos = np.zeros((s, 2, 3))
        self.foot_vel = np.zeros((s, 2, 3))
        self.torso_rot = np.tile(np.eye(3), (s, 1, 1))
        self._apply_calibration()
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
        """Ids, nominal model fields, PD tables and the FAT2 reference geometry."""
        pelvis = model.body("pelvis").id
        self.robot_body = model.body_rootid == pelvis
        """(nbody,) bool: the G1's own bodies (the ones link-mass randomization scales)."""
        self.force_body_ids = np.array([model.body(n).id for n in LOAD_BODIES])
        self.friction_geom_ids = np.array(
            [model.geom("floor").id, *(model.geom(g).id for g in FEET.values())]
        )
        self.torso_id = int(model.body("torso_link").id)
        self.joint_dof_ids = np.array([model.jnt_dofadr[model.joint(n).id] for n in JOINT_NAMES])
        self.history_columns = _history_value_columns(model)
        """(29, nsample) columns of MuJoCo's `history` holding each joint actuator's ctrl
        samples (native motors; empty where the actuators keep no history)."""
        self.nominal = {
            name: getattr(model, name).copy()
            for name in (
                "body_mass",
                "body_inertia",
                "body_ipos",
                "geom_friction",
                "actuator_gainprm",
                "actuator_biasprm",
                "actuator_forcerange",
                "dof_armature",
                "dof_frictionloss",
                "dof_damping",
            )
        }
        acts = [ACTUATORS[n] for n in JOINT_NAMES]
        self.default_joint_pos = np.asarray(DEFAULT_JOINT_POS)
        self.action_scale = np.array([a.action_scale for a in acts])
        self.kp = np.array([a.kp for a in acts])
        self.kd = np.array([a.kd for a in acts])
        self.torque_limit = np.array([a.torque_limit for a in acts])
        lower = np.array([JOINTS[n].lower for n in JOINT_NAMES])
        upper = np.array([JOINTS[n].upper for n in JOINT_NAMES])
        self.joint_lower, self.joint_upper = lower, upper
        mid, half = (lower + upper) / 2, (upper - lower) / 2
        self.soft_lower = mid - SOFT_LIMIT_FRACTION * half
        self.soft_upper = mid + SOFT_LIMIT_FRACTION * half
        data = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
        mujoco.mj_forward(model, data)
        self.stand_qpos = data.qpos.copy()
        self.stand_height = float(data.qpos[2])
        com = data.subtree_com[pelvis].copy()
        origin = np.array([com[0], com[1], 0.0])
        self.fat2_com = com - origin
        self.fat2_points = data.xipos[self.force_body_ids] - origin
        self.mass = float(model.body_subtreemass[pelvis])

    def _read_calibration(self, overlay: Overlay) -> None:
        """Per-joint (29,) calibrated values, SDK order: the centre of the randomization."""
        joints = [overlay.joint(n) for n in JOINT_NAMES]
        dofs = self.joint_dof_ids
        self.cal_joint_offset = np.array([j.encoder_offset for j in joints])
        self.cal_kp_scale = np.array([j.kp_scale for j in joints])
        self.cal_kd_scale = np.array([j.kd_scale for j in joints])
        self.cal_motor_strength = np.array([j.torque_limit_scale for j in joints])
        self.cal_armature = np.array(
            [
                nominal if j.armature is None else j.armature
                for j, nominal in zip(joints, self.nominal["dof_armature"][dofs], strict=True)
            ]
        )
        self.cal_frictionloss = np.array(
            [np.nan if j.friction_coulomb is None else j.friction_coulomb for j in joints]
        )
        self.cal_damping = np.array(
            [np.nan if j.friction_viscous is None else j.friction_viscous for j in joints]
        )
        """NaN where the overlay leaves a joint's friction nominal."""
        self.cal_latency_substeps = overlay.latency_ms / (self.cfg.physics_dt * 1e3)
        self.gyro_bias = np.array(overlay.gyro_bias)
        self.accel_bias = np.array(overlay.accel_bias)

    def _apply_calibration(self) -> None:
        """Write the calibrated armature, joint friction and PD/limit tables into every
        simulation."""
        ids = np.arange(self.num_envs)
        field, dofs = self.engine.model_field, self.joint_dof_ids
        for name, values in (
            ("dof_armature", self.cal_armature),
            ("dof_frictionloss", self.joint_frictionloss),
            ("dof_damping", self.joint_damping),
        ):
            field(name)[:, dofs] = values
        self._write_actuators(ids)
        self._write_delays(ids)
        self.engine.commit_model(ids)

    def _latency_range(self) -> tuple[float, float]:
        """The latency range in physics steps; with a calibration it keeps its width and is
        centred on the calibrated latency (clipped at 0)."""
        low, high = self.cfg.randomization.latency_substeps
        if self.cfg.calibration is None:
            return float(low), float(high)
        centre, half = self.cal_latency_substeps, (high - low) / 2
        return max(0.0, centre - half), max(0.0, centre + half)

    # -- state ------------------------------------------------------------------------
    @property
    def joint_pos(self) -> np.ndarray:
        """True joint angles (N, 29), SDK order (the model's qpos order)."""
        return self.engine.qpos[:, 7 : ROBOT_QPOS.stop]

    @property
    def joint_vel(self) -> np.ndarray:
        return self.engine.qvel[:, 6 : ROBOT_QVEL.stop]

    @property
    def sensors(self) -> G1State:
        """What the robot measures (encoders carry their offsets), noise-free."""
        return G1State(
            self.engine.qpos[:, 3:7],
            self.engine.qvel[:, 3:6] + self.gyro_bias,
            self.joint_pos + self.joint_offset,
            self.joint_vel,
        )

    def yaw(self) -> np.ndarray:
        """(N,) the pelvis' heading about the vertical (rad): atan2 of the rotation
        matrix's entries (1, 0) and (0, 0), from the quaternion without the whole matrix
        (the same expressions as `quat_to_matrix`)."""
        w, x, y, z = self.engine.qpos[:, 3:7].T
        return np.arctan2(2 * (x * y + w * z), 1 - 2 * (y * y + z * z))

    def heading_rot(self) -> np.ndarray:
        """(N, 3, 3) world from heading frame: the pelvis yaw only."""
        yaw = self.yaw()
        c, s = np.cos(yaw), np.sin(yaw)
        out = np.zeros((yaw.shape[0], 3, 3))
        out[:, 0, 0], out[:, 0, 1], out[:, 1, 0], out[:, 1, 1] = c, -s, s, c
        out[:, 2, 2] = 1.0
        return out

    def to_heading(self, vectors: np.ndarray) -> np.ndarray:
        """World vectors (N, ..., 3) in the heading frame: `heading_rot()` transposed
        applied, written out (a rotation about the vertical leaves z as it is)."""
        yaw = self.yaw().reshape((-1,) + (1,) * (vectors.ndim - 2))
        c, s = np.cos(yaw), np.sin(yaw)
        x, y = vectors[..., 0], vectors[..., 1]
        out = np.empty(vectors.shape)
        out[..., 0] = c * x + s * y
        out[..., 1] = -s * x + c * y
        out[..., 2] = vectors[..., 2]
        out += 0.0  # zeros come out +0, as from a sum of products (the byte-exact past)
        return out

    def fat2_target(self) -> np.ndarray:
        return fat2_target_tilt(
            self.to_heading(self.external_force),
            self.fat2_points,
            self.fat2_com,
            self.mass,
            self.cfg.fat2_max_tilt_rad,
        )

    def torso_lean(self) -> np.ndarray:
        return torso_lean(self.to_heading(self.torso_rot[:, :, 2]))

    def joint_torque(self) -> np.ndarray:
        """PD torque (N, 29) the actuators apply, clipped at the (randomized) limits and,
        with `motor_envelope`, at the torque the motors can give at their speed."""
        tau = self.kp * self.kp_scale * (self.acting_command() - self.joint_pos)
        tau -= self.kd * self.kd_scale * self.joint_vel
        lower, upper = self.motor_torque_range()
        return np.clip(tau, lower, upper)

    def acting_command(self) -> np.ndarray:
        """(N, 29) the command the motors act on in the control step's last physics step:
        the new target, or its blend with the previous one while a latency of more than
        decimation - 1 physics steps holds it back (the same blend `simulate` writes)."""
        old = np.clip(self.latency_substeps - (self.decimation - 1), 0.0, 1.0)[:, None]
        return _blend(old, self.prev_ctrl_target, self.ctrl_target)

    def motor_torque_range(self) -> tuple[np.ndarray, np.ndarray]:
        """(N, 29) lower and upper torque the motors can give now: the (randomized) torque
        limits, narrowed by the torque-speed envelope (`torque_speed_range`) when
        `cfg.motor_envelope`."""
        limit = self.torque_limit * self.motor_strength
        if not self.cfg.motor_envelope:
            return -limit, limit
        return torque_speed_range(self.joint_vel, limit, VELOCITY_LIMITS)

    def _limit_motors(self, limit: np.ndarray) -> None:
        """Write the motors' torque range at the current joint speeds into every simulation,
        before each physics step (MuJoCo clamps an actuator's force to its forcerange):
        `motor_torque_range` with the control step's torque `limit` (N, 29), computed
        straight into the engine's field. Why in place: this runs before every physics
        step, in the physics thread when groups overlap (tasks/overlap.py), where every
        temporary is time the GIL is held."""
        field = self.engine.model_field("actuator_forcerange")
        torque_speed_range(
            self.joint_vel, limit, VELOCITY_LIMITS, out=(field[:, :29, 0], field[:, :29, 1])
        )
        if not self.engine.live_model_fields:
            self.engine.commit_model()

    def ground_height(self, xy: np.ndarray) -> np.ndarray:
        """Height (...,) of the ground under points xy (..., 2): the flat floor at 0; a
        task on rough ground (`g1-walk`) looks it up in its height field."""
        return np.zeros(xy.shape[:-1])

    def base_height(self) -> np.ndarray:
        """(N,) pelvis height above the ground under it (m)."""
        qpos = self.engine.qpos
        return qpos[:, 2] - self.ground_height(qpos[:, 0:2])

    def foot_clearance(self) -> np.ndarray:
        """(N, 2) each sole's height above the ground under it (m)."""
        return self.foot_pos[..., 2] - self.ground_height(self.foot_pos[..., :2])

    def foot_contact(self) -> np.ndarray:
        return (self.foot_clearance() < CONTACT_HEIGHT_M).astype(float)

    def self_contacts(self) -> np.ndarray:
        """(N,) robot-robot contacts in each simulation at the last physics substep, from
        MuJoCo's contact sensor (`SELF_CONTACT_SENSOR`); only the `self_contact` reward
        reads it. With self-collision off the model has no such contacts (and no sensor):
        0, so a policy trained with the penalty still evaluates on the idealized body."""
        if not self.cfg.self_collision:
            return np.zeros(self.num_envs)
        return self.sensor(SELF_CONTACT_SENSOR)[:, 0]

    def sensor(self, name: str) -> np.ndarray:
        """Live (N, dim) view of MuJoCo sensor `name`, made on first use and kept: only the
        terms that read a sensor pay for the lookup, and other engines are refused only by
        the tasks that need one."""
        view = self._sensor_views.get(name)
        if view is None:
            view = self._sensor_views[name] = sensor_view(self.engine, name, type(self).__name__)
        return view

    def _update_kinematics(self, ids: np.ndarray | None = None) -> None:
        """Torso orientation and sole positions; sole velocity by difference over a control
        step. With `ids` (simulations just reset) only those rows, their sole velocity zero."""
        rows = slice(None) if ids is None else ids
        qpos = self.engine.qpos[rows]
        base_pos, base_rot = qpos[:, 0:3], quat_to_matrix(qpos[:, 3:7])
        q = qpos[:, 7 : ROBOT_QPOS.stop]
        torso_rot, _ = _TORSO.poses(base_pos, base_rot, q)
        rot, pos = _FEET.poses(base_pos, base_rot, q)
        feet_pos = pos + rot @ _SOLE_BOTTOM
        if ids is None:
            self.torso_rot = torso_rot[:, 0]
            self.foot_vel = (feet_pos - self.foot_pos) / self.control_dt
            self.foot_pos = feet_pos
        else:
            self.torso_rot[ids] = torso_rot[:, 0]
            self.foot_vel[ids] = 0.0
            self.foot_pos[ids] = feet_pos

    # -- actions ----------------------------------------------------------------------
    def apply_action(self, action: np.ndarray) -> None:
        self.last_action[:] = self.action
        self.action[:] = action
        self.apply_command(self.command_from_action(action))

    def command_from_action(self, action: np.ndarray) -> np.ndarray:
        """(N, 29) joint position targets (rad), SDK order: the low-level command's q, within
        the joint limits as the deploy node keeps it."""
        target = self.default_joint_pos + self.action_scale * action + self.reference_offset()
        return np.clip(target, self.joint_lower, self.joint_upper)

    def reference_offset(self) -> np.ndarray | float:
        """Joint-target offsets (N, 29) a task adds under the policy's (g1-pull's stepping
        reference); none here."""
        return 0.0

    def apply_command(self, command: np.ndarray) -> None:
        """The robot's PD loop tracks `command` against its measured (offset) angles."""
        self.prev_ctrl_target[:] = self.ctrl_target
        self.ctrl_target[:] = command - self.joint_offset

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.joint_pos + self.joint_offset, self.joint_vel.copy(), self.joint_torque()

    def simulate(self) -> None:
        t = self.episode_step * self.control_dt
        self.apply_external_forces(t)
        if self.randomize:
            self._push(t)
        late = self.latency_substeps
        envelope = self.cfg.motor_envelope
        if self.native_motors:
            self._simulate_native()
        elif late.any() or envelope:
            # Every substep's command at once, so the loop below only copies and steps.
            substep = np.arange(self.decimation, dtype=float)[:, None]
            old = np.clip(late - substep, 0.0, 1.0)[:, :, None]  # (substeps, N, 1)
            ctrl = _blend(old, self.prev_ctrl_target, self.ctrl_target)
            limit = self.torque_limit * self.motor_strength if envelope else None
            for sub in range(self.decimation):
                self.engine.ctrl[:] = ctrl[sub]
                if envelope:
                    self._limit_motors(limit)
                self.step_physics(1)
        else:
            self.engine.ctrl[:] = self.ctrl_target
            self.step_physics(self.decimation)

    def _simulate_native(self) -> None:
        """A control step with MuJoCo's own actuators: the new target into ctrl, their
        delays and envelope doing the rest in one engine call; where a latency is under
        one physics step (the native delay reads a command only from the step after it
        arrives), the first step runs on its own with the blend written by hand."""
        late, ctrl, target = self.latency_substeps, self.engine.ctrl, self.ctrl_target
        ctrl[:] = target
        early = np.flatnonzero((late > 0.0) & (late < 1.0))
        if early.size == 0:
            self.step_physics(self.decimation)
            return
        ctrl[early] = _blend(late[early, None], self.prev_ctrl_target[early], target[early])
        self.step_physics(1)
        ctrl[early] = target[early]
        if self.decimation > 1:
            self.step_physics(self.decimation - 1)

    def after_physics(self) -> None:
        self._update_kinematics()

    def apply_external_forces(self, t: np.ndarray) -> None:
        """Set `external_force` (N, 3 bodies, 3) for the coming control period at episode
        times t and apply what the task applies; the base G1 has none."""

    def record_external_force(self) -> None:
        """Keep the largest total external force of each episode (peak_force_n)."""
        total = np.linalg.norm(self.external_force.sum(axis=1), axis=1)
        self.peak_force_n = np.maximum(self.peak_force_n, total)

    def _push(self, t: np.ndarray) -> None:
        """Impulsive pushes: a random horizontal jump of the base velocity."""
        due = np.flatnonzero(t >= self.next_push_s)
        if due.size:
            r = self.cfg.randomization
            self.engine.qvel[due, 0:2] += self.rng.uniform(
                -r.push_vel_m_s, r.push_vel_m_s, (due.size, 2)
            )
            self.next_push_s[due] = t[due] + self.rng.uniform(*r.push_interval_s, due.size)

    # -- rewards, observations, terminations --------------------------------------------
    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        reading = G1Reading(self.sensors, self.default_joint_pos, self.action)
        obs = observe(POLICY_TERMS, reading)
        critic = np.concatenate([obs, observe(PRIVILEGED_TERMS, self)], axis=1)
        if self.randomize:
            obs = obs + self.rng.normal(size=obs.shape).astype(np.float32) * self._noise_scale()
        return obs, critic

    def _noise_scale(self) -> np.ndarray:
        return noise_scale(POLICY_TERMS, self.cfg.randomization).astype(np.float32)

    def after_step(self) -> None:
        """Remember whether each episode ends in a fall (`ended_in_fall`, the metrics) and,
        in evaluation, how deep the robot's geoms sink into each other."""
        self.fell = self.falls()
        if self._penetration is not None:
            depth = self._penetration(self.engine.qpos)
            np.maximum(self.self_penetration_m, depth, out=self.self_penetration_m)

    def terminated(self) -> np.ndarray:
        """The falls `after_step` found in this step's state (checked once per step)."""
        return self.fell.copy()

    def falls(self) -> np.ndarray:
        """Falls: pelvis low (or thrown high), tilted over, or a state that is not finite."""
        qpos = self.engine.qpos
        height = self.base_height()
        up_z = -projected_gravity(qpos[:, 3:7])[:, 2]
        tilt = np.arccos(np.clip(up_z, -1.0, 1.0))
        finite = np.isfinite(qpos).all(axis=1) & np.isfinite(self.engine.qvel).all(axis=1)
        return (
            ~finite
            | (height < self.cfg.fall_height_m)
            | (height > MAX_BASE_HEIGHT_M)
            | (tilt > self.cfg.fall_tilt_rad)
        )

    def ended_in_fall(self, ids: np.ndarray) -> np.ndarray:
        """Episodes of `ids` ending now that failed: a fall, or any end before the time limit
        (a diverged simulation)."""
        return self.fell[ids] | (self.episode_step[ids] < self.max_episode_steps)

    # -- resets and randomization -------------------------------------------------------
    def reset_state(self, ids: np.ndarray) -> None:
        n = ids.size
        qpos = np.tile(self.stand_qpos, (n, 1))
        if not self.cfg.evaluation:
            noise = self.rng.uniform(-1.0, 1.0, (n, 29)) * self.cfg.reset_joint_noise_rad
            q = qpos[:, 7 : ROBOT_QPOS.stop]
            q[:] = np.clip(q + noise, self.soft_lower, self.soft_upper)
        self.place_on_ground(ids, qpos)
        self.engine.reset(ids, qpos, np.zeros((n, self.engine.qvel.shape[1])))
        if self.randomize:
            self._randomize(ids)
        self.action[ids] = 0.0
        self.last_action[ids] = 0.0
        self.ctrl_target[ids] = self.default_joint_pos - self.joint_offset[ids]
        self.prev_ctrl_target[ids] = self.ctrl_target[ids]
        self.engine.ctrl[ids] = self.ctrl_target[ids]
        if self.native_motors:  # a delayed command of the last episode must not act
            self._hold_in_history(ids, self.ctrl_target[ids])
        self.external_force[ids] = 0.0
        self.peak_force_n[ids] = 0.0
        self.fell[ids] = False
        self.self_penetration_m[ids] = 0.0
        self.reset_loads(ids)
        if self.randomize:
            self.next_push_s[ids] = self.rng.uniform(*self.cfg.randomization.push_interval_s, n)
        self._update_kinematics(ids)

    def place_on_ground(self, ids: np.ndarray, qpos: np.ndarray) -> None:
        """Where new episodes start: edit the rows of `qpos` (len(ids), nq) in place before
        they are written. The G1 stands at the origin of the flat floor; `g1-walk` puts
        it somewhere on its rough ground, facing any way."""

    def reset_loads(self, ids: np.ndarray) -> None:
        """Start the task's loads for new episodes in simulations `ids` (after the robot's
        state, model fields and randomization were written)."""

    def _randomize(self, ids: np.ndarray) -> None:
        r, rng, n = self.cfg.randomization, self.rng, ids.size
        self.friction[ids] = rng.uniform(*r.friction, n)
        self.torso_added_mass[ids] = rng.uniform(*r.torso_added_mass_kg, n)
        self.torso_com_offset[ids] = rng.uniform(-1.0, 1.0, (n, 3)) * r.torso_com_offset_m
        self.kp_scale[ids] = rng.uniform(*r.kp_scale, (n, 29)) * self.cal_kp_scale
        self.kd_scale[ids] = rng.uniform(*r.kd_scale, (n, 29)) * self.cal_kd_scale
        self.motor_strength[ids] = rng.uniform(*r.motor_strength, (n, 29)) * self.cal_motor_strength
        self.joint_offset[ids] = (
            self.cal_joint_offset + rng.uniform(-1.0, 1.0, (n, 29)) * r.joint_offset_rad
        )
        low, high = self._latency_range()
        self.latency_substeps[ids] = rng.uniform(low, high, n)
        self._write_delays(ids)
        self.joint_frictionloss[ids] = rng.uniform(*self.coulomb_range, (n, 29))
        self.joint_damping[ids] = rng.uniform(*self.viscous_range, (n, 29))
        dofs = self.joint_dof_ids
        self.engine.model_field("dof_frictionloss")[np.ix_(ids, dofs)] = self.joint_frictionloss[
            ids
        ]
        self.engine.model_field("dof_damping")[np.ix_(ids, dofs)] = self.joint_damping[ids]

        nom, field = self.nominal, self.engine.model_field
        scale = rng.uniform(*r.link_mass_scale, (n, nom["body_mass"].size))
        scale[:, ~self.robot_body] = 1.0  # the world and any scene body
        mass = nom["body_mass"] * scale
        mass[:, self.torso_id] += self.torso_added_mass[ids]
        field("body_mass")[ids] = mass
        inertia_scale = mass / np.maximum(nom["body_mass"], 1e-9)
        field("body_inertia")[ids] = nom["body_inertia"] * inertia_scale[:, :, None]
        ipos = np.broadcast_to(nom["body_ipos"], (n, *nom["body_ipos"].shape)).copy()
        ipos[:, self.torso_id] += self.torso_com_offset[ids]
        field("body_ipos")[ids] = ipos
        friction = np.broadcast_to(nom["geom_friction"], (n, *nom["geom_friction"].shape)).copy()
        friction[:, self.friction_geom_ids, 0] = self.friction[ids, None]
        field("geom_friction")[ids] = friction
        self._write_actuators(ids)
        self.engine.commit_model(ids)

    def _write_actuators(self, ids: np.ndarray) -> None:
        """PD gains and torque limits of simulations `ids` from their scales (uncommitted)."""
        nom, field, n = self.nominal, self.engine.model_field, ids.size
        kp = self.kp * self.kp_scale[ids]
        kd = self.kd * self.kd_scale[ids]
        gain = np.broadcast_to(nom["actuator_gainprm"], (n, 29, 10)).copy()
        bias = np.broadcast_to(nom["actuator_biasprm"], (n, 29, 10)).copy()
        if self.native_motors and self.cfg.motor_envelope:  # dcmotor: its driver's terms
            limit = self.torque_limit * self.motor_strength[ids]
            gain[:, :, 0] = driver_resistance(limit, VELOCITY_LIMITS)
            gain[:, :, 1] = MOTOR_CONSTANT
            gain[:, :, 4], gain[:, :, 6] = kp, kd
            gain[:, :, 7] = MOTOR_CONSTANT * VELOCITY_LIMITS
        else:
            gain[:, :, 0], bias[:, :, 1], bias[:, :, 2] = kp, -kp, -kd
        field("actuator_gainprm")[ids] = gain
        field("actuator_biasprm")[ids] = bias
        field("actuator_forcerange")[ids] = (
            nom["actuator_forcerange"] * self.motor_strength[ids, :, None]
        )

    def _write_delays(self, ids: np.ndarray) -> None:
        """Native motors: each simulation's command delay (s), its latency except under one
        physics step, which `_simulate_native` blends by hand (delay 0)."""
        if not self.native_motors:
            return
        late = self.latency_substeps[ids]
        steps = np.where(late >= 1.0, late, 0.0)
        self.engine.model_field("actuator_delay")[ids, :29] = steps[:, None] * self.cfg.physics_dt

    def _hold_in_history(self, ids: np.ndarray, command: np.ndarray) -> None:
        """Native motors: every sample of simulations `ids`' ctrl histories becomes
        `command` (len(ids), 29), so a delayed read returns it until new commands arrive."""
        columns = self.history_columns
        self.engine.ctrl_history()[np.ix_(ids, columns.ravel())] = np.repeat(
            command, columns.shape[1], axis=1
        )

    def baseline_policy(self, name: str):
        """`stand`: zero actions, i.e. the PD loop holding the default pose; the floor any
        trained balance policy must beat."""
        if name != "stand":
            raise ValueError(f"{type(self).__name__}: unknown baseline {name!r}; available: stand")
        return self.zero_action_policy()

    def deployment_metadata(self) -> dict:
        return {
            **super().deployment_metadata(),
            "robot": "g1",
            "joint_names": list(JOINT_NAMES),
            "default_joint_pos": self.default_joint_pos.tolist(),
            "action_scale": self.action_scale.tolist(),
            "kp": self.kp.tolist(),
            "kd": self.kd.tolist(),
        }


def _history_value_columns(model: mujoco.MjModel) -> np.ndarray:
    """(29, nsample) columns of `history` with the joint actuators' ctrl samples: MuJoCo
    keeps an actuator's history at `actuator_historyadr` as two header numbers, then
    `nsample` times, then `nsample` values. (29, 0) where there is no history."""
    samples = int(model.actuator_history[0, 0])
    values = model.actuator_historyadr[:29, None] + 2 + samples
    return values + np.arange(samples)


def _blend(old: np.ndarray, previous: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The command a motor acts on while a late target arrives: `old` the previous
    target's share (1 before the new one is due, 0 after, the fraction in the physics step
    where it lands)."""
    return old * previous + (1.0 - old) * new


def _summary(values: np.ndarray) -> dict[str, float]:
    """Smallest, mean and largest of a per-joint table, for an evaluation's conditions."""
    stats = {"min": values.min(), "mean": values.mean(), "max": values.max()}
    return {name: round(float(value), 6) for name, value in stats.items()}


def _friction_range(span: tuple[float, float], calibrated: np.ndarray) -> np.ndarray:
    """(2, 29) low and high joint friction: the configured `span`, and for the joints a
    calibration overlay sets (non-NaN `calibrated`), the same width centred on the
    calibrated value (clipped at 0)."""
    low, high = span
    half = (high - low) / 2
    centred = np.stack([np.maximum(calibrated - half, 0.0), calibrated + half])
    return np.where(np.isnan(calibrated), np.array([[low], [high]]), centred)
