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


def load_hung_log(path: Path | str, need: tuple[str, ...], routine: str) -> HungLog:
    """Read the series `need` (keys of TOPIC_OF); raise naming the topics the log lacks."""
    rollout = read_rollout(path)
    missing = sorted({TOPIC_OF[k] for k in need if k not in rollout.series})
    if missing:
        raise CalibrationError(
            f"{path}: `{routine}` needs topic(s) {', '.join(missing)}, which the log lacks"
        )
    if tuple(rollout.meta.joint_names) != JOINT_NAMES and any(
        k.startswith("joint") or k == "command" for k in need
    ):
        raise CalibrationError(f"{path}: joints are not the G1's 29 in SDK order")
    s = rollout.series
    t = s[need[0]].t
    lengths = {k: len(s[k].t) for k in need}
    if len(set(lengths.values())) != 1:
        raise CalibrationError(
            f"{path}: series of unequal lengths {lengths}; expected one row per tick"
        )
    log = HungLog(Path(path), float(rollout.meta.control_dt), t)
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


def joint_indices(names: tuple[str, ...]) -> np.ndarray:
    return np.array([JOINT_NAMES.index(n) for n in names])
