"""The simulated G1 behind the virtual robot: MuJoCo, driven the way the robot's motors
interpret a LowCmd_.

Each motor applies tau = kp (q_cmd - q_meas) + kd (dq_cmd - dq) + tau_ff, clipped at its
torque limit, where q_meas is what its encoder reports (true q plus the overlay's
encoder offset). The MJCF's position actuators are turned into affine actuators whose
gains are rewritten from every command: force = ctrl - kp q - kd dq with
ctrl = kp (q_cmd - offset) + kd dq_cmd + tau_ff. That is the motor's PD law exactly, and
MuJoCo's implicitfast integrator treats the kd term implicitly, as the motor driver's
fast inner loop effectively does, so damping at kd 8 on a light wrist stays stable at
a 2 ms step.

A robot that is not the model. `substeps` and `integrator` give the simulated robot its
own physics: e.g. 4 steps of 0.5 ms per 2 ms tick (`tick`), each under the commands in
force during it and the torque-speed envelope at its own joint speeds, while the fits
model one implicitfast step per tick. `noise` (`perturbation.SensorNoise`) adds white
noise to every reported sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from simreal.robots.g1 import ACTUATORS, DEFAULT_JOINT_POS, JOINT_NAMES, build_mjcf
from simreal.robots.g1.actuators import VELOCITY_LIMITS, torque_speed_range
from simreal.robots.g1.overlay import Overlay
from simreal.robots.g1.perturbation import SensorNoise

BAND_KP, BAND_KD = 5000.0, 500.0
"""Elastic band: N/m and N s/m on the pelvis position."""
BAND_KP_ROT, BAND_KD_ROT = 500.0, 50.0
"""Elastic band: N m/rad and N m s/rad on the pelvis orientation."""
N_JOINTS = len(JOINT_NAMES)
DEFAULT_Q = np.array(DEFAULT_JOINT_POS)


@dataclass
class MotorCommand:
    """Per-motor arrays (29,) in SDK order, as the robot reads them from LowCmd_."""

    q: np.ndarray
    dq: np.ndarray
    tau: np.ndarray
    kp: np.ndarray
    kd: np.ndarray

    @classmethod
    def zero_torque(cls) -> MotorCommand:
        z = np.zeros(N_JOINTS)
        return cls(z, z.copy(), z.copy(), z.copy(), z.copy())

    @classmethod
    def damping(cls, kd: float) -> MotorCommand:
        cmd = cls.zero_torque()
        cmd.kd[:] = kd
        return cmd


@dataclass
class Sensors:
    """What the robot reports: encoders (29,) each, and the pelvis IMU."""

    q: np.ndarray
    dq: np.ndarray
    tau_est: np.ndarray
    quat_wxyz: np.ndarray
    gyro: np.ndarray
    accel: np.ndarray
    rpy: np.ndarray


@dataclass(frozen=True)
class PushSchedule:
    """Periodic horizontal pushes on the torso: `force_n` for `duration_s` every `every_s`,
    the first at `first_s`, alternately backward (-x, the robot's initial heading being +x)
    and forward. A force of 0 means no pushes."""

    force_n: float = 0.0
    every_s: float = 4.0
    duration_s: float = 0.2
    first_s: float = 3.0

    def __post_init__(self):
        if self.force_n < 0 or self.every_s <= 0 or not 0 < self.duration_s < self.every_s:
            raise ValueError(
                f"push schedule needs force >= 0 N, period > 0 s and 0 < duration < period: {self}"
            )

    def force(self, t: float) -> np.ndarray:
        """World-frame force (N) at time `t` after the robot was released."""
        k, phase = divmod(t - self.first_s, self.every_s)
        if self.force_n == 0 or t < self.first_s or phase >= self.duration_s:
            return np.zeros(3)
        return np.array([-self.force_n if k % 2 == 0 else self.force_n, 0.0, 0.0])


def quat_to_rpy(q: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw (rad) of a (w, x, y, z) quaternion."""
    w, x, y, z = q
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.array([roll, pitch, yaw])


class SimG1:
    """One G1 in MuJoCo, stepped one physics step (`dt`) at a time under a MotorCommand.

    `hang`: the pelvis is fixed in the air (no free joint), as on a gantry. `band`: the
    robot stands on the floor held by an elastic band, a spring-damper pulling the pelvis
    towards its standing pose (like unitree_mujoco's band for humanoids): the PD gains
    alone cannot balance a humanoid (the ankles' kp of 2 x 28.5 N m/rad is far below the
    m g h of about 226 N m/rad that tips it), so without a balancing policy a robot
    standing free in the default pose falls within about 1.5 s.
    """

    def __init__(
        self,
        dt: float = 0.002,
        overlay: Overlay | None = None,
        hang: bool = False,
        band: bool = False,
        substeps: int = 1,
        integrator: str = "implicitfast",
        noise: SensorNoise | None = None,
    ):
        if not (isinstance(substeps, int) and substeps >= 1):
            raise ValueError(f"substeps {substeps!r}: expected an integer >= 1")
        self.overlay = overlay or Overlay()
        self.dt, self.substeps = dt, substeps
        self.noise = noise or SensorNoise()
        self.rng = np.random.default_rng(self.noise.seed)
        xml = build_mjcf(physics_dt=dt / substeps, visual_geoms=False, integrator=integrator)
        self.implicit_damping = integrator in ("implicitfast", "implicit")
        """The integrator evaluates the kd term at the step's end velocity (`_applied_torque`)."""
        if hang:
            xml = xml.replace('<freejoint name="pelvis"/>', "")
            xml = xml.split("<keyframe>")[0] + "</mujoco>\n"
        self.model = mujoco.MjModel.from_xml_string(xml)
        if hang:  # on a gantry the feet hang free: no floor contact
            floor = self.model.geom("floor").id
            self.model.geom_contype[floor] = 0
            self.model.geom_conaffinity[floor] = 0
        self.data = mujoco.MjData(self.model)
        self.hang = hang
        self.band = band and not hang
        self.pelvis_id = self.model.body("pelvis").id
        self.torso_id = self.model.body("torso_link").id
        m = self.model
        self.qpos_adr = np.array([m.jnt_qposadr[m.joint(n).id] for n in JOINT_NAMES])
        self.dof_adr = np.array([m.jnt_dofadr[m.joint(n).id] for n in JOINT_NAMES])
        self.act_ids = np.array([m.actuator(n).id for n in JOINT_NAMES])
        joints = [self.overlay.joint(n) for n in JOINT_NAMES]
        self.encoder_offset = np.array([j.encoder_offset for j in joints])
        self.kp_scale = np.array([j.kp_scale for j in joints])
        self.kd_scale = np.array([j.kd_scale for j in joints])
        self.torque_limit = np.array(
            [
                ACTUATORS[n].torque_limit * j.torque_limit_scale
                for n, j in zip(JOINT_NAMES, joints, strict=True)
            ]
        )
        m.actuator_ctrllimited[self.act_ids] = 0
        m.actuator_forcerange[self.act_ids] = np.stack([-self.torque_limit, self.torque_limit], 1)
        m.actuator_gainprm[self.act_ids, :] = 0.0
        m.actuator_gainprm[self.act_ids, 0] = 1.0
        m.actuator_biasprm[self.act_ids, :] = 0.0
        for i, j in enumerate(joints):
            dof = self.dof_adr[i]
            if j.armature is not None:
                m.dof_armature[dof] = j.armature
            if j.friction_coulomb is not None:
                m.dof_frictionloss[dof] = j.friction_coulomb
            if j.friction_viscous is not None:
                m.dof_damping[dof] = j.friction_viscous
        self.sensor = {
            kind: m.sensor(f"imu_pelvis_{kind}").adr[0] for kind in ("gyro", "accel", "quat")
        }
        self.reset()

    def reset(self) -> None:
        mujoco.mj_resetData(self.model, self.data)
        if not self.hang:
            mujoco.mj_resetDataKeyframe(self.model, self.data, self.model.key("stand").id)
        self.data.qpos[self.qpos_adr] = DEFAULT_Q
        self.band_anchor = self.data.qpos[0:3].copy()
        self.apply(MotorCommand.zero_torque())
        mujoco.mj_forward(self.model, self.data)
        self.tau_applied = self.data.actuator_force[self.act_ids].copy()

    def apply(self, cmd: MotorCommand) -> None:
        """Set the motors' PD law from a command; it holds until the next `apply`."""
        self.apply_blend([(1.0, cmd)])

    def apply_blend(self, pieces: list[tuple[float, MotorCommand]]) -> None:
        """Set the motors' PD law to the weighted sum of the commands' PD laws (weights
        summing to 1: the fractions of the next step each command is in force). The step
        evaluates forces once, at its start, so this is a command switching inside the
        step as the motors would see it (the torque limit clips the sum)."""
        kp, kd, ctrl = 0.0, 0.0, 0.0
        for w, cmd in pieces:
            kp_i, kd_i = cmd.kp * self.kp_scale, cmd.kd * self.kd_scale
            kp, kd = kp + w * kp_i, kd + w * kd_i
            ctrl = ctrl + w * (kp_i * (cmd.q - self.encoder_offset) + kd_i * cmd.dq + cmd.tau)
        ids = self.act_ids
        self.model.actuator_biasprm[ids, 1] = -kp
        self.model.actuator_biasprm[ids, 2] = -kd
        self.data.ctrl[ids] = ctrl

    def tick(self, blend, now: float) -> None:
        """One tick of `dt`: `substeps` physics steps, each under the commands in force
        over its own interval (`blend(start, length)` -> pieces, `CommandGate.blend`)."""
        h = self.dt / self.substeps
        applied = 0.0
        for s in range(self.substeps):
            self.apply_blend(blend(now + s * h, h))
            self.step()
            applied = applied + self.tau_applied
        self.tau_applied = applied / self.substeps

    def step(self) -> None:
        """One physics step (dt / substeps)."""
        if self.band:
            self._pull_band()
        self._limit_motors()
        before = self.data.qvel[self.dof_adr].copy()
        mujoco.mj_step(self.model, self.data)
        self.tau_applied = self._applied_torque(self.data.qvel[self.dof_adr] - before)

    def _applied_torque(self, dv: np.ndarray) -> np.ndarray:
        """(29,) the torque the motors applied over the last physics step: the PD force at
        the step's start minus the kd term's implicit part (kd dv, dv the step's velocity
        change), which implicitfast
        adds by evaluating the damping at the step's end velocity. This, averaged over a
        tick, is what the robot reports as tau_est: the torque the joint actually got,
        whatever the integrator, so a fit need not know the robot's substeps."""
        m, d, ids = self.model, self.data, self.act_ids
        force = d.actuator_force[ids]
        lower, upper = m.actuator_forcerange[ids, 0], m.actuator_forcerange[ids, 1]
        free = (force > lower) & (force < upper)  # clamped forces have no velocity term
        if not self.implicit_damping:
            return force.copy()
        kd = -m.actuator_biasprm[ids, 2]
        implicit = kd * dv  # h kd qacc, qacc being the step's velocity change over h
        return np.where(free, force - implicit, force)

    def _limit_motors(self) -> None:
        """The motors' torque range at the joints' current speed (the torque-speed envelope
        the training simulation applies, `torque_speed_range`)."""
        lower, upper = torque_speed_range(
            self.data.qvel[self.dof_adr], self.torque_limit, VELOCITY_LIMITS
        )
        self.model.actuator_forcerange[self.act_ids, 0] = lower
        self.model.actuator_forcerange[self.act_ids, 1] = upper

    def push_torso(self, force: np.ndarray) -> np.ndarray:
        """Apply a world-frame `force` (N) at the torso's centre of mass until changed; return
        the same push as a wrench on the pelvis at its centre of mass (force, torque)."""
        self.data.xfrc_applied[self.torso_id, 0:3] = force
        arm = self.data.xipos[self.torso_id] - self.data.xipos[self.pelvis_id]
        return np.concatenate([force, np.cross(arm, force)])

    def release_band(self) -> None:
        """Let go of the robot: from now on it stands (or falls) on its own."""
        self.band = False
        self.data.xfrc_applied[self.pelvis_id] = 0.0

    def _pull_band(self) -> None:
        """Spring-damper wrench on the pelvis towards its standing position, upright."""
        d = self.data
        pos, vel, ang_vel = d.qpos[0:3], d.qvel[0:3], d.qvel[3:6]
        rot_err = np.zeros(3)
        mujoco.mju_quat2Vel(rot_err, d.qpos[3:7], 1.0)  # body frame; qvel[3:6] too
        world_from_body = d.xmat[self.pelvis_id].reshape(3, 3)
        force = BAND_KP * (self.band_anchor - pos) - BAND_KD * vel
        torque = world_from_body @ (-BAND_KP_ROT * rot_err - BAND_KD_ROT * ang_vel)
        d.xfrc_applied[self.pelvis_id] = np.concatenate([force, torque])

    def base_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The pelvis's true world position (3,) and orientation (w, x, y, z)."""
        b = self.pelvis_id
        return self.data.xpos[b].copy(), self.data.xquat[b].copy()

    def base_twist(self) -> tuple[np.ndarray, np.ndarray]:
        """The pelvis's true linear (at its frame's origin) and angular velocity, world frame."""
        vel = np.zeros(6)  # angular, then linear
        mujoco.mj_objectVelocity(
            self.model, self.data, mujoco.mjtObj.mjOBJ_BODY, self.pelvis_id, vel, 0
        )
        return vel[3:].copy(), vel[:3].copy()

    def external_wrench(self) -> np.ndarray:
        """(6,) force and torque applied from outside (the band and the pushes), as one
        wrench on the pelvis at its centre of mass, world frame."""
        d, pelvis = self.data, self.pelvis_id
        force, torque = np.zeros(3), np.zeros(3)
        for body in (pelvis, self.torso_id):
            f, m = d.xfrc_applied[body, 0:3], d.xfrc_applied[body, 3:6]
            arm = d.xipos[body] - d.xipos[pelvis]
            force, torque = force + f, torque + m + np.cross(arm, f)
        return np.concatenate([force, torque])

    @property
    def joint_pos(self) -> np.ndarray:
        """True joint angles (29,), without encoder offsets."""
        return self.data.qpos[self.qpos_adr].copy()

    @property
    def pelvis_height(self) -> float:
        return float(self.data.xpos[self.model.body("pelvis").id][2])

    def sensors(self) -> Sensors:
        d, s = self.data, self.sensor
        quat = d.sensordata[s["quat"] : s["quat"] + 4].copy()
        accel = d.sensordata[s["accel"] : s["accel"] + 3]
        if self.hang:
            # MuJoCo reports no acceleration for a body welded to the world; a real IMU on
            # a still, hung pelvis measures the specific force of gravity, +g up.
            rot = d.xmat[self.pelvis_id].reshape(3, 3)
            accel = rot.T @ -self.model.opt.gravity
        out = Sensors(
            q=d.qpos[self.qpos_adr] + self.encoder_offset,
            dq=d.qvel[self.dof_adr].copy(),
            tau_est=self.tau_applied.copy(),
            quat_wxyz=quat,
            gyro=d.sensordata[s["gyro"] : s["gyro"] + 3] + np.array(self.overlay.gyro_bias),
            accel=accel + np.array(self.overlay.accel_bias),
            rpy=quat_to_rpy(quat),
        )
        if self.noise.any:
            n, rng = self.noise, self.rng
            out.q = out.q + n.encoder_rad * rng.standard_normal(N_JOINTS)
            out.dq = out.dq + n.joint_vel_rad_s * rng.standard_normal(N_JOINTS)
            out.tau_est = out.tau_est + n.tau_est_nm * rng.standard_normal(N_JOINTS)
            out.gyro = out.gyro + n.gyro_rad_s * rng.standard_normal(3)
            out.accel = out.accel + n.accel_m_s2 * rng.standard_normal(3)
        return out
