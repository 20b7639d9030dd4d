"""The CRC the G1 checks on every low-level message, and the C struct layout it runs over.

The robot packs a message little-endian as a C struct with natural alignment, reads it as
32-bit words, and folds every word but the last (the crc field) into a 32-bit register
that starts at 0xFFFFFFFF, polynomial 0x04C11DB7, each word most significant bit first:
shift left one bit, xoring the polynomial in if the bit shifted out was 1, then xor the
polynomial in again if the data bit is 1. No final xor. A command with a wrong crc is
dropped by the robot.

Layouts (byte offsets, derived field by field from natural alignment):

`LowCmd_`, 1004 bytes = 251 words, crc over the first 250:

    0 mode_pr u8 | 1 mode_machine u8 | 2 pad[2]
    4 motor_cmd MotorCmd_[35], 28 bytes each:
        +0 mode u8 | +1 pad[3] | +4 q, +8 dq, +12 tau, +16 kp, +20 kd f32 | +24 reserve u32
    984 reserve u32[4] | 1000 crc u32

`LowState_`, 2092 bytes = 523 words, crc over the first 522:

    0 version u32[2] | 8 mode_pr u8 | 9 mode_machine u8 | 10 pad[2] | 12 tick u32
    16 imu_state IMUState_, 56 bytes:
        +0 quaternion f32[4] | +16 gyroscope f32[3] | +28 accelerometer f32[3]
        +40 rpy f32[3] | +52 temperature i16 | +54 pad[2]
    72 motor_state MotorState_[35], 56 bytes each:
        +0 mode u8 | +1 pad[3] | +4 q, +8 dq, +12 ddq, +16 tau_est f32
        +20 temperature i16[2] | +24 vol f32 | +28 sensor u32[2] | +36 motorstate u32
        +40 reserve u32[4]
    2032 wireless_remote u8[40] | 2072 reserve u32[4] | 2088 crc u32

The numpy dtypes below are built with `align=True` (C's rules) and the tests check them
against these offsets and against hand-written `struct` formats.
"""

import dataclasses
import zlib
from typing import TypeVar

import numpy as np

from simreal.deploy.dds.cdr import CdrLayout
from simreal.deploy.dds.unitree_hg import NUM_MOTORS, LowCmd_, LowState_

POLYNOMIAL = 0x04C11DB7
INIT = 0xFFFFFFFF

MOTOR_CMD_DTYPE = np.dtype(
    [
        ("mode", "u1"),
        *((name, "<f4") for name in ("q", "dq", "tau", "kp", "kd")),
        ("reserve", "<u4"),
    ],
    align=True,
)
LOWCMD_DTYPE = np.dtype(
    [
        ("mode_pr", "u1"),
        ("mode_machine", "u1"),
        ("motor_cmd", MOTOR_CMD_DTYPE, (NUM_MOTORS,)),
        ("reserve", "<u4", (4,)),
        ("crc", "<u4"),
    ],
    align=True,
)
IMU_STATE_DTYPE = np.dtype(
    [
        ("quaternion", "<f4", (4,)),
        ("gyroscope", "<f4", (3,)),
        ("accelerometer", "<f4", (3,)),
        ("rpy", "<f4", (3,)),
        ("temperature", "<i2"),
    ],
    align=True,
)
MOTOR_STATE_DTYPE = np.dtype(
    [
        ("mode", "u1"),
        *((name, "<f4") for name in ("q", "dq", "ddq", "tau_est")),
        ("temperature", "<i2", (2,)),
        ("vol", "<f4"),
        ("sensor", "<u4", (2,)),
        ("motorstate", "<u4"),
        ("reserve", "<u4", (4,)),
    ],
    align=True,
)
LOWSTATE_DTYPE = np.dtype(
    [
        ("version", "<u4", (2,)),
        ("mode_pr", "u1"),
        ("mode_machine", "u1"),
        ("tick", "<u4"),
        ("imu_state", IMU_STATE_DTYPE),
        ("motor_state", MOTOR_STATE_DTYPE, (NUM_MOTORS,)),
        ("wireless_remote", "u1", (40,)),
        ("reserve", "<u4", (4,)),
        ("crc", "<u4"),
    ],
    align=True,
)

LOWCMD_CDR = CdrLayout(LOWCMD_DTYPE)
"""LowCmd_ records to and from their DDS bytes (1004 with the header), no Python IDL objects."""
LOWSTATE_CDR = CdrLayout(LOWSTATE_DTYPE)
"""LowState_ records to and from their DDS bytes (2092 with the header)."""

_BIT_REVERSED_BYTE = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)


def crc32_unitree(words: np.ndarray) -> int:
    """The G1's CRC of a sequence of uint32 words (see the module docstring for the rule).

    The rule is the MSB-first CRC-32 (polynomial 0x04C11DB7, register 0xFFFFFFFF, no
    final xor) of the bit stream "each word, most significant bit first": "xor the
    polynomial if the bit shifted out was 1, then again if the data bit is 1" is "xor it
    if the two differ", the textbook feedback. Mirroring every bit turns an MSB-first
    CRC into the LSB-first (reflected) CRC with the mirrored polynomial 0xEDB88320,
    which is zlib's crc32 (register 0xFFFFFFFF, final xor 0xFFFFFFFF), run in C. zlib
    reads each byte least significant bit first, so it is fed each word's bytes from the
    most significant one, each bit-reversed; its result, un-xored and bit-reversed, is
    the register. The tests check this against the bit-by-bit rule.
    """
    words = np.asarray(words)
    if words.ndim != 1 or words.dtype.kind not in "ui":
        raise TypeError(f"expected a 1-D array of uint32 words, got {words.dtype} {words.shape}")
    if words.dtype != np.uint32 and words.size and (words.min() < 0 or words.max() > 0xFFFFFFFF):
        raise ValueError("words must lie in [0, 2**32)")
    big_endian = words.astype(">u4").view(np.uint8)
    mirrored = zlib.crc32(_BIT_REVERSED_BYTE[big_endian].tobytes()) ^ 0xFFFFFFFF
    return int(f"{mirrored:032b}"[::-1], 2)


def record_crc(record: np.ndarray) -> int:
    """The crc of one LOWCMD_DTYPE or LOWSTATE_DTYPE record: over every word but the last."""
    return crc32_unitree(record.reshape(1).view("<u4")[:-1])


def _fill(out: np.ndarray, obj: object) -> None:
    """Copy an IDL struct's fields into a structured array of the same field names."""
    for name in out.dtype.names:
        value, slot = getattr(obj, name), out[name]
        if isinstance(value, (bytes, bytearray)):
            slot[...] = np.frombuffer(value, dtype=np.uint8)
        elif slot.dtype.names is None:
            slot[...] = value
        elif slot.ndim == 0:
            _fill(slot, value)
        elif len(value) != len(slot):
            raise ValueError(f"{name} has {len(value)} entries, the robot's struct has {len(slot)}")
        else:
            for field_name in slot.dtype.names:
                slot[field_name] = [getattr(item, field_name) for item in value]


def _pack(msg: LowCmd_ | LowState_) -> bytes:
    if isinstance(msg, LowCmd_):
        out = np.zeros((), LOWCMD_DTYPE)
    elif isinstance(msg, LowState_):
        out = np.zeros((), LOWSTATE_DTYPE)
    else:
        raise TypeError(f"expected LowCmd_ or LowState_, got {type(msg).__name__}")
    _fill(out, msg)
    return out.tobytes()


def pack_lowcmd(msg: LowCmd_) -> bytes:
    """LowCmd_ as the robot's C struct: 1004 little-endian bytes (layout in the module docstring)."""
    if not isinstance(msg, LowCmd_):
        raise TypeError(f"expected LowCmd_, got {type(msg).__name__}")
    return _pack(msg)


def pack_lowstate(msg: LowState_) -> bytes:
    """LowState_ as the robot's C struct: 2092 little-endian bytes (layout in the module docstring)."""
    if not isinstance(msg, LowState_):
        raise TypeError(f"expected LowState_, got {type(msg).__name__}")
    return _pack(msg)


def _crc_of_packed(packed: bytes) -> int:
    return crc32_unitree(np.frombuffer(packed, dtype="<u4")[:-1])


def lowcmd_crc(msg: LowCmd_) -> int:
    """The crc the robot expects in `msg.crc`: over all 250 words before it."""
    return _crc_of_packed(pack_lowcmd(msg))


def lowstate_crc(msg: LowState_) -> int:
    """The crc the robot sends in `msg.crc`: over all 522 words before it."""
    return _crc_of_packed(pack_lowstate(msg))


Message = TypeVar("Message", LowCmd_, LowState_)


def with_crc(msg: Message) -> Message:
    """A copy of `msg` with its crc field set (nested lists are shared, not copied)."""
    return dataclasses.replace(msg, crc=_crc_of_packed(_pack(msg)))


def crc_ok(msg: LowCmd_ | LowState_) -> bool:
    """Whether `msg.crc` is the crc of the rest of the message."""
    return msg.crc == _crc_of_packed(_pack(msg))
