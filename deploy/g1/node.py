"""The G1 deploy node: the safety state machine at 500 Hz, the policy at its own control
rate (the ONNX metadata's control_dt: 50 Hz for the G1 tasks).

Every tick (deadline clock) it takes the newest robot state from its link (dropping and
counting malformed ones: bad crc, wrong layout, non-finite values), reads operator
commands (`rt/simreal/command`, std_msgs/String `start`/`stop`/`estop`, lifecycle words
`activate`/`deactivate` too, and single keys when stdin is a terminal), advances the
`StateMachine`, and sends one motor command. In ACTIVE the policy runs every
`control_dt`; its action becomes the joint targets through `action_to_target` (scaled,
rate-limited, clamped to the joint limits). Nothing is sent before the first valid
state. Logging is handed to a writer thread (`BackgroundLog`) after the command is
sent, so the tick does only what the command needs.

A policy that takes a walking command (g1-pull) gets it from `commands.VelocityCommands`:
geometry_msgs/Twist on `/cmd_vel`, the Unitree wireless remote in each LowState
(`remote`), and velocity keys in the terminal (`velocity_keys`); its gait clock runs
from the policy's metadata (`gait_clock`) and its observation is its task's own terms
(`observation`).

The link (`links`) is the robot's own DDS interface for the G1 (`transport="dds"`:
rt/lowstate, rt/lowcmd) or ROS 2 topics (`transport="ros2"`: joint states and IMU in,
joint commands out) over CycloneDDS; everything else is the same for both, and the
rclpy adapter (`rclpy_node`) reuses it too.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import sys
import termios
import threading
import time
import tty
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simreal.deploy.commands import VelocityCommands
from simreal.deploy.dds import DdsParticipant
from simreal.deploy.g1.clock import DeadlineClock, realtime_process
from simreal.deploy.g1.links import Link, Ros2DdsLink, UnitreeLink
from simreal.deploy.g1.messages import RobotState
from simreal.deploy.g1.observation import PULL_DIRECTIONS, G1Observation, PolicyInputs
from simreal.deploy.g1.remote import REMOTE_BYTES, parse_remote, remote_command
from simreal.deploy.g1.ros2_state import LIFECYCLE
from simreal.deploy.g1.safety import (
    COMMANDS,
    Mode,
    SafetyConfig,
    StateMachine,
    TickWatch,
    action_fault,
    action_to_target,
    check_domain,
    check_rate,
    move_to_default,
    policy_limit_errors,
)
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.deploy.logs import LogMeta, RolloutLog
from simreal.deploy.logs.background import BackgroundLog
from simreal.deploy.runtime import OnnxPolicy, PolicyMetadataError
from simreal.deploy.velocity_keys import HELP as VELOCITY_HELP
from simreal.deploy.velocity_keys import is_velocity_key, key_command
from simreal.robots.g1 import ACTUATORS, JOINT_NAMES, JOINTS

COMMAND_FIELDS = ("q", "dq", "kp", "kd", "tau")
KEYS = {" ": "estop", "e": "estop", "s": "start", "p": "stop"}
"""Single keys in the deploy terminal (no Enter): space or e is the e-stop."""
WORDS = {"activate": "start", "deactivate": "stop"}
"""ROS 2 lifecycle words accepted on the command topic as well as `COMMANDS`."""
TRANSPORTS = ("dds", "ros2")
WRITER_CHECK_EVERY = 10
"""Ticks between looks for a second writer on the command topic (a status read each)."""


class SecondWriterError(RuntimeError):
    """Another writer commands the robot: the node refuses to share it."""


@dataclass
class DeployConfig:
    domain_id: int = 0
    rate_hz: float = 500.0
    duration_s: float | None = None
    log_dir: Path | None = None
    interactive: bool = False
    """Read single keys from stdin (a terminal): see `KEYS`."""
    auto_start: bool = False
    """Turn the policy on as soon as the robot holds its default pose (benchmarks, tests);
    otherwise only an explicit `start` does."""
    transport: str = "dds"
    rt_priority: int | None = None
    """SCHED_FIFO priority of the loop's thread (`clock.realtime_process`); None: normal."""
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    pull_direction: str = "backward"
    """g1-pull: which way the robot tows (`observation.PULL_DIRECTIONS`): backward, the
    load in front of it (the task's headline case), or forward, the load behind."""

    def __post_init__(self):
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport {self.transport!r}: expected one of {TRANSPORTS}")
        if self.pull_direction not in PULL_DIRECTIONS:
            raise ValueError(
                f"pull direction {self.pull_direction!r}: expected one of {tuple(PULL_DIRECTIONS)}"
            )
        check_rate(self.rate_hz, "--rate")
        check_domain(self.domain_id, "--domain")


def load_g1_policy(path: Path) -> OnnxPolicy:
    """The policy, refused (naming what differs) unless it was made for this G1; the node
    runs it every control_dt of its metadata."""
    policy = OnnxPolicy(path)
    policy.check_compatible(robot="g1", joint_names=JOINT_NAMES)
    meta, n = policy.metadata, len(JOINT_NAMES)
    wrong = [
        f"{key} has {len(getattr(meta, key))} values, not {n}"
        for key in ("default_joint_pos", "action_scale", "kp", "kd")
        if len(getattr(meta, key)) != n
    ]
    if meta.n_actions != n:
        wrong.append(f"the graph has {meta.n_actions} actions, not {n}")
    if wrong:
        raise PolicyMetadataError(f"{path}: " + "; ".join(wrong))
    wrong = g1_limit_errors(meta)
    if wrong:
        raise PolicyMetadataError(f"{path}: beyond the G1's limits: " + "; ".join(wrong))
    return policy


def check_control_rate(control_dt: float, rate_hz: float) -> None:
    """The policy's period must be a whole number of the node's ticks, so that its steps
    fall on ticks at the rate it was trained at."""
    ticks = control_dt * rate_hz
    if not (ticks >= 1 - 1e-9 and abs(ticks - round(ticks)) < 1e-6):
        raise PolicyMetadataError(
            f"control_dt {control_dt} s is not a whole number of the node's {rate_hz:g} Hz ticks"
        )


def g1_limit_errors(meta) -> list[str]:
    """A policy's gains, action scale and default pose checked against the G1's
    description (`robots.g1`: joint limits, `ActuatorSpec.kp_max` and `kd_max`)."""
    return policy_limit_errors(
        JOINT_NAMES,
        kp=meta.kp,
        kd=meta.kd,
        action_scale=meta.action_scale,
        default_joint_pos=meta.default_joint_pos,
        kp_max=[ACTUATORS[n].kp_max for n in JOINT_NAMES],
        kd_max=[ACTUATORS[n].kd_max for n in JOINT_NAMES],
        lower=[JOINTS[n].lower for n in JOINT_NAMES],
        upper=[JOINTS[n].upper for n in JOINT_NAMES],
    )


def operator_word(text: str) -> str | None:
    """The command a word or key stands for, or None."""
    word = text if text == " " else text.strip().lower()
    word = KEYS.get(word, WORDS.get(word, word))
    return word if word in COMMANDS else None


def keys_available() -> bool:
    """Whether stdin is a terminal this process may read keys from. Not from a background
    job of its controlling terminal: changing the terminal's mode there would stop the
    process (SIGTTOU). A terminal that is not the controlling one has no such rule."""
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):
        return False
    if not os.isatty(fd):
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:  # not this process's controlling terminal
        return True


@contextlib.contextmanager
def terminal_keys(out: queue.Queue, velocity: queue.Queue | None = None):
    """While active, every key pressed in the terminal on stdin (no Enter needed) that
    names a command is put on `out`, and every velocity key (`velocity_keys`) on
    `velocity` when given; the terminal's settings are restored on exit, whatever the
    exit. Ctrl-C still interrupts (cbreak mode keeps signals)."""
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)

    def read_keys() -> None:
        while True:
            try:
                key = os.read(fd, 1).decode(errors="ignore")
            except OSError:
                return
            if not key:
                return
            word = operator_word(key)
            if word:
                out.put(word)
            elif velocity is not None and is_velocity_key(key):
                velocity.put(key)

    threading.Thread(target=read_keys, name="keys", daemon=True).start()
    print("keys: space or e = e-stop (damping), s = start policy, p = stop policy", flush=True)
    if velocity is not None:
        print(f"keys: {VELOCITY_HELP}", flush=True)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


LinkOpener = Callable[["G1Node"], contextlib.AbstractContextManager[Link]]


@contextlib.contextmanager
def open_dds_link(node: G1Node) -> Iterator[Link]:
    """The node's link over CycloneDDS: the G1's own topics, or ROS 2's."""
    with DdsParticipant(node.cfg.domain_id) as dds:
        yield Ros2DdsLink(dds, JOINT_NAMES) if node.cfg.transport == "ros2" else UnitreeLink(dds)


class G1Node:
    def __init__(
        self,
        policy: OnnxPolicy,
        cfg: DeployConfig,
        open_link: LinkOpener = open_dds_link,
    ):
        self.open_link = open_link
        self.policy, self.cfg, self.meta = policy, cfg, policy.metadata
        check_control_rate(self.meta.control_dt, cfg.rate_hz)
        self.observe = G1Observation(policy, PULL_DIRECTIONS[cfg.pull_direction])
        self.velocity = (
            VelocityCommands(self.observe.ranges) if self.observe.needs_command else None
        )
        """The walking command, for a policy that takes one (None: it takes none)."""
        self.velocity_keys: queue.Queue[str] = queue.Queue()
        self.remote_deflected = False
        self.active_steps = 0
        """Policy steps since the policy started: its clock (steps x control_dt)."""
        self.machine = StateMachine(cfg.safety)
        self.default = np.array(self.meta.default_joint_pos)
        self.kp, self.kd = np.array(self.meta.kp), np.array(self.meta.kd)
        self.scale = np.array(self.meta.action_scale)
        self.lower = np.array([JOINTS[n].lower for n in JOINT_NAMES])
        self.upper = np.array([JOINTS[n].upper for n in JOINT_NAMES])
        self.next_policy_s = 0.0
        self.commands: queue.Queue[str] = queue.Queue()
        self.state: RobotState | None = None
        self.last_state_s: float | None = None
        self.bad_states = 0
        self.consecutive_bad = 0
        self.policy_steps = 0
        self.policy_times: list[float] = []
        self.inference_s: list[float] = []
        self.last_action = np.zeros(len(JOINT_NAMES))
        self.target = self.default.copy()
        self.move_from = self.default.copy()
        self.log: BackgroundLog | None = None
        self.ticks = TickWatch()
        self.last_top_s: float | None = None
        self.other_writers: list[str] = []

    def _take_states(self, link: Link, now: float) -> bool:
        state, bad = link.receive(now)
        self.bad_states += bad
        if state is not None:
            self.state, self.last_state_s, self.consecutive_bad = state, now, 0
            fault = self.ticks.observe(state.tick, state.mode_machine, now)
            if fault:
                self.machine.fault(now, fault)
            return True
        self.consecutive_bad += bad
        return False

    def _loop_gap(self, now: float) -> float | None:
        """Seconds since the top of the previous tick (monotonic clock)."""
        gap = None if self.last_top_s is None else now - self.last_top_s
        self.last_top_s = now
        return gap

    def _check_writers(self, link: Link, now: float, n_tick: int) -> None:
        """Refuse to start while another writer is on the robot's command topic (nothing
        beyond zero torque has been sent yet); once running, damp and name it."""
        if n_tick % WRITER_CHECK_EVERY:
            return
        others = link.other_writers()
        if not others or others == self.other_writers:
            return
        self.other_writers = others
        names = ", ".join(others)
        if self.machine.mode is Mode.ZERO_TORQUE:
            raise SecondWriterError(
                f"refusing to start: another writer commands the robot ({names}); "
                "stop it first (one commander at a time)"
            )
        self.machine.fault(now, f"second writer on the command topic: {names}")

    def _operator_command(self, link: Link) -> str | None:
        for text in link.commands():
            word = operator_word(text)
            if word:
                self.commands.put(word)
        try:
            return self.commands.get_nowait()
        except queue.Empty:
            if self.cfg.auto_start and self.machine.mode is Mode.HOLD:
                return "start"
            return None

    def _on_enter(self, mode: Mode) -> None:
        if mode is Mode.MOVE_TO_DEFAULT:
            self.move_from = self.state.q.copy()
        elif mode is Mode.ACTIVE:  # a fresh start: a recurrent policy forgets the last run
            self.policy.reset()
            self.next_policy_s = 0.0
            self.active_steps = 0
            self.last_action[:] = 0.0
            self.target = self.default.copy()

    def _policy_due(self, clock: DeadlineClock) -> bool:
        """Whether this tick runs the policy: every control_dt on the ticks' scheduled
        times (not their wake times, which vary), by time rather than by tick count so
        that overrun ticks do not slow it; after an overrun the schedule restarts."""
        tick = clock.tick_s
        if tick < self.next_policy_s - clock.period_s / 2:
            return False
        self.next_policy_s = max(self.next_policy_s, tick) + self.meta.control_dt
        return True

    def _take_velocity(self, link: Link, now: float, fresh: bool) -> None:
        """Offer this tick's walking commands: cmd_vel, the remote (while a stick is out
        of its dead zone, then once zero on release), velocity keys."""
        twists = link.velocity_commands()
        velocity = self.velocity
        if velocity is None:
            return
        for command in twists:
            velocity.offer("cmd_vel", command, now)
        remote = self.state.wireless_remote if fresh else b""
        if len(remote) == REMOTE_BYTES:
            sticks = parse_remote(remote)
            deflected = sticks.deflected()
            if deflected or self.remote_deflected:
                velocity.offer("remote", remote_command(sticks, velocity.ranges), now)
            self.remote_deflected = deflected
        while not self.velocity_keys.empty():
            key = self.velocity_keys.get_nowait()
            setpoint = key_command(key, velocity.held("keys"), velocity.ranges)
            if setpoint is not None:
                velocity.offer("keys", setpoint, now)

    def _policy_inputs(self, now: float) -> PolicyInputs:
        command = self.velocity.current(now) if self.velocity else np.zeros(3)
        return PolicyInputs(command, self.active_steps * self.meta.control_dt)

    def _policy_step(self, now: float, t: float) -> None:
        self.policy_times.append(now)
        inputs = self._policy_inputs(now)
        self.active_steps += 1
        obs = self.observe(self.state, self.last_action, inputs)
        started = time.perf_counter()
        action = np.asarray(self.policy(obs), dtype=float)
        self.inference_s.append(time.perf_counter() - started)
        self.policy_steps += 1
        fault = action_fault(action, self.cfg.safety.max_abs_action)
        if fault:
            self.machine.fault(now, fault)
            return
        action = np.clip(action, -self.meta.action_clip, self.meta.action_clip)
        self.target = action_to_target(
            action,
            default=self.default + self.observe.reference_offset(inputs),
            scale=self.scale,
            lower=self.lower,
            upper=self.upper,
            previous=self.target,
            max_step=self.cfg.safety.max_target_step_rad,
        )
        self.last_action = action
        if self.log:
            self.log.observation(t, obs)
            self.log.action(t, action)

    def motor_command(self, now: float) -> MotorCommand:
        mode, zeros = self.machine.mode, np.zeros(len(JOINT_NAMES))
        if mode is Mode.DAMPING:
            return MotorCommand.damping(self.cfg.safety.damping_kd)
        if mode is Mode.ZERO_TORQUE:
            return MotorCommand.zero_torque()
        if mode is Mode.MOVE_TO_DEFAULT:
            elapsed = now - self.machine.mode_since
            q = move_to_default(self.move_from, self.default, elapsed, self.cfg.safety.move_s)
        else:
            q = self.default if mode is Mode.HOLD else self.target
        return MotorCommand(q.copy(), zeros, zeros.copy(), self.kp.copy(), self.kd.copy())

    def run(self) -> dict:
        cfg = self.cfg
        clock = DeadlineClock(1.0 / cfg.rate_hz)
        stopping: list[int] = []
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
        self.log = BackgroundLog(self._open_log()) if cfg.log_dir else None
        try:
            with contextlib.ExitStack() as stack:
                if cfg.interactive:
                    velocity = self.velocity_keys if self.velocity else None
                    stack.enter_context(terminal_keys(self.commands, velocity))
                self._loop(stack.enter_context(self.open_link(self)), clock, stopping)
        finally:
            signal.signal(signal.SIGTERM, previous)
            if self.log:
                self.log.close()
        return self.summary(clock)

    def _loop(self, link: Link, clock: DeadlineClock, stopping) -> None:
        scheduling = realtime_process(self.cfg.rt_priority)
        print(
            f"deploy node ready on DDS domain {self.cfg.domain_id} at {self.cfg.rate_hz:g} Hz: "
            f"{link.name}, {scheduling}",
            flush=True,
        )
        start, n_tick = None, 0
        try:
            while not stopping:
                now = clock.wait()
                gap = self._loop_gap(now)
                start = now if start is None else start
                t = now - start
                if self.cfg.duration_s is not None and t >= self.cfg.duration_s:
                    break
                before = self.machine.mode
                fresh = self._take_states(link, now)
                self._take_velocity(link, now, fresh)
                self._check_writers(link, now, n_tick)
                n_tick += 1
                mode = self.machine.update(
                    now,
                    state_age_s=None if self.last_state_s is None else now - self.last_state_s,
                    consecutive_bad=self.consecutive_bad,
                    new_state=fresh,
                    command=self._operator_command(link),
                    tick_age_s=self.ticks.age(now) if link.has_tick else None,
                    loop_gap_s=gap,
                )
                if mode is Mode.ACTIVE and self._policy_due(clock):
                    self._policy_step(now, t)
                self._announce(before, start, link)
                cmd = None
                if self.state is not None:
                    cmd = self.motor_command(now)
                    link.send(cmd, self.state)
                if self.log:
                    self._log_tick(t, cmd, fresh, link, clock, now)
        except KeyboardInterrupt:
            pass
        if self.state is not None:  # leave the robot damped, not holding the last target
            damping = MotorCommand.damping(self.cfg.safety.damping_kd)
            for _ in range(5):
                link.send(damping, self.state)
                time.sleep(1.0 / self.cfg.rate_hz)

    def _announce(self, before: Mode, start: float, link: Link) -> None:
        """Print (and act on) every transition made since `before` this tick."""
        if self.machine.mode is before:
            return
        if before is Mode.ACTIVE and self.velocity:  # stopped: nothing walks on at restart
            self.velocity.stop(time.monotonic())
        self._on_enter(self.machine.mode)
        tr = self.machine.transitions[-1]
        print(
            f"mode {tr.old.value} -> {tr.new.value} ({tr.reason}) at {tr.t - start:.3f} s",
            flush=True,
        )
        if LIFECYCLE[tr.new.value] != LIFECYCLE[tr.old.value]:
            link.announce(LIFECYCLE[tr.new.value])

    def _open_log(self) -> RolloutLog:
        meta = LogMeta(
            robot="g1",
            joint_names=JOINT_NAMES,
            control_dt=self.meta.control_dt,
            command_fields=COMMAND_FIELDS,
            observation_names=tuple(self.meta.observation_names),
            action_names=JOINT_NAMES,
            task=self.meta.task,
            source="robot",
            policy=str(self.policy.path),
        )
        return RolloutLog(self.cfg.log_dir, meta)

    def _log_tick(self, t, cmd, fresh, link: Link, clock: DeadlineClock, now: float) -> None:
        """Queue this tick's log messages (after the command went out)."""
        log = self.log
        if cmd is not None:
            log.command(t, np.stack([cmd.q, cmd.dq, cmd.kp, cmd.kd, cmd.tau], axis=1))
        if fresh:
            s = self.state
            log.joint_state(t, s.q, s.dq, s.tau_est)
            log.imu(t, s.quat_wxyz, s.gyro, s.accel)
        for force, torque in link.wrenches():
            log.wrench(t, force, torque)
        log.loop_timing(t, clock.last_period_s, time.monotonic() - now)

    def summary(self, clock: DeadlineClock) -> dict:
        out = {
            "mode": self.machine.mode.value,
            "transitions": [
                f"{tr.old.value} -> {tr.new.value} ({tr.reason})" for tr in self.machine.transitions
            ],
            "bad_states": self.bad_states,
            "policy_steps": self.policy_steps,
            **(self.velocity.counters() if self.velocity else {}),
            **clock.jitter_stats(),
            **policy_jitter(self.policy_times, self.meta.control_dt),
        }
        if self.inference_s:
            us = np.array(self.inference_s) * 1e6
            out["inference_p50_us"] = round(float(np.percentile(us, 50)), 1)
            out["inference_p99_us"] = round(float(np.percentile(us, 99)), 1)
        if self.log:
            out["log_dropped"] = self.log.dropped
            out["log"] = str(self.log.path)
        return out


def policy_jitter(times: list[float], period_s: float) -> dict[str, float]:
    """The policy loop's period minus its nominal (ms): p50, p99, max."""
    if len(times) < 2:
        return {}
    jitter_ms = (np.diff(times) - period_s) * 1e3
    return {
        "policy_jitter_p50_ms": round(float(np.percentile(jitter_ms, 50)), 3),
        "policy_jitter_p99_ms": round(float(np.percentile(jitter_ms, 99)), 3),
        "policy_jitter_max_ms": round(float(jitter_ms.max()), 3),
    }


def main(policy_path: Path, cfg: DeployConfig) -> int:
    node = G1Node(load_g1_policy(policy_path), cfg)
    try:
        summary = node.run()
    except SecondWriterError as err:
        print(f"simreal deploy: error: {err}", file=sys.stderr, flush=True)
        return 2
    print(json.dumps(summary), flush=True)
    return 0
