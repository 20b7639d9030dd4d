"""Running an excitation on a robot over DDS (the deploy bridge's unitree_hg link), logging
a rosbag2 the fits read: the virtual G1 of `simreal sim-robot g1 --hang` in another
process, or a real G1.

The loop runs at the excitation's rate on the deploy node's deadline clock: each tick it
takes the newest rt/lowstate, sends the next rt/lowcmd target and logs both, one row per
tick (the state of a tick without a new state is the previous one, and counted), so the
log has the same shape as an in-process excitation. The transport and the loop's phase
against the robot's own clock add to the actuation latency the `actuators` fit reports:
over DDS that is the latency the policy will see too.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from simreal.calibration.excite import COMMAND_FIELDS, Excitation, motor_command
from simreal.calibration.logdata import CalibrationError
from simreal.deploy.dds import DdsParticipant
from simreal.deploy.g1.clock import DeadlineClock
from simreal.deploy.g1.links import UnitreeLink
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.deploy.logs import LogMeta, RolloutLog
from simreal.robots.g1 import JOINT_NAMES

DAMPING_KD = 2.0
"""N m s/rad: the command left on the robot when the excitation ends (as the deploy node)."""


def run_dds(exc: Excitation, log_dir: Path | str, domain_id: int, wait_s: float = 10.0) -> dict:
    """Run `exc` against the robot on DDS domain `domain_id`; returns loop statistics.

    Waits up to `wait_s` for the first rt/lowstate and raises CalibrationError naming the
    topic when none comes."""
    dt = float(exc.t[1] - exc.t[0])
    meta = LogMeta(
        robot="g1",
        joint_names=JOINT_NAMES,
        control_dt=dt,
        command_fields=COMMAND_FIELDS,
        task="calibrate-excite",
        source="robot-dds",
    )
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
        clock = DeadlineClock(dt)
        stale = bad_total = 0
        with RolloutLog(log_dir, meta) as log:
            for k, t in enumerate(exc.t):
                now = clock.wait()
                fresh, bad = link.receive(now)
                bad_total += bad
                if fresh is None:
                    stale += 1
                else:
                    state = fresh
                cmd = motor_command(exc, k)
                link.send(cmd, state)
                log.command(t, np.stack([cmd.q, cmd.dq, cmd.kp, cmd.kd, cmd.tau], axis=1))
                log.joint_state(t, state.q, state.dq, state.tau_est)
                log.imu(t, state.quat_wxyz, state.gyro, state.accel)
        for _ in range(5):
            link.send(MotorCommand.damping(DAMPING_KD), state)
            time.sleep(dt)
    return {"ticks_without_new_state": stale, "bad_states": bad_total, **clock.jitter_stats()}
