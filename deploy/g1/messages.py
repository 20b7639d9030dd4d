"""LowState_ and LowCmd_ to and from numpy arrays in SDK motor order (29 G1 motors).

The loops use the byte functions (`encode_lowcmd`, `decode_lowstate`, ...): they go
from arrays to the DDS bytes through the robot's C-struct record (`crc.LOWCMD_DTYPE`,
`crc.LOWSTATE_DTYPE`) and `cdr.CdrLayout`, a few tens of microseconds, where
cyclonedds' Python IDL objects take about half a millisecond each way. The IDL-object
functions (`lowcmd`, `lowstate`, `robot_state`, `motor_command`) are the same
conversions for code that holds cyclonedds samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.deploy.dds.crc import (
    LOWCMD_CDR,
    LOWCMD_DTYPE,
    LOWSTATE_CDR,
    LOWSTATE_DTYPE,
    record_crc,
)
from simreal.deploy.dds.unitree_hg import LowCmd_, LowState_
from simreal.deploy.g1.sim_robot import MotorCommand, Sensors
from simreal.robots.g1 import JOINT_NAMES

N_JOINTS = len(JOINT_NAMES)
MODE_MACHINE = 5
"""What the virtual robot reports in mode_machine (the 29-DoF G1 reports a small int)."""
COMMAND_FIELDS = ("q", "dq", "tau", "kp", "kd")


@dataclass
class RobotState:
    """One LowState_ as arrays: joints (29,) in SDK order, the IMU, tick (ms), mode_machine."""

    q: np.ndarray
    dq: np.ndarray
    tau_est: np.ndarray
    quat_wxyz: np.ndarray
    gyro: np.ndarray
    accel: np.ndarray
    tick: int
    mode_machine: int
    wireless_remote: bytes = b""
    """The Unitree remote's 40 raw bytes (`remote.parse_remote`); empty where the link
    carries no remote (ROS 2 topics)."""

    def is_finite(self) -> bool:
        return all(
            np.isfinite(a).all()
            for a in (self.q, self.dq, self.tau_est, self.quat_wxyz, self.gyro, self.accel)
        )


def encode_lowstate(
    sensors: Sensors,
    tick_ms: int,
    mode_machine: int = MODE_MACHINE,
    wireless_remote: bytes | None = None,
) -> bytes:
    """The robot's LowState_ bytes for these sensor readings (and the remote's 40 bytes;
    None: a remote at rest, all zero), with its crc."""
    rec = np.zeros((), LOWSTATE_DTYPE)
    rec["mode_machine"] = mode_machine
    if wireless_remote is not None:
        rec["wireless_remote"] = np.frombuffer(wireless_remote, dtype=np.uint8)
    rec["tick"] = tick_ms % 2**32
    imu = rec["imu_state"]
    imu["quaternion"], imu["gyroscope"] = sensors.quat_wxyz, sensors.gyro
    imu["accelerometer"], imu["rpy"] = sensors.accel, sensors.rpy
    motors = rec["motor_state"][:N_JOINTS]
    motors["mode"] = 1
    motors["q"], motors["dq"], motors["tau_est"] = sensors.q, sensors.dq, sensors.tau_est
    rec["crc"] = record_crc(rec)
    return LOWSTATE_CDR.to_cdr(rec)


def decode_lowstate(data: bytes) -> RobotState | None:
    """The state in LowState_ bytes; None if they are malformed or the crc is wrong."""
    try:
        rec = LOWSTATE_CDR.from_cdr(data)
    except ValueError:
        return None
    if record_crc(rec) != rec["crc"]:
        return None
    return _robot_state(rec)


def _robot_state(rec: np.ndarray) -> RobotState:
    motors, imu = rec["motor_state"][:N_JOINTS], rec["imu_state"]
    return RobotState(
        q=motors["q"].astype(float),
        dq=motors["dq"].astype(float),
        tau_est=motors["tau_est"].astype(float),
        quat_wxyz=imu["quaternion"].astype(float),
        gyro=imu["gyroscope"].astype(float),
        accel=imu["accelerometer"].astype(float),
        tick=int(rec["tick"]),
        mode_machine=int(rec["mode_machine"]),
        wireless_remote=rec["wireless_remote"].tobytes(),
    )


def encode_lowcmd(cmd: MotorCommand, mode_machine: int) -> bytes:
    """LowCmd_ bytes (motors enabled, ankles pitch/roll, crc set) for a MotorCommand."""
    rec = np.zeros((), LOWCMD_DTYPE)
    rec["mode_pr"], rec["mode_machine"] = 0, mode_machine
    motors = rec["motor_cmd"][:N_JOINTS]
    motors["mode"] = 1
    for name in COMMAND_FIELDS:
        motors[name] = getattr(cmd, name)
    rec["crc"] = record_crc(rec)
    return LOWCMD_CDR.to_cdr(rec)


def decode_lowcmd(data: bytes) -> MotorCommand | None:
    """What the motors do with LowCmd_ bytes: None if malformed, non-finite or the crc is
    wrong (the robot drops it). A disabled motor (mode 0) gives no torque."""
    return decode_lowcmd_mode(data)[0]


def decode_lowcmd_mode(data: bytes) -> tuple[MotorCommand | None, int | None]:
    """`decode_lowcmd` and the command's `mode_machine` (None where malformed)."""
    try:
        rec = LOWCMD_CDR.from_cdr(data)
    except ValueError:
        return None, None
    if record_crc(rec) != rec["crc"]:
        return None, None
    return _motor_command(rec), int(rec["mode_machine"])


def _motor_command(rec: np.ndarray) -> MotorCommand | None:
    motors = rec["motor_cmd"][:N_JOINTS]
    on = motors["mode"] != 0
    fields = {name: np.where(on, motors[name].astype(float), 0.0) for name in COMMAND_FIELDS}
    if not all(np.isfinite(v).all() for v in fields.values()):
        return None
    return MotorCommand(**fields)


def lowstate(sensors: Sensors, tick_ms: int, mode_machine: int = MODE_MACHINE) -> LowState_:
    """`encode_lowstate` as a cyclonedds LowState_ sample."""
    return LowState_.deserialize(encode_lowstate(sensors, tick_ms, mode_machine))


def robot_state(msg: LowState_) -> RobotState:
    """The state in a LowState_ sample (its crc is not checked here: see `crc_ok`)."""
    return _robot_state(LOWSTATE_CDR.from_cdr(msg.serialize()))


def lowcmd(cmd: MotorCommand, mode_machine: int) -> LowCmd_:
    """`encode_lowcmd` as a cyclonedds LowCmd_ sample."""
    return LowCmd_.deserialize(encode_lowcmd(cmd, mode_machine))


def motor_command(msg: LowCmd_) -> MotorCommand | None:
    """`decode_lowcmd` of a LowCmd_ sample."""
    return decode_lowcmd(msg.serialize())
