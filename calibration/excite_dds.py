"""Running an excitation on a robot over DDS (the deploy bridge's unitree_hg link), logging
a rosbag2 the fits read: the virtual G1 of `simreal sim-robot g1 --hang` in another
process, or a real G1.

The loop is driven by the robot's own clock, not the client's: each rt/lowstate carries
the robot's tick (ms), and on the state that ends robot step s the client sends the
command for step s + 1. Row k of the log is robot step k + 1: the command the robot
actually had in force then and the state after it.

Why "actually in force". A client that is descheduled finds several states queued when
it wakes; the ticks in between ran on whatever command the robot last took. Logging the
planned command for those rows makes the fits see a motor that did not follow its
command (kp 88 % off, latency 3 ms off, with small stds and no warning, measured on this
machine). So the client takes every queued state, answers only the newest, and after
the run works out, from the robot's publish times (DDS source timestamps) and its own
send times, which command the robot took at each tick (`commands_in_force`):

- the robot takes rt/lowcmd at the start of a tick and publishes the state within
  `margin` of that start, so a command sent after step s's state was published was
  taken at step s + 1 or later, and one sent more than `margin` before step s's state
  was published was taken by step s;
- in between, which tick took it is uncertain: such ticks are counted, with the lost
  states, the late commands (ticks whose planned command was not in force) and the
  robot's own late ticks (its period off by more than half a tick), as disturbed.

The fits refuse a log with more than `MAX_DISTURBED` of its ticks disturbed
(`logdata.check_loop`). Before the first command the client watches the robot's ticks
and refuses a robot whose tick period is not the excitation's (e.g. `sim-robot --rate
1000` against a 2 ms excitation), naming both. Lost states are interpolated.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simreal.calibration.excite import (
    Excitation,
    excitation_log_meta,
    motor_command,
)
from simreal.calibration.logdata import CalibrationError
from simreal.deploy.dds import DdsParticipant, take_raw_from
from simreal.deploy.g1.clock import realtime_process
from simreal.deploy.g1.links import UnitreeLink
from simreal.deploy.g1.messages import decode_lowstate
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.deploy.logs import RolloutLog

DAMPING_KD = 2.0
"""N m s/rad: the command left on the robot when the excitation ends (as the deploy node)."""
SETTLE_STATES = 25
"""States watched before the first command, to measure the robot's tick period."""


@dataclass(frozen=True)
class DdsExcitation:
    """How the client runs against the robot."""

    domain_id: int
    wait_s: float = 10.0
    """Longest wait for the first rt/lowstate, and longest silence during the run."""
    rt_priority: int | None = None
    """SCHED_FIFO priority of the client's loop (`clock.realtime_process`); None: normal."""
    margin_ms: float | None = None
    """The robot's largest time from a tick's start to its state's publication (plus
    transport); None: half a tick. Commands sent closer than this before a state are
    counted uncertain (replies on loopback take ~0.1 ms, so in-time commands sit ~1.9 ms
    before the next state)."""


@dataclass
class InForce:
    """Per log row (robot steps 1..n): which excitation row's command was in force."""

    command_row: np.ndarray
    """(n,) int: the excitation row whose command the robot had taken by then (-1: none yet)."""
    late: np.ndarray
    """(n,) bool: the planned command (row k for row k) was not the one in force."""
    uncertain: np.ndarray
    """(n,) bool: a command could have been taken at this step or the next."""


def commands_in_force(
    sent_row: np.ndarray, sent_ns: np.ndarray, step_ns: np.ndarray, margin_ns: float
) -> InForce:
    """Which command the robot had in force at each of steps 1..n.

    `sent_row` (C,): the excitation rows sent, in send order; `sent_ns` (C,): their send
    times on the robot's clock; `step_ns` (n + 1,): publish times of the robot's states
    of steps 0..n (increasing; lost ones interpolated). The robot starts step s at some
    T_s in [step_ns[s] - margin, step_ns[s]] and takes there every command that arrived
    before; so a command sent at x was taken at the first step whose state came after x
    at the earliest, at the first whose state came more than `margin` after x at the
    latest. Between the two its step is uncertain (guessed at the midpoint)."""
    n = len(step_ns) - 1
    earliest = np.searchsorted(step_ns, sent_ns, side="right")
    latest = np.searchsorted(step_ns - margin_ns, sent_ns, side="right")
    guess = np.searchsorted(step_ns - margin_ns / 2, sent_ns, side="right")
    guess = np.maximum.accumulate(guess) if len(guess) else guess
    steps = np.arange(1, n + 1)
    last = np.searchsorted(guess, steps, side="right") - 1
    command_row = np.where(last >= 0, np.asarray(sent_row)[np.maximum(last, 0)], -1)
    uncertain = np.zeros(n, dtype=bool)
    for lo, hi in zip(earliest, latest, strict=True):
        uncertain[max(lo, 1) - 1 : min(hi, n + 1) - 1] = True
    return InForce(command_row, command_row != np.arange(n), uncertain)


def _check_period(ticks: list[int], publish_ns: list[int], dt_ms: float) -> float:
    """The robot's tick period (ms) from the tick fields of consecutive states; raises
    CalibrationError naming both periods when it is not the excitation's."""
    steps = np.diff(np.asarray(ticks, dtype=float))
    steps = steps[steps > 0]
    if not len(steps):
        raise CalibrationError(f"rt/lowstate tick does not advance (ticks {ticks[:5]}...)")
    robot_ms = float(np.median(steps))
    if abs(robot_ms - dt_ms) > 1e-6:
        wall_ms = float(np.median(np.diff(publish_ns))) / 1e6
        raise CalibrationError(
            f"the robot ticks every {robot_ms:g} ms (rt/lowstate tick; states every "
            f"{wall_ms:.3g} ms), but the excitation log assumes {dt_ms:g} ms (control_dt "
            f"{dt_ms / 1e3:g} s): run the robot at {1e3 / dt_ms:g} Hz (`sim-robot --rate "
            f"{1e3 / dt_ms:g}`) or excite at its rate"
        )
    return robot_ms


def run_dds(
    exc: Excitation, log_dir: Path | str, domain_id: int | DdsExcitation, wait_s: float = 10.0
) -> dict:
    """Run `exc` against the robot on a DDS domain; log it; return loop statistics.

    `domain_id`: the domain, or a DdsExcitation with it and the loop's settings. Raises
    CalibrationError naming the topic when no rt/lowstate comes within `wait_s`, and
    naming both periods when the robot's tick is not the excitation's."""
    cfg = domain_id if isinstance(domain_id, DdsExcitation) else DdsExcitation(domain_id, wait_s)
    dt = float(exc.t[1] - exc.t[0])
    dt_ms = dt * 1e3
    n = len(exc.t)
    states: list = [None] * (n + 1)  # step 0: the state the first command answers
    publish = np.full(n + 1, np.nan)  # ns, robot clock
    offsets: list[int] = []  # arrival minus publish time, ns: the clocks' offset + transport
    sent_row: list[int] = []
    sent_ns: list[int] = []
    reply: list[float] = []  # s from taking the newest state to sending its answer
    bad_total = 0
    with DdsParticipant(cfg.domain_id) as dds:
        link = UnitreeLink(dds)
        scheduling = realtime_process(cfg.rt_priority)

        def take() -> list[tuple[object, int]]:
            nonlocal bad_total
            taken = take_raw_from(link.reader, 64)
            now_ns = time.time_ns()  # after the take: every sample taken arrived before it
            out = []
            for data, _, stamp in taken:
                state = decode_lowstate(data)
                if state is None or not state.is_finite():
                    bad_total += 1
                    continue
                offsets.append(now_ns - stamp)
                out.append((state, stamp))
            return out

        seen: list[tuple[object, int]] = []
        end = time.monotonic() + cfg.wait_s
        while len(seen) < SETTLE_STATES and time.monotonic() < end:
            seen += take()
            time.sleep(0.001)
        if not seen:
            raise CalibrationError(
                f"no rt/lowstate on DDS domain {cfg.domain_id} within {cfg.wait_s} s: is "
                "`simreal sim-robot g1 --hang` (or the robot) running on that domain?"
            )
        robot_ms = _check_period([s.tick for s, _ in seen], [p for _, p in seen], dt_ms)
        first, stamp = seen[-1]
        t0, states[0], publish[0] = first.tick, first, stamp
        newest, last_seen = 0, time.monotonic()
        link.send(motor_command(exc, 0), first)
        sent_row.append(0)
        sent_ns.append(time.time_ns())
        while newest < n:
            fresh = take()
            if not fresh:
                if time.monotonic() - last_seen > cfg.wait_s:
                    raise CalibrationError(
                        f"rt/lowstate on DDS domain {cfg.domain_id} stopped for {cfg.wait_s} s "
                        f"after {newest} of {n} steps"
                    )
                time.sleep(0.0002)
                continue
            last_seen = time.monotonic()
            for state, stamp in fresh:
                step = (state.tick - t0) / dt_ms
                if step != round(step):
                    raise CalibrationError(
                        f"rt/lowstate tick {state.tick} is not on the {dt_ms:g} ms grid from "
                        f"{t0}: the robot's tick period changed"
                    )
                step = round(step)
                if 1 <= step <= n and states[step] is None:
                    states[step], publish[step] = state, stamp
                newest = max(newest, min(step, n))
            if newest < n and newest > sent_row[-1]:
                link.send(motor_command(exc, newest), states[newest] or first)
                sent_ns.append(time.time_ns())
                sent_row.append(newest)
                reply.append(time.monotonic() - last_seen)
        for _ in range(5):
            link.send(MotorCommand.damping(DAMPING_KD), first)
            time.sleep(dt)
        if cfg.rt_priority is not None:
            _normal_scheduling()
    stats, in_force, marked_rows = _loop_stats(
        states, publish, offsets, sent_row, sent_ns, cfg, dt_ms
    )
    reply_ms = np.array(reply or [0.0]) * 1e3
    stats |= {
        "bad_states": bad_total,
        "robot_tick_ms": robot_ms,
        "log_tick_ms": dt_ms,
        "reply_ms_median": float(np.median(reply_ms)),
        "reply_ms_max": float(reply_ms.max()),
        "scheduling": scheduling,
    }
    rows = _fill_lost(states[1:], first)
    meta = excitation_log_meta(dt, source="robot-dds", loop=stats | marked_rows, kind=exc.kind)
    with RolloutLog(log_dir, meta) as log:
        for k, t in enumerate(exc.t):
            cmd = motor_command(exc, max(int(in_force.command_row[k]), 0))
            log.command(t, np.stack([cmd.q, cmd.dq, cmd.kp, cmd.kd, cmd.tau], axis=1))
            log.joint_state(t, rows["q"][k], rows["dq"][k], rows["tau_est"][k])
            log.imu(t, rows["quat_wxyz"][k], rows["gyro"][k], rows["accel"][k])
    return stats


def _normal_scheduling() -> None:
    """Back to normal scheduling for every thread of the process once the loop is over:
    the fits that often follow in the same process are heavy and must not run SCHED_FIFO."""
    for tid in (int(t) for t in os.listdir("/proc/self/task")):
        with contextlib.suppress(PermissionError, ProcessLookupError):
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))


def _loop_stats(
    states, publish, offsets, sent_row, sent_ns, cfg, dt_ms
) -> tuple[dict, InForce, dict[str, list[list[int]]]]:
    """Counts of disturbed ticks (per kind and together), the commands in force, and per
    log row (robot steps 1..n), as [start, stop) ranges, the rows the fits leave out
    (`logdata.HungLog.uncertain_command` / `bad_state`), which go into the log's
    metadata only."""
    n = len(states) - 1
    known = ~np.isnan(publish)
    idx = np.flatnonzero(known)
    step_ns = np.interp(np.arange(n + 1), idx, publish[idx])
    offset = float(min(offsets)) if offsets else 0.0
    margin_ns = (cfg.margin_ms if cfg.margin_ms is not None else dt_ms / 2) * 1e6
    in_force = commands_in_force(
        np.asarray(sent_row), np.asarray(sent_ns, dtype=float) - offset, step_ns, margin_ns
    )
    lost = ~known[1:]
    # The robot's own late ticks: its period off by more than half a tick (between two
    # states that arrived), so the latency it applies in wall time is off in ticks.
    period = np.diff(publish) / 1e6
    robot_late = np.abs(period - dt_ms) > dt_ms / 2  # False where a state was lost
    disturbed = lost | in_force.late | in_force.uncertain | robot_late
    counts = {
        "steps": n,
        "states_lost": int(lost.sum()),
        "late_commands": int(in_force.late.sum()),
        "commands_never_sent": int(n - len(sent_row)),
        "uncertain_commands": int(in_force.uncertain.sum()),
        "robot_late_ticks": int(robot_late.sum()),
        "disturbed_ticks": int(disturbed.sum()),
        "disturbed_fraction": float(disturbed.mean()),
        "clock_offset_ms": offset / 1e6,
    }
    marked_rows = {
        "uncertain_command_rows": row_ranges(in_force.uncertain),
        "bad_state_rows": row_ranges(lost | robot_late),
    }
    return counts, in_force, marked_rows


def row_ranges(mask: np.ndarray) -> list[list[int]]:
    """[start, stop) ranges of the True rows of `mask`: compact in the log's metadata."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return [[int(a), int(b)] for a, b in zip(edges[::2], edges[1::2], strict=True)]


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
