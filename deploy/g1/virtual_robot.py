"""The virtual G1: the simulated robot behind the real one's DDS interface.

Every tick (500 Hz by default, on a deadline clock) it takes the LowCmd_ samples that
arrived on `rt/lowcmd`, drops any whose crc is wrong (and counts them), applies the
newest valid one (after the overlay's latency; one that comes due inside a tick takes
over from that instant: `CommandGate.blend`), steps MuJoCo (one physics step, or
`physics_hz / rate_hz` substeps) and publishes `rt/lowstate` with its crc. The command
gate (latency, stale watchdog) runs on the robot's own clock, ticks x period, so a
host that descheduled the simulated robot does not change its latency in ticks.

Before its first valid command the robot waits, frozen in the default pose (the
operator has not let go of it yet); the first command, even a zero-torque one, releases
it. After that, when no valid command has come for `stale_command_s` (100 ms) it
applies damping (kp 0, kd 8 on every motor) until commands resume. Unitree does not
document what the G1's motor drivers do when `rt/lowcmd` stops; this is the safe
choice a stale-command watchdog makes (Unitree's earlier ROS wrappers switch the motors
to damping after 50 ms without a command), not a claim about the firmware.

The robot obeys one commander (`Commander`): the first writer on `rt/lowcmd` whose
valid command arrives; samples from any other writer are dropped, counted and the
writer named (its DDS GUID), until the commander's writer leaves the DDS graph. A
command whose `mode_machine` is not the robot's own is dropped and counted, as a
command made for another mode or robot.

`interface="ros2"` puts the same robot behind ROS 2 topics instead (rt/joint_states,
rt/imu out; rt/joint_commands in: `ros2_state`), as a ROS 2 robot driver would, and
publishes its ground truth live as nav_msgs/Odometry on `/sim/odom` (`ODOM_TOPIC`, the
message the truth log holds, every `TRUTH_PERIOD_S` of simulated time from release on),
so that RViz, a test or any ROS 2 tool can follow the robot while it runs.
`pushes` applies periodic torso pushes (`PushSchedule`) once the robot is released and
publishes each change of the push as geometry_msgs/WrenchStamped on
`rt/simreal/external_wrench` (on the pelvis at its centre of mass, world frame), which
the deploy node logs on /wrench.

The robot's Unitree remote is what `/simreal/remote` (std_msgs/Float32MultiArray: lx, ly,
rx, ry, Unitree's stick convention) last set, carried in every LowState's
`wireless_remote` (`remote.remote_bytes`); at rest until something publishes there.
`log_dir` records the ground truth as a rosbag2 log (`RolloutLog`), at `TRUTH_PERIOD_S`
of simulated time from release on: the pelvis's pose and world-frame twist
(nav_msgs/Odometry on `/sim/odom`), the true joint angles (`/joint_states`) and the
external wrench the band and the pushes apply (`/wrench`, on the pelvis at its centre of
mass, world frame). The log carries the robot's MJCF, so `simreal replay DIR --video`
renders what really happened.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simreal.deploy.dds import (
    DdsParticipant,
    stream_qos,
    take_raw_from,
    topic_name,
    write_raw,
    writer_guid,
    writer_handles,
)
from simreal.deploy.dds import ros2 as msgs
from simreal.deploy.dds.unitree_hg import LOWCMD_TOPIC, LOWSTATE_TOPIC, LowCmd_, LowState_
from simreal.deploy.g1 import ros2_state
from simreal.deploy.g1.clock import DeadlineClock, realtime_process
from simreal.deploy.g1.messages import (
    COMMAND_FIELDS,
    MODE_MACHINE,
    decode_lowcmd_mode,
    encode_lowstate,
)
from simreal.deploy.g1.remote import remote_bytes
from simreal.deploy.g1.safety import check_domain, check_rate
from simreal.deploy.g1.sim_robot import DEFAULT_Q, MotorCommand, PushSchedule, Sensors, SimG1
from simreal.deploy.logs import LogMeta, RolloutLog
from simreal.deploy.logs.background import BackgroundLog
from simreal.robots.g1 import JOINT_NAMES, build_mjcf
from simreal.robots.g1.mjcf import INTEGRATORS
from simreal.robots.g1.overlay import Overlay
from simreal.robots.g1.perturbation import SensorNoise

DAMPING_KD = 8.0
FALLEN_PELVIS_M = 0.5
"""Below this pelvis height a standing G1 has fallen (it stands at about 0.79 m)."""
REPORT_EVERY_S = 5.0
INTERFACES = ("unitree", "ros2")
REMOTE_TOPIC = "/simreal/remote"
"""std_msgs/Float32MultiArray (lx, ly, rx, ry): the virtual remote's sticks."""
REMOTE_EVERY = 10
"""Ticks between looks at the remote topic (50 Hz at 500 Hz: a person's stick, and one
Python-level take fewer on most ticks)."""
TRUTH_PERIOD_S = 0.01
"""Simulated seconds between ground-truth samples in the log (100 Hz)."""
ODOM_TOPIC = "/sim/odom"
"""nav_msgs/Odometry: the pelvis's true pose and world-frame twist (`interface="ros2"`)."""


@dataclass
class VirtualRobotConfig:
    rate_hz: float = 500.0
    domain_id: int = 0
    overlay: Overlay = field(default_factory=Overlay)
    hang: bool = False
    band: bool = False
    stale_command_s: float = 0.1
    duration_s: float | None = None
    interface: str = "unitree"
    pushes: PushSchedule = field(default_factory=PushSchedule)
    rt_priority: int | None = None
    """SCHED_FIFO priority of the loop's thread (`clock.realtime_process`); None: normal."""
    band_release_s: float | None = None
    """Simulated time (after release) at which the band lets go, as an operator lowers a
    gantry once the policy balances the robot; None keeps it."""
    log_dir: Path | None = None
    """Write the ground truth here (a new rosbag2 directory)."""
    physics_hz: float | None = None
    """The simulated robot's own physics rate, a whole multiple of `rate_hz` (substeps
    per tick); None: one physics step per tick."""
    integrator: str = "implicitfast"
    """MuJoCo integrator of the robot's physics (`mjcf.INTEGRATORS`)."""
    noise: SensorNoise = field(default_factory=SensorNoise)
    """White noise on what the robot reports (`--perturb FILE`'s `noise:` section)."""

    def __post_init__(self):
        if self.interface not in INTERFACES:
            raise ValueError(f"interface {self.interface!r}: expected one of {INTERFACES}")
        check_rate(self.rate_hz, "--rate")
        check_domain(self.domain_id, "--domain")
        if self.integrator not in INTEGRATORS:
            raise ValueError(f"--integrator {self.integrator!r}: expected one of {INTEGRATORS}")
        self.substeps()

    def substeps(self) -> int:
        """Physics steps per tick; raises naming both rates unless a whole number >= 1."""
        if self.physics_hz is None:
            return 1
        ratio = self.physics_hz / self.rate_hz
        if not (math.isfinite(ratio) and ratio >= 1 and abs(ratio - round(ratio)) < 1e-9):
            raise ValueError(
                f"--physics-hz {self.physics_hz:g}: must be a whole multiple (>= 1) of "
                f"--rate {self.rate_hz:g}"
            )
        return round(ratio)


@dataclass
class CommandGate:
    """Which command the motors follow: waiting (none yet), commanded, or stale (damping)."""

    stale_after_s: float
    latency_s: float = 0.0
    state: str = "waiting"
    last_valid_s: float | None = None
    bad_crc: int = 0
    valid: int = 0
    stale_events: int = 0
    _pending: deque = field(default_factory=deque)
    _current: MotorCommand = field(default_factory=MotorCommand.zero_torque)

    def receive(self, now: float, cmd: MotorCommand | None) -> None:
        if cmd is None:
            self.bad_crc += 1
            return
        self.valid += 1
        self.last_valid_s = now
        self._pending.append((now + self.latency_s, cmd))

    def command(self, now: float) -> MotorCommand:
        while self._pending and self._pending[0][0] <= now:
            self._current = self._pending.popleft()[1]
            self.state = "commanded"
        if self.state == "commanded" and now - self.last_valid_s > self.stale_after_s:
            self.state = "stale"
            self.stale_events += 1
        if self.state == "stale":
            return MotorCommand.damping(DAMPING_KD)
        return self._current

    def blend(self, now: float, dt: float) -> list[tuple[float, MotorCommand]]:
        """The commands in force over the tick [now, now + dt), each with its fraction of
        the tick. A command that comes due (after the latency) inside the tick takes over
        from that instant, as a motor driver whose own loop runs much faster than the
        tick applies it; so a latency that is not a whole number of ticks acts as itself
        rather than rounded up to the next tick. Waiting or stale: one command."""
        current = self.command(now)
        if self.state != "commanded":
            return [(1.0, current)]
        pieces, start = [], now
        for due, cmd in self._pending:
            if due >= now + dt:
                break
            pieces.append(((due - start) / dt, current))
            start, current = due, cmd
        pieces.append(((now + dt - start) / dt, current))
        return [(w, c) for w, c in pieces if w > 0]


@dataclass
class Commander:
    """Which writer on the command topic the robot obeys: the first whose valid command
    arrives, until it leaves the DDS graph (`gone`). Pure bookkeeping over writer
    handles; `UnitreeSide` asks DDS who is still there and what a writer's GUID is."""

    handle: int | None = None
    foreign: dict[int, str] = field(default_factory=dict)
    """Handle -> GUID of every other writer whose commands were dropped."""
    foreign_commands: int = 0

    def accept(self, handle: int, gone: bool) -> bool:
        """Whether a valid command from writer `handle` is obeyed; `gone`: the current
        commander's writer is no longer matched."""
        if self.handle is None or handle == self.handle or gone:
            self.handle = handle
            return True
        self.foreign_commands += 1
        return False


class UnitreeSide:
    """The G1's own interface: LowCmd_ bytes in (crc and mode_machine checked, one
    commander obeyed), LowState_ bytes out."""

    def __init__(self, dds: DdsParticipant, mode_machine: int = MODE_MACHINE):
        self.state = dds.writer(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False))
        self.cmds = dds.reader(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False, depth=16))
        self.mode_machine = mode_machine
        self.commander = Commander()
        self.wrong_mode_machine = 0
        self.remote_sticks = dds.reader(
            topic_name(REMOTE_TOPIC), msgs.Float32MultiArray, stream_qos(reliable=False, depth=4)
        )
        self.remote = remote_bytes()
        self.published = 0

    def _commander_gone(self) -> bool:
        mine = self.commander.handle
        return mine is not None and mine not in writer_handles(self.cmds)

    def commands(self) -> list[MotorCommand | None]:
        out: list[MotorCommand | None] = []
        for data, handle, _ in take_raw_from(self.cmds, 16):
            cmd, mode_machine = decode_lowcmd_mode(data)
            if cmd is None:
                out.append(None)  # counted as bad crc or malformed
                continue
            if mode_machine != self.mode_machine:
                if not self.wrong_mode_machine:
                    print(
                        f"command with mode_machine {mode_machine} dropped "
                        f"(this robot is in {self.mode_machine})",
                        flush=True,
                    )
                self.wrong_mode_machine += 1
                continue
            known = handle == self.commander.handle
            if not self.commander.accept(handle, gone=not known and self._commander_gone()):
                if handle not in self.commander.foreign:
                    guid = self.commander.foreign[handle] = writer_guid(self.cmds, handle)
                    print(
                        f"second writer on {LOWCMD_TOPIC} ignored: {guid} "
                        f"(obeying {writer_guid(self.cmds, self.commander.handle)})",
                        flush=True,
                    )
                continue
            out.append(cmd)
        return out

    def summary(self) -> dict:
        return {
            "foreign_writers": sorted(self.commander.foreign.values()),
            "foreign_commands": self.commander.foreign_commands,
            "wrong_mode_machine_commands": self.wrong_mode_machine,
        }

    def _take_remote(self) -> None:
        for sample in self.remote_sticks.take(4):
            if isinstance(sample, msgs.Float32MultiArray) and len(sample.data) == 4:
                lx, ly, rx, ry = sample.data
                self.remote = remote_bytes(lx=lx, ly=ly, rx=rx, ry=ry)

    def publish_truth(self, robot: SimG1, stamp_ns: int) -> None:
        """The robot's own interface has no ground truth to publish."""

    def publish(self, sensors: Sensors, tick_ms: int, stamp_ns: int) -> None:
        if self.published % REMOTE_EVERY == 0:
            self._take_remote()
        self.published += 1
        write_raw(self.state, encode_lowstate(sensors, tick_ms, wireless_remote=self.remote))


class Ros2Side:
    """A ROS 2 robot driver's topics: JointState and Imu out, joint commands in."""

    def __init__(self, dds: DdsParticipant):
        best_effort = stream_qos(reliable=False)
        self.joints = dds.writer(topic_name(ros2_state.JOINT_STATES), msgs.JointState, best_effort)
        self.imu = dds.writer(topic_name(ros2_state.IMU), msgs.Imu, best_effort)
        self.cmds = dds.reader(
            topic_name(ros2_state.JOINT_COMMANDS),
            msgs.Float64MultiArray,
            stream_qos(reliable=False, depth=16),
        )
        self.odom = dds.writer(topic_name(ODOM_TOPIC), msgs.Odometry, best_effort)

    def publish_truth(self, robot: SimG1, stamp_ns: int) -> None:
        """The pelvis's true pose and twist on `/sim/odom`, as the truth log has them
        (frame world, child pelvis, the twist in the world frame, zero covariances)."""
        (px, py, pz), (w, x, y, z) = (v.tolist() for v in robot.base_pose())
        linear, angular = (v.tolist() for v in robot.base_twist())
        pose = msgs.Pose(msgs.Point(px, py, pz), msgs.Quaternion(x=x, y=y, z=z, w=w))
        twist = msgs.Twist(msgs.Vector3(*linear), msgs.Vector3(*angular))
        self.odom.write(
            msgs.Odometry(
                header=msgs.Header(stamp=msgs.Time.from_ns(stamp_ns), frame_id="world"),
                child_frame_id="pelvis",
                pose=msgs.PoseWithCovariance(pose=pose),
                twist=msgs.TwistWithCovariance(twist=twist),
            )
        )

    def commands(self) -> list[MotorCommand | None]:
        out = []
        for sample in self.cmds.take(16):
            if isinstance(sample, msgs.Float64MultiArray):
                layout = [(d.label, d.size, d.stride) for d in sample.layout.dim]
                out.append(ros2_state.motor_command(layout, sample.data, JOINT_NAMES))
        return out

    def publish(self, sensors: Sensors, tick_ms: int, stamp_ns: int) -> None:
        header = msgs.Header(stamp=msgs.Time.from_ns(stamp_ns), frame_id="pelvis")
        self.joints.write(
            msgs.JointState(
                header=header,
                name=list(JOINT_NAMES),
                position=sensors.q.tolist(),
                velocity=sensors.dq.tolist(),
                effort=sensors.tau_est.tolist(),
            )
        )
        w, x, y, z = sensors.quat_wxyz.tolist()
        self.imu.write(
            msgs.Imu(
                header=header,
                orientation=msgs.Quaternion(x=x, y=y, z=z, w=w),
                angular_velocity=msgs.Vector3(*sensors.gyro.tolist()),
                linear_acceleration=msgs.Vector3(*sensors.accel.tolist()),
            )
        )


class FreeStanding:
    """How long the robot has stood on its own (no band, no gantry) without falling, and
    how low its pelvis went meanwhile; prints every REPORT_EVERY_S of standing."""

    def __init__(self, robot: SimG1):
        self.robot = robot
        self.since: float | None = None
        self.fell_at: float | None = None
        self.min_height = np.inf
        self.reported = 0

    def update(self) -> None:
        robot = self.robot
        if robot.band or robot.hang or self.fell_at is not None:
            return
        t, height = robot.data.time, robot.pelvis_height
        self.since = t if self.since is None else self.since
        self.min_height = min(self.min_height, height)
        if height < FALLEN_PELVIS_M:
            self.fell_at = t
            print(f"fell at {t:.2f} s (pelvis {height:.2f} m)", flush=True)
        elif t - self.since >= (self.reported + 1) * REPORT_EVERY_S - 1e-9:
            self.reported += 1
            print(f"standing free for {self.reported * REPORT_EVERY_S:.1f} s", flush=True)

    def summary(self) -> dict:
        if self.since is None:
            return {}
        end = self.fell_at if self.fell_at is not None else self.robot.data.time
        return {
            "free_standing_s": round(end - self.since, 3),
            "fell_at_s": self.fell_at,
            "min_free_pelvis_height_m": round(float(self.min_height), 4),
        }


def _wrench_message(wrench: np.ndarray, stamp_ns: int) -> msgs.WrenchStamped:
    f, m = wrench[:3].tolist(), wrench[3:].tolist()
    return msgs.WrenchStamped(
        header=msgs.Header(stamp=msgs.Time.from_ns(stamp_ns), frame_id="world"),
        wrench=msgs.Wrench(force=msgs.Vector3(*f), torque=msgs.Vector3(*m)),
    )


def open_truth_log(cfg: VirtualRobotConfig) -> BackgroundLog | None:
    if cfg.log_dir is None:
        return None
    meta = LogMeta(
        robot="g1",
        joint_names=JOINT_NAMES,
        control_dt=TRUTH_PERIOD_S,
        command_fields=COMMAND_FIELDS,
        source="virtual-robot",
        engine="mujoco",
        mjcf=build_mjcf(),  # what `simreal replay --video` draws the robot with
    )
    return BackgroundLog(RolloutLog(cfg.log_dir, meta))


def log_truth(log: BackgroundLog, robot: SimG1) -> None:
    t = robot.data.time
    position, orientation = robot.base_pose()
    linear, angular = robot.base_twist()
    log.odometry(t, position, orientation, linear, angular)
    log.joint_state(t, position=robot.joint_pos)  # true angles: the video's limbs
    wrench = robot.external_wrench()
    log.wrench(t, wrench[:3], wrench[3:])


def run_virtual_robot(cfg: VirtualRobotConfig) -> dict:
    """Run until SIGINT/SIGTERM or `duration_s`; return a summary (also for tests)."""
    dt = 1.0 / cfg.rate_hz
    robot = SimG1(
        dt=dt,
        overlay=cfg.overlay,
        hang=cfg.hang,
        band=cfg.band,
        substeps=cfg.substeps(),
        integrator=cfg.integrator,
        noise=cfg.noise,
    )
    gate = CommandGate(cfg.stale_command_s, cfg.overlay.latency_ms / 1e3)
    clock = DeadlineClock(dt)
    stopping: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    pushes, push_force = 0, np.zeros(3)
    free = FreeStanding(robot)
    truth = open_truth_log(cfg)
    next_truth_s = 0.0
    with DdsParticipant(cfg.domain_id) as dds:
        side = Ros2Side(dds) if cfg.interface == "ros2" else UnitreeSide(dds)
        wrench_writer = dds.writer(topic_name(ros2_state.EXTERNAL_WRENCH), msgs.WrenchStamped)
        scheduling = realtime_process(cfg.rt_priority)
        physics = f"physics {cfg.rate_hz * robot.substeps:g} Hz {cfg.integrator}"
        noise = f", noise {cfg.noise.as_dict()}" if cfg.noise.any else ""
        print(
            f"virtual g1 ready: {cfg.rate_hz:g} Hz on DDS domain {cfg.domain_id} "
            f"({cfg.interface}), {physics}{noise}, {scheduling}",
            flush=True,
        )
        ticks, start = 0, None
        try:
            while not stopping:
                now = clock.wait()
                start = now if start is None else start
                if cfg.duration_s is not None and now - start >= cfg.duration_s:
                    break
                # The motors' clock is the robot's own (ticks x dt), not the host's: a
                # real robot's loop does not stall, a simulated one on a busy host does,
                # and a stall must not change the latency in ticks the motors apply.
                robot_now = ticks * dt
                for cmd in side.commands():
                    gate.receive(robot_now, cmd)
                robot.apply_blend(gate.blend(robot_now, dt))
                if gate.state != "waiting":
                    force = cfg.pushes.force(robot.data.time)
                    if not np.array_equal(force, push_force):
                        pushes += bool(force.any())
                        push_force = force
                        wrench = robot.push_torso(force)
                        wrench_writer.write(_wrench_message(wrench, time.time_ns()))
                    robot.tick(gate.blend, robot_now)
                    if robot.band and robot.data.time >= (cfg.band_release_s or np.inf):
                        robot.release_band()
                        print(f"band released at {robot.data.time:.2f} s", flush=True)
                    free.update()
                    if robot.data.time >= next_truth_s - dt / 2:
                        if truth:
                            log_truth(truth, robot)
                        side.publish_truth(robot, time.time_ns())
                        next_truth_s += TRUTH_PERIOD_S
                ticks += 1
                side.publish(robot.sensors(), round(ticks * dt * 1e3), time.time_ns())
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            if truth:
                truth.close()
    return {
        "command_state": gate.state,
        "valid_commands": gate.valid,
        "bad_crc_commands": gate.bad_crc,
        "stale_events": gate.stale_events,
        "sim_time_s": round(robot.data.time, 3),
        "pelvis_height_m": round(robot.pelvis_height, 4),
        "pushes": pushes,
        **free.summary(),
        "joint_rmse_to_default_rad": round(
            float(np.sqrt(np.mean((robot.joint_pos - DEFAULT_Q) ** 2))), 4
        ),
        "joint_pos": [round(float(x), 4) for x in robot.joint_pos],
        **(side.summary() if isinstance(side, UnitreeSide) else {}),
        **clock.jitter_stats(),
        **({"truth_log": str(truth.path), "truth_log_dropped": truth.dropped} if truth else {}),
    }


def main(cfg: VirtualRobotConfig) -> int:
    summary = run_virtual_robot(cfg)
    print(json.dumps(summary), flush=True)
    sys.stdout.flush()
    return 0
