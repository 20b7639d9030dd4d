"""The virtual G1: the simulated robot behind the real one's DDS interface.

Every tick (500 Hz by default, on a deadline clock) it takes the LowCmd_ samples that
arrived on `rt/lowcmd`, drops any whose crc is wrong (and counts them), applies the
newest valid one (after the overlay's latency), steps MuJoCo one physics step and
publishes `rt/lowstate` with its crc.

Before its first valid command the robot waits, frozen in the default pose (the
operator has not let go of it yet); the first command, even a zero-torque one, releases
it. After that, when no valid command has come for `stale_command_s` (100 ms) it
applies damping (kp 0, kd 8 on every motor) until commands resume. Unitree does not
document what the G1's motor drivers do when `rt/lowcmd` stops; this is the safe
choice a stale-command watchdog makes (Unitree's earlier ROS wrappers switch the motors
to damping after 50 ms without a command), not a claim about the firmware.
"""

from __future__ import annotations

import json
import signal
import sys
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from simreal.deploy.dds import DdsParticipant, stream_qos
from simreal.deploy.dds.unitree_hg import LOWCMD_TOPIC, LOWSTATE_TOPIC, LowCmd_, LowState_
from simreal.deploy.g1.clock import DeadlineClock
from simreal.deploy.g1.messages import lowstate, motor_command
from simreal.deploy.g1.sim_robot import DEFAULT_Q, MotorCommand, SimG1
from simreal.robots.g1.overlay import Overlay

DAMPING_KD = 8.0


@dataclass
class VirtualRobotConfig:
    rate_hz: float = 500.0
    domain_id: int = 0
    overlay: Overlay = field(default_factory=Overlay)
    hang: bool = False
    band: bool = False
    stale_command_s: float = 0.1
    duration_s: float | None = None


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


def run_virtual_robot(cfg: VirtualRobotConfig) -> dict:
    """Run until SIGINT/SIGTERM or `duration_s`; return a summary (also for tests)."""
    dt = 1.0 / cfg.rate_hz
    robot = SimG1(dt=dt, overlay=cfg.overlay, hang=cfg.hang, band=cfg.band)
    gate = CommandGate(cfg.stale_command_s, cfg.overlay.latency_ms / 1e3)
    clock = DeadlineClock(dt)
    stopping: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    with DdsParticipant(cfg.domain_id) as dds:
        state_writer = dds.writer(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False))
        cmd_reader = dds.reader(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False, depth=16))
        print(f"virtual g1 ready: {cfg.rate_hz:g} Hz on DDS domain {cfg.domain_id}", flush=True)
        ticks, start = 0, None
        try:
            while not stopping:
                now = clock.wait()
                start = now if start is None else start
                if cfg.duration_s is not None and now - start >= cfg.duration_s:
                    break
                for sample in cmd_reader.take(16):
                    if isinstance(sample, LowCmd_):
                        gate.receive(now, motor_command(sample))
                robot.apply(gate.command(now))
                if gate.state != "waiting":
                    robot.step()
                ticks += 1
                state_writer.write(lowstate(robot.sensors(), round(ticks * dt * 1e3)))
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
    return {
        "command_state": gate.state,
        "valid_commands": gate.valid,
        "bad_crc_commands": gate.bad_crc,
        "stale_events": gate.stale_events,
        "sim_time_s": round(robot.data.time, 3),
        "pelvis_height_m": round(robot.pelvis_height, 4),
        "joint_rmse_to_default_rad": round(
            float(np.sqrt(np.mean((robot.joint_pos - DEFAULT_Q) ** 2))), 4
        ),
        "joint_pos": [round(float(x), 4) for x in robot.joint_pos],
        **clock.jitter_stats(),
    }


def main(cfg: VirtualRobotConfig) -> int:
    summary = run_virtual_robot(cfg)
    print(json.dumps(summary), flush=True)
    sys.stdout.flush()
    return 0
