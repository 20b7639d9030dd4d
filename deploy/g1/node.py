"""The G1 deploy node over DDS: the safety state machine at 500 Hz, the policy at 50 Hz.

Every tick (deadline clock) it takes the newest `rt/lowstate` (dropping and counting any
with a bad crc or non-finite values), reads operator commands (`rt/simreal/command`,
std_msgs/String `start`/`stop`/`estop`, and stdin lines when interactive), advances the
`StateMachine`, and sends one LowCmd_ with `mode_machine` copied from the latest state and
its crc set. In ACTIVE the policy runs every `control_dt`; its action becomes the joint
targets through `action_to_target` (scaled, rate-limited, clamped to the joint limits).
Nothing is sent before the first valid state: the node does not know `mode_machine` yet.
"""

from __future__ import annotations

import json
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simreal.deploy.dds import DdsParticipant, crc_ok, stream_qos, topic_name
from simreal.deploy.dds.ros2 import String
from simreal.deploy.dds.unitree_hg import LOWCMD_TOPIC, LOWSTATE_TOPIC, LowCmd_, LowState_
from simreal.deploy.g1.clock import DeadlineClock
from simreal.deploy.g1.messages import RobotState, lowcmd, robot_state
from simreal.deploy.g1.observation import ObservationFn, observation_function
from simreal.deploy.g1.safety import (
    COMMANDS,
    Mode,
    SafetyConfig,
    StateMachine,
    action_fault,
    action_to_target,
    move_to_default,
)
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.deploy.logs import LogMeta, RolloutLog
from simreal.deploy.runtime import OnnxPolicy, PolicyMetadataError
from simreal.robots.g1 import JOINT_NAMES, JOINTS

COMMAND_TOPIC = topic_name("/simreal/command")
CONTROL_DT = 0.02
COMMAND_FIELDS = ("q", "dq", "kp", "kd", "tau")
_KEYS = {"s": "start", "p": "stop", "e": "estop"}
"""Interactive keys (each followed by Enter); the full words work too."""


@dataclass
class DeployConfig:
    domain_id: int = 0
    rate_hz: float = 500.0
    duration_s: float | None = None
    log_dir: Path | None = None
    interactive: bool = False
    auto_start: bool = False
    """Turn the policy on as soon as the robot holds its default pose (benchmarks, tests);
    otherwise only an explicit `start` does."""
    safety: SafetyConfig = field(default_factory=SafetyConfig)


def load_g1_policy(path: Path) -> OnnxPolicy:
    """The policy, refused (naming what differs) unless it was made for this G1 at 50 Hz."""
    policy = OnnxPolicy(path)
    policy.check_compatible(robot="g1", joint_names=JOINT_NAMES, control_dt=CONTROL_DT)
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
    return policy


def _stdin_commands(out: queue.Queue) -> None:
    for line in sys.stdin:
        word = line.strip().lower()
        word = _KEYS.get(word, word)
        if word in COMMANDS:
            out.put(word)


class G1Node:
    def __init__(self, policy: OnnxPolicy, cfg: DeployConfig, observe: ObservationFn | None = None):
        self.policy, self.cfg, self.meta = policy, cfg, policy.metadata
        self.observe = observe or observation_function(self.meta)
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
        self.last_action = np.zeros(len(JOINT_NAMES))
        self.target = self.default.copy()
        self.move_from = self.default.copy()

    def _take_states(self, reader, now: float) -> bool:
        fresh = False
        for sample in reader.take(16):
            if not isinstance(sample, LowState_):
                continue
            state = robot_state(sample) if crc_ok(sample) else None
            if state is None or not state.is_finite():
                self.bad_states += 1
                self.consecutive_bad += 1
                continue
            self.state, self.last_state_s, self.consecutive_bad, fresh = state, now, 0, True
        return fresh

    def _operator_command(self, reader) -> str | None:
        for sample in reader.take(8):
            if isinstance(sample, String) and sample.data.strip() in COMMANDS:
                self.commands.put(sample.data.strip())
        try:
            return self.commands.get_nowait()
        except queue.Empty:
            if self.cfg.auto_start and self.machine.mode is Mode.HOLD:
                return "start"
            return None

    def _on_enter(self, mode: Mode) -> None:
        if mode is Mode.MOVE_TO_DEFAULT:
            self.move_from = self.state.q.copy()
        elif mode is Mode.ACTIVE:
            self.next_policy_s = 0.0
            self.last_action[:] = 0.0
            self.target = self.default.copy()

    def _policy_step(self, now: float, log: RolloutLog | None, t: float) -> None:
        self.policy_times.append(now)
        obs = self.observe(self.state, self.last_action, self.meta)
        action = np.asarray(self.policy(obs), dtype=float)
        self.policy_steps += 1
        fault = action_fault(action, self.cfg.safety.max_abs_action)
        if fault:
            self.machine.fault(now, fault)
            return
        self.target = action_to_target(
            action,
            default=self.default,
            scale=self.scale,
            lower=self.lower,
            upper=self.upper,
            previous=self.target,
            max_step=self.cfg.safety.max_target_step_rad,
        )
        self.last_action = action
        if log:
            log.observation(t, obs)
            log.action(t, action)

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
        if cfg.interactive:
            threading.Thread(target=_stdin_commands, args=(self.commands,), daemon=True).start()
        log = self._open_log() if cfg.log_dir else None
        try:
            with DdsParticipant(cfg.domain_id) as dds:
                self._loop(dds, clock, log, stopping)
        finally:
            signal.signal(signal.SIGTERM, previous)
            if log:
                log.close()
        return self.summary(clock)

    def _loop(self, dds: DdsParticipant, clock: DeadlineClock, log, stopping: list) -> None:
        cmd_writer = dds.writer(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False))
        state_reader = dds.reader(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False, depth=16))
        operator_reader = dds.reader(COMMAND_TOPIC, String, stream_qos(reliable=True, depth=8))
        print(f"deploy node ready on DDS domain {self.cfg.domain_id}", flush=True)
        start = None
        try:
            while not stopping:
                now = clock.wait()
                start = now if start is None else start
                t = now - start
                if self.cfg.duration_s is not None and t >= self.cfg.duration_s:
                    break
                fresh = self._take_states(state_reader, now)
                before = self.machine.mode
                mode = self.machine.update(
                    now,
                    state_age_s=None if self.last_state_s is None else now - self.last_state_s,
                    consecutive_bad=self.consecutive_bad,
                    new_state=fresh,
                    command=self._operator_command(operator_reader),
                )
                if mode is Mode.ACTIVE and now >= self.next_policy_s:
                    # Scheduled by time, not by ticks, so overrun ticks do not slow it.
                    self.next_policy_s = max(self.next_policy_s + self.meta.control_dt, now)
                    self._policy_step(now, log, t)
                self._announce(before, start)
                if self.state is not None:
                    cmd = self.motor_command(now)
                    cmd_writer.write(lowcmd(cmd, self.state.mode_machine))
                    if log:
                        self._log_tick(log, t, cmd, fresh)
                if log:
                    log.loop_timing(t, clock.last_period_s, time.monotonic() - now)
        except KeyboardInterrupt:
            pass
        if self.state is not None:  # leave the robot damped, not holding the last target
            damping = MotorCommand.damping(self.cfg.safety.damping_kd)
            damp = lowcmd(damping, self.state.mode_machine)
            for _ in range(5):
                cmd_writer.write(damp)
                time.sleep(1.0 / self.cfg.rate_hz)

    def _announce(self, before: Mode, start: float) -> None:
        """Print (and act on) every transition made since `before` this tick."""
        if self.machine.mode is before:
            return
        self._on_enter(self.machine.mode)
        tr = self.machine.transitions[-1]
        print(
            f"mode {tr.old.value} -> {tr.new.value} ({tr.reason}) at {tr.t - start:.3f} s",
            flush=True,
        )

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

    def _log_tick(self, log: RolloutLog, t: float, cmd: MotorCommand, fresh: bool) -> None:
        log.command(t, np.stack([cmd.q, cmd.dq, cmd.kp, cmd.kd, cmd.tau], axis=1))
        if fresh:
            s = self.state
            log.joint_state(t, s.q, s.dq, s.tau_est)
            log.imu(t, s.quat_wxyz, s.gyro, s.accel)

    def summary(self, clock: DeadlineClock) -> dict:
        return {
            "mode": self.machine.mode.value,
            "transitions": [
                f"{tr.old.value} -> {tr.new.value} ({tr.reason})" for tr in self.machine.transitions
            ],
            "bad_states": self.bad_states,
            "policy_steps": self.policy_steps,
            **clock.jitter_stats(),
            **policy_jitter(self.policy_times, self.meta.control_dt),
        }


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
    summary = node.run()
    print(json.dumps(summary), flush=True)
    return 0
