"""Running an excitation on a robot over DDS (the deploy bridge's unitree_hg link), logging
a rosbag2 the fits read: the virtual G1 of `simreal sim-robot g1 --hang` in another
process, or a real G1.

The loop is driven by the robot's own clock, not the client's: each rt/lowstate carries
the robot's tick (ms of physics steps), and on the state that ends robot step j the
client sends the command for step j + 1. Row k of the log is then the command meant for
robot step k and the state after it, whatever the client's own scheduling did, so the
log has the same shape as an in-process excitation (`run_hung`). States lost on the way
are interpolated (counted in the result).

Transport delay. The robot reads rt/lowcmd once per tick, at the tick's start, and
publishes the state at its end; a command that arrives before the next tick starts is
applied exactly as in process, so the `actuators` fit reports the robot's own actuation
latency, not the round trip (cross-process test: 8.063 ms fitted against a hidden
8.062 ms). A command that misses the tick is applied one tick late, for that command
only: the fit sees it as a disturbance, not as latency. The result reports how fast the
loop replied (from a state's arrival to the command answering it) and how many replies
took longer than half a tick, the ones at risk of missing it. Logging happens after the
run, off the loop.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from simreal.calibration.excite import (
    Excitation,
    excitation_log_meta,
    motor_command,
)
from simreal.calibration.logdata import CalibrationError
from simreal.deploy.dds import DdsParticipant
from simreal.deploy.g1.links import UnitreeLink
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.deploy.logs import RolloutLog

DAMPING_KD = 2.0
"""N m s/rad: the command left on the robot when the excitation ends (as the deploy node)."""


def run_dds(exc: Excitation, log_dir: Path | str, domain_id: int, wait_s: float = 10.0) -> dict:
    """Run `exc` against the robot on DDS domain `domain_id`; returns loop statistics.

    Waits up to `wait_s` for the first rt/lowstate and raises CalibrationError naming the
    topic when none comes."""
    dt = float(exc.t[1] - exc.t[0])
    meta = excitation_log_meta(dt, source="robot-dds")
    with DdsParticipant(domain_id) as dds:
        link = UnitreeLink(dds)
        state = None
        end = time.monotonic() + wait_s
        while state is None and time.monotonic() < end:
            state, _ = link.receive(time.monotonic())
            time.sleep(0.005)
        if state is None:
            raise CalibrationError(
                f"no rt/lowstate on DDS domain {domain_id} within {wait_s} s: is "
                "`simreal sim-robot g1 --hang` (or the robot) running on that domain?"
            )
        n = len(exc.t)
        dt_ms = dt * 1e3
        states: list = [None] * n
        sent = np.zeros(n, dtype=bool)
        bad_total, t0, last_seen = 0, state.tick, time.monotonic()
        reaction: list[float] = []  # s from a state's arrival to the command answering it
        link.send(motor_command(exc, 0), state)
        sent[0] = True
        while not sent.all() or states[-1] is None:
            fresh, bad = link.receive(time.monotonic())
            bad_total += bad
            if fresh is None:
                if time.monotonic() - last_seen > wait_s:
                    raise CalibrationError(
                        f"rt/lowstate on DDS domain {domain_id} stopped for {wait_s} s "
                        f"after {int(sent.sum())} of {n} commands"
                    )
                time.sleep(0.0002)
                continue
            last_seen = time.monotonic()
            step = round((fresh.tick - t0) / dt_ms)  # robot steps since the first state
            if 1 <= step <= n:
                states[step - 1] = fresh
            if step < n and not sent[step]:
                link.send(motor_command(exc, step), fresh)
                sent[step] = True
                reaction.append(time.monotonic() - last_seen)
            if step >= n:
                break
        for _ in range(5):
            link.send(MotorCommand.damping(DAMPING_KD), fresh or state)
            time.sleep(dt)
    lost = sum(s is None for s in states)
    rows = _fill_lost(states, state)
    with RolloutLog(log_dir, meta) as log:
        for k, t in enumerate(exc.t):
            cmd = motor_command(exc, k)
            log.command(t, np.stack([cmd.q, cmd.dq, cmd.kp, cmd.kd, cmd.tau], axis=1))
            log.joint_state(t, rows["q"][k], rows["dq"][k], rows["tau_est"][k])
            log.imu(t, rows["quat_wxyz"][k], rows["gyro"][k], rows["accel"][k])
    reaction_ms = np.array(reaction or [0.0]) * 1e3
    return {
        "steps": n,
        "states_lost": lost,
        "bad_states": bad_total,
        "reply_ms_median": float(np.median(reaction_ms)),
        "reply_ms_max": float(reaction_ms.max()),
        "replies_slower_than_half_tick": int((reaction_ms > dt_ms / 2).sum()),
    }


STATE_FIELDS = ("q", "dq", "tau_est", "quat_wxyz", "gyro", "accel")


def _fill_lost(states: list, before) -> dict[str, np.ndarray]:
    """Per field, (K, ...) arrays of the states, the rows of lost states interpolated
    linearly between their neighbours (held at the ends; `before` is the state before
    row 0). A repeated state would be a step with zero velocity the fits take as real."""
    known = np.array([s is not None for s in states])
    idx = np.flatnonzero(known)
    rows = {}
    for name in STATE_FIELDS:
        values = np.array(
            [getattr(s, name) if s is not None else getattr(before, name) for s in states],
            dtype=float,
        )
        if len(idx) and not known.all():
            missing = np.flatnonzero(~known)
            for c in range(values.shape[1]):
                values[missing, c] = np.interp(missing, idx, values[idx, c])
        rows[name] = values
    q = rows["quat_wxyz"]
    rows["quat_wxyz"] = q / np.linalg.norm(q, axis=1, keepdims=True)
    return rows
