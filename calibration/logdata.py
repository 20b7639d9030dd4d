"""A G1 rollout log as the aligned arrays the routines fit, with clear errors for bad logs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simreal.deploy.logs import read_rollout
from simreal.robots.g1 import JOINT_NAMES

TOPIC_OF = {
    "joint_position": "/joint_states",
    "joint_velocity": "/joint_states",
    "joint_effort": "/joint_states",
    "command": "/lowcmd",
    "imu_angular_velocity": "/imu",
    "imu_linear_acceleration": "/imu",
    "imu_orientation": "/imu",
}


MAX_DISTURBED = 0.02
"""Largest fraction of a DDS excitation log's ticks that may be disturbed (state lost,
command late or uncertain, robot tick late: `excite_dds`) for the fits to run on it."""


class CalibrationError(ValueError):
    """A log or request a routine cannot use; the message says what is missing."""


@dataclass
class HungLog:
    """Row k of every array is control tick k. Joints (K, 29) in SDK order."""

    path: Path
    dt: float
    t: np.ndarray
    q: np.ndarray | None = None
    dq: np.ndarray | None = None
    tau: np.ndarray | None = None
    cmd: dict[str, np.ndarray] | None = None
    """Command field ("q", "dq", "kp", "kd", "tau") -> (K, 29)."""
    gyro: np.ndarray | None = None
    accel: np.ndarray | None = None
    quat: np.ndarray | None = None
    loop: dict | None = None
    """The DDS client's statistics (`excite_dds`), None for an in-process log."""
    excitation: str = "hung"
    """How the robot was held (`Excitation.kind`): "hung" or "stance"."""
    uncertain_command: np.ndarray | None = None
    """(K,) bool: rows whose command in force is uncertain (sent so close to the robot's
    tick that it may have been taken at this tick or the next; DDS logs). The gain fit
    leaves out every row whose torque such a command could have shaped."""
    bad_state: np.ndarray | None = None
    """(K,) bool: rows whose state was lost (interpolated) or came off the robot's tick
    period (DDS logs). The fits leave out the rows that difference such a state."""


def load_hung_log(path: Path | str, need: tuple[str, ...], routine: str) -> HungLog:
    """Read the series `need` (keys of TOPIC_OF); raise naming the topics the log lacks."""
    rollout = read_rollout(path)
    if rollout.meta.robot != "g1":
        raise CalibrationError(
            f"{path}: a log of robot {rollout.meta.robot!r}; the fits expect 'g1'"
        )
    missing = sorted({TOPIC_OF[k] for k in need if k not in rollout.series})
    if missing:
        raise CalibrationError(
            f"{path}: `{routine}` needs topic(s) {', '.join(missing)}, which the log lacks"
        )
    if tuple(rollout.meta.joint_names) != JOINT_NAMES and any(
        k.startswith("joint") or k == "command" for k in need
    ):
        raise CalibrationError(
            f"{path}: joints {list(rollout.meta.joint_names)} are not the G1's 29 in SDK "
            f"order {list(JOINT_NAMES)}"
        )
    s = rollout.series
    t = s[need[0]].t
    dt = float(rollout.meta.control_dt)
    if len(t) > 1 and abs(float(np.median(np.diff(t))) - dt) > 1e-3 * dt:
        raise CalibrationError(
            f"{path}: rows are {float(np.median(np.diff(t))) * 1e3:g} ms apart but the log "
            f"says control_dt {dt * 1e3:g} ms; the fits need one row per tick"
        )
    lengths = {k: len(s[k].t) for k in need}
    if len(set(lengths.values())) != 1:
        raise CalibrationError(
            f"{path}: series of unequal lengths {lengths}; expected one row per tick"
        )
    config = rollout.meta.task_config or {}
    log = HungLog(
        Path(path), dt, t, loop=config.get("dds_loop"), excitation=config.get("excitation", "hung")
    )
    log.uncertain_command, log.bad_state = (
        _row_mask(log.loop, key, len(t), path)
        for key in ("uncertain_command_rows", "bad_state_rows")
    )
    if "joint_position" in need:
        log.q = s["joint_position"].values
        log.dq = s["joint_velocity"].values
        log.tau = s["joint_effort"].values
    if "command" in need:
        fields = rollout.meta.command_fields
        lacking = [f for f in ("q", "dq", "kp", "kd", "tau") if f not in fields]
        if lacking:
            raise CalibrationError(f"{path}: /lowcmd lacks command field(s) {', '.join(lacking)}")
        cmd = s["command"].values
        log.cmd = {f: cmd[:, :, fields.index(f)] for f in ("q", "dq", "kp", "kd", "tau")}
    if "imu_angular_velocity" in need:
        log.gyro = s["imu_angular_velocity"].values
        log.accel = s["imu_linear_acceleration"].values
        log.quat = s["imu_orientation"].values
    return log


def _row_mask(loop: dict | None, key: str, rows: int, path) -> np.ndarray | None:
    """The (rows,) bool mask of `loop[key]`'s [start, stop) ranges; None when absent."""
    if not loop or key not in loop:
        return None
    mask = np.zeros(rows, dtype=bool)
    for start, stop in loop[key]:
        if not 0 <= start < stop <= rows:
            raise CalibrationError(
                f"{path}: dds_loop.{key} range [{start}, {stop}) is outside the log's {rows} rows"
            )
        mask[start:stop] = True
    return mask


def check_loop(log: HungLog, allow_disturbed: bool = False) -> str | None:
    """Refuse a DDS log with more than MAX_DISTURBED of its ticks disturbed, naming the
    counts; with `allow_disturbed`, return the same as a warning instead (None when the
    log is fine or was run in process)."""
    loop = log.loop
    if not loop or loop.get("disturbed_fraction", 0.0) <= MAX_DISTURBED:
        return None
    counts = ", ".join(
        f"{loop.get(k, 0)} {k.replace('_', ' ')}"
        for k in ("states_lost", "late_commands", "uncertain_commands", "robot_late_ticks")
    )
    message = (
        f"{log.path}: {loop['disturbed_ticks']} of {loop['steps']} ticks "
        f"({100 * loop['disturbed_fraction']:.1f} %) disturbed ({counts}; "
        f"{loop.get('scheduling', '')}), more than {100 * MAX_DISTURBED:g} %: the fits "
        "would see a motor that did not follow its logged command. Excite again with "
        "`--rt-priority` or on a quieter machine"
    )
    if not allow_disturbed:
        raise CalibrationError(message + " (or pass --allow-disturbed to fit anyway).")
    return "WARNING: " + message + "; fitted anyway (--allow-disturbed)."


def joint_indices(names: tuple[str, ...]) -> np.ndarray:
    return np.array([JOINT_NAMES.index(n) for n in names])
