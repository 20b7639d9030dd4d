"""The Unitree G1 low-level messages (package `unitree_hg`), as the robot speaks them.

Commands go to the robot on `rt/lowcmd` (`LowCmd_`) and its state comes back on
`rt/lowstate` (`LowState_`), at 500 Hz. Field names, order and types follow the robot's
own IDL (docs/facts.md, "The G1 low-level interface"); every struct is final and sent
as plain CDR (XCDR1), as the robot's are. Joint vectors are in the
SDK's motor order, `simreal.robots.g1.JOINT_NAMES` for the first 29 of the 35 slots.

The robot drops a command whose `crc` is wrong: set it with `crc.with_crc`.
"""

# The class names are the robot's own type names, trailing underscore included.
# ruff: noqa: N801

from dataclasses import dataclass, field

import cyclonedds.idl.annotations as annotate
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float32, int16, uint8, uint32

LOWCMD_TOPIC = "rt/lowcmd"
LOWSTATE_TOPIC = "rt/lowstate"
NUM_MOTORS = 35
"""Motor slots in every low-level message; the 29-DoF G1 uses slots 0-28."""


def _typename(name: str) -> str:
    return f"unitree_hg::msg::dds_::{name}"


def _zeros(n: int):
    return lambda: [0] * n


def _zeros_f(n: int):
    return lambda: [0.0] * n


@dataclass
@annotate.final
class MotorCmd_(IdlStruct, typename=_typename("MotorCmd_")):
    """One motor's command: torque = kp (q - q_meas) + kd (dq - dq_meas) + tau."""

    mode: uint8 = 0
    """1 enables the motor, 0 disables it."""
    q: float32 = 0.0
    dq: float32 = 0.0
    tau: float32 = 0.0
    kp: float32 = 0.0
    kd: float32 = 0.0
    reserve: uint32 = 0


@dataclass
@annotate.final
class LowCmd_(IdlStruct, typename=_typename("LowCmd_")):
    """A whole-body command; `mode_machine` is copied from the latest `LowState_`."""

    mode_pr: uint8 = 0
    """0: ankle joints commanded as pitch/roll."""
    mode_machine: uint8 = 0
    motor_cmd: array[MotorCmd_, NUM_MOTORS] = field(
        default_factory=lambda: [MotorCmd_() for _ in range(NUM_MOTORS)]
    )
    reserve: array[uint32, 4] = field(default_factory=_zeros(4))
    crc: uint32 = 0


@dataclass
@annotate.final
class MotorState_(IdlStruct, typename=_typename("MotorState_")):
    """One motor's measured state."""

    mode: uint8 = 0
    q: float32 = 0.0
    dq: float32 = 0.0
    ddq: float32 = 0.0
    tau_est: float32 = 0.0
    temperature: array[int16, 2] = field(default_factory=_zeros(2))
    vol: float32 = 0.0
    sensor: array[uint32, 2] = field(default_factory=_zeros(2))
    motorstate: uint32 = 0
    reserve: array[uint32, 4] = field(default_factory=_zeros(4))


@dataclass
@annotate.final
class IMUState_(IdlStruct, typename=_typename("IMUState_")):
    """The IMU; `quaternion` is (w, x, y, z), `rpy` in rad."""

    quaternion: array[float32, 4] = field(default_factory=lambda: [1.0, 0.0, 0.0, 0.0])
    gyroscope: array[float32, 3] = field(default_factory=_zeros_f(3))
    accelerometer: array[float32, 3] = field(default_factory=_zeros_f(3))
    rpy: array[float32, 3] = field(default_factory=_zeros_f(3))
    temperature: int16 = 0


@dataclass
@annotate.final
class LowState_(IdlStruct, typename=_typename("LowState_")):
    """The robot's whole-body state, published by the robot at 500 Hz."""

    version: array[uint32, 2] = field(default_factory=_zeros(2))
    mode_pr: uint8 = 0
    mode_machine: uint8 = 0
    tick: uint32 = 0
    imu_state: IMUState_ = field(default_factory=IMUState_)
    motor_state: array[MotorState_, NUM_MOTORS] = field(
        default_factory=lambda: [MotorState_() for _ in range(NUM_MOTORS)]
    )
    wireless_remote: array[uint8, 40] = bytes(40)
    """Raw remote-control bytes; cyclonedds gives uint8 arrays as `bytes`."""
    reserve: array[uint32, 4] = field(default_factory=_zeros(4))
    crc: uint32 = 0
