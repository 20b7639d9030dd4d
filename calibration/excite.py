"""Excitation trajectories for one joint group, and running them on the hung virtual G1.

A trajectory holds the default pose, ramps in, sweeps each joint of the group with a
chirp (joints sweep in alternating directions so that their motions decorrelate), then
steps through held levels, and ramps back out to the default pose. Every target stays
within `amplitude` of the default pose; a request whose targets would come closer than
`margin` to a joint limit is refused, naming the joints.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simreal.deploy.g1.sim_robot import MotorCommand, SimG1
from simreal.deploy.g1.virtual_robot import CommandGate
from simreal.deploy.logs import LogMeta, RolloutLog
from simreal.robots.g1 import ACTUATORS, DEFAULT_JOINT_POS, JOINT_NAMES, JOINTS
from simreal.robots.g1.overlay import Overlay

GROUPS: dict[str, tuple[str, ...]] = {
    "left_leg": JOINT_NAMES[0:6],
    "right_leg": JOINT_NAMES[6:12],
    "waist": JOINT_NAMES[12:15],
    "left_arm": JOINT_NAMES[15:22],
    "right_arm": JOINT_NAMES[22:29],
}


def _hang_pose() -> tuple[float, ...]:
    """The pose the hung robot is excited around: the default pose with the legs rolled
    0.3 rad and the arms 0.5 rad away from the body. The robot collides with itself, and
    around the default pose an excited leg swings into the other knee and a hand into
    the hip; a contact's force is missing from the fits' model, so it would bias them.
    With this pose every group's excitation runs free of self-contact."""
    pose = list(DEFAULT_JOINT_POS)
    for name, angle in (
        ("left_hip_roll_joint", 0.3),
        ("right_hip_roll_joint", -0.3),
        ("left_shoulder_roll_joint", 0.5),
        ("right_shoulder_roll_joint", -0.5),
    ):
        pose[JOINT_NAMES.index(name)] += angle
    return tuple(pose)


HANG_POSE = _hang_pose()
COMMAND_FIELDS = ("q", "dq", "kp", "kd", "tau")
HOLD_LEVELS = (0.5, -0.5, 1.0, -1.0)
"""Held targets during the step phase, as fractions of the amplitude (sign alternates per joint)."""
GAIN_SCALE: dict[str, float] = {"waist": 4.0}
"""Commanded kp and kd of a group's joints during its excitation, as multiples of nominal
(1 for groups not listed). The hung robot's waist roll and pitch carry the whole upper
body: its gravity pulls away from upright with about 20 N m/rad against the nominal kp
of 28.5, so with nominal gains the torso sags, resonates near 0.5 Hz under the chirp and
runs into the joint limits (+-0.52 rad), whose forces no fit models. At 4 x (kp 114,
kd 7.2) it tracks the targets; torques stay below half the 50 N m limit. The fits see
the commanded gains in the log, so the kp and kd scales they report are the motor's."""


class ExcitationError(ValueError):
    """The excitation request would leave the joint limits; the message names the joints."""


@dataclass(frozen=True)
class ExcitationConfig:
    group: str = "left_leg"
    amplitude: float = 0.2
    """rad: the largest excursion of a target from the default pose."""
    chirp_s: float = 3.0
    chirp_hz: tuple[float, float] = (0.3, 2.5)
    hold_s: float = 0.5
    """Duration of each held level (and of the rest at start and end)."""
    ramp_s: float = 0.4
    margin: float = 0.05
    """rad: targets keep at least this far from each joint limit."""
    dt: float = 0.002
    gain_scale: float | None = None
    """Commanded kp and kd of the group's joints as multiples of nominal; None: GAIN_SCALE."""

    def group_gain_scale(self) -> float:
        scale = GAIN_SCALE.get(self.group, 1.0) if self.gain_scale is None else self.gain_scale
        if not scale > 0:
            raise ExcitationError(f"gain_scale {scale!r}: expected a number > 0")
        return scale


@dataclass
class Excitation:
    t: np.ndarray
    """(K,) s."""
    q: np.ndarray
    """(K, 29) position targets, SDK order."""
    dq: np.ndarray
    """(K, 29) velocity targets."""
    kp: np.ndarray
    """(29,) commanded gains (nominal)."""
    kd: np.ndarray
    joints: tuple[str, ...]
    kind: str = "hung"
    """How the robot is held while it runs: "hung" on its gantry, or "stance" (standing
    on flat ground, `calibration.stance`); the log's meta records it and the fits check it."""


def excitation_log_meta(
    dt: float, source: str, loop: dict | None = None, kind: str = "hung"
) -> LogMeta:
    """Metadata of an excitation log, whichever robot ran it (`source`); `loop`: the DDS
    client's statistics (disturbed ticks), stored as `task_config["dds_loop"]`, which
    the fits check (`logdata.check_loop`); `kind`: `Excitation.kind`, stored as
    `task_config["excitation"]` (a log without it is a hung one)."""
    config = {"excitation": kind} | ({"dds_loop": loop} if loop is not None else {})
    return LogMeta(
        robot="g1",
        joint_names=JOINT_NAMES,
        control_dt=dt,
        command_fields=COMMAND_FIELDS,
        task="calibrate-excite",
        source=source,
        task_config=config,
    )


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return 0.5 - 0.5 * np.cos(np.pi * x)


def _profile(cfg: ExcitationConfig, index: int, dt: float) -> np.ndarray:
    """Normalized excursion in [-1, 1] of the `index`-th joint of the group."""
    rest = np.zeros(round(cfg.hold_s / dt))
    tc = np.arange(round(cfg.chirp_s / dt)) * dt
    f0, f1 = cfg.chirp_hz if index % 2 == 0 else cfg.chirp_hz[::-1]
    phase = 2 * np.pi * (f0 * tc + 0.5 * (f1 - f0) / cfg.chirp_s * tc**2) + index * np.pi / 3
    envelope = _smoothstep(tc / cfg.ramp_s) * _smoothstep((cfg.chirp_s - tc) / cfg.ramp_s)
    chirp = envelope * np.sin(phase)
    sign = 1.0 if index % 2 == 0 else -1.0
    levels = [0.0, *(sign * level for level in HOLD_LEVELS), 0.0]
    steps = []
    n_move, n_hold = round(cfg.ramp_s / 2 / dt), round(cfg.hold_s / dt)
    for a, b in itertools.pairwise(levels):
        steps.append(a + (b - a) * _smoothstep(np.arange(1, n_move + 1) / n_move))
        steps.append(np.full(n_hold, b))
    return np.concatenate([rest, chirp, *steps, rest])


def check_limits(cfg: ExcitationConfig) -> tuple[str, ...]:
    """The group's joints; raises ExcitationError naming each joint whose targets leave its limits."""
    if cfg.group not in GROUPS:
        raise ExcitationError(f"unknown joint group {cfg.group!r}; known: {', '.join(GROUPS)}")
    joints = GROUPS[cfg.group]
    bad = []
    for name in joints:
        q0, spec = HANG_POSE[JOINT_NAMES.index(name)], JOINTS[name]
        lo, hi = q0 - cfg.amplitude, q0 + cfg.amplitude
        if lo < spec.lower + cfg.margin or hi > spec.upper - cfg.margin:
            bad.append(
                f"{name} (targets [{lo:.3f}, {hi:.3f}] rad, limits [{spec.lower:.3f}, "
                f"{spec.upper:.3f}] with margin {cfg.margin})"
            )
    if bad:
        raise ExcitationError("excitation would leave the joint limits: " + "; ".join(bad))
    return joints


def excitation(cfg: ExcitationConfig) -> Excitation:
    """The excitation for `cfg.group` around HANG_POSE; other joints hold it."""
    joints = check_limits(cfg)
    profiles = [_profile(cfg, i, cfg.dt) for i in range(len(joints))]
    q = np.tile(np.asarray(HANG_POSE, dtype=float), (len(profiles[0]), 1))
    for name, profile in zip(joints, profiles, strict=True):
        q[:, JOINT_NAMES.index(name)] += cfg.amplitude * profile
    scale = np.array([cfg.group_gain_scale() if n in joints else 1.0 for n in JOINT_NAMES])
    kp = np.array([ACTUATORS[n].kp for n in JOINT_NAMES]) * scale
    kd = np.array([ACTUATORS[n].kd for n in JOINT_NAMES]) * scale
    t = np.arange(len(q)) * cfg.dt
    return Excitation(t, q, np.gradient(q, cfg.dt, axis=0), kp, kd, joints)


def motor_command(exc: Excitation, k: int) -> MotorCommand:
    return MotorCommand(exc.q[k], exc.dq[k], np.zeros(len(JOINT_NAMES)), exc.kp, exc.kd)


def hung_g1(dt: float, overlay: Overlay | None = None) -> SimG1:
    """The virtual G1 hung on its gantry (pelvis fixed, feet free of the floor)."""
    return SimG1(dt=dt, overlay=overlay, hang=True)


def run_hung(
    exc: Excitation,
    overlay: Overlay,
    log_dir: Path | str,
    robot: SimG1 | None = None,
) -> Path:
    """Run `exc` on the virtual G1 hung by its pelvis, in process, logging a rosbag2.

    The robot is the one `simreal sim-robot g1 --hang --perturb FILE` runs (SimG1 with
    the overlay as hidden truth, commands passed through the same CommandGate and its
    latency, sub-tick included), stepped tick by tick in simulated time; `robot`: a hung
    SimG1 built by the caller instead (its own substeps, integrator or sensor noise).
    Row k of every topic is tick k: the command sent then, and the state after that
    tick's physics.
    """
    dt = float(exc.t[1] - exc.t[0])
    robot = robot or hung_g1(dt, overlay)
    gate = CommandGate(stale_after_s=1e9, latency_s=overlay.latency_ms / 1e3)
    meta = excitation_log_meta(dt, source="virtual-robot", kind=exc.kind)
    with RolloutLog(log_dir, meta) as log:
        for k, now in enumerate(exc.t):
            cmd = motor_command(exc, k)
            gate.receive(now, cmd)
            robot.apply_blend(gate.blend(now, dt))
            if gate.state != "waiting":
                robot.tick(gate.blend, now)
            s = robot.sensors()
            log.command(now, np.stack([cmd.q, cmd.dq, cmd.kp, cmd.kd, cmd.tau], axis=1))
            log.joint_state(now, s.q, s.dq, s.tau_est)
            log.imu(now, s.quat_wxyz, s.gyro, s.accel)
    return Path(log_dir)
