"""CDR bytes of the messages a control loop logs every tick, written with numpy.

mcap-ros2-support encodes a message from a dict value by value in Python, 40-170 us per
message for the G1's joint states and commands; a 500 Hz deploy log writes four of them
per tick. These functions write the same bytes (plain CDR, little endian, ROS 2's field
layouts from `messages.DEFINITIONS`) with the arrays copied in one piece, a few
microseconds each. The tests check them byte for byte against mcap-ros2-support's
encoder on the same values.

CDR rules used: a primitive is aligned to its size counted from the end of the 4-byte
encapsulation header; a string is a uint32 length (with the terminating NUL) then the
bytes and the NUL; a sequence is a uint32 count then its elements (an empty sequence of
float64 has no alignment padding: there is no first element to align).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

HEADER = b"\x00\x01\x00\x00"


class CdrWriter:
    def __init__(self) -> None:
        self._parts: list[bytes] = [HEADER]
        self._pos = 0  # bytes after the header

    def _raw(self, data: bytes) -> None:
        self._parts.append(data)
        self._pos += len(data)

    def _align(self, size: int) -> None:
        pad = -self._pos % size
        if pad:
            self._raw(b"\x00" * pad)

    def uint32(self, value: int) -> None:
        self._align(4)
        self._raw(struct.pack("<I", value))

    def int32(self, value: int) -> None:
        self._align(4)
        self._raw(struct.pack("<i", value))

    def string(self, text: str) -> None:
        data = text.encode() + b"\x00"
        self.uint32(len(data))
        self._raw(data)

    def strings(self, texts: Sequence[str]) -> None:
        self.uint32(len(texts))
        for text in texts:
            self.string(text)

    def floats(self, values, dtype: str, sequence: bool = True) -> None:
        """float64 (`<f8`) or float32 (`<f4`) values: a sequence, or a fixed array."""
        array = np.ascontiguousarray(np.ravel(values), dtype=dtype)
        if sequence:
            self.uint32(array.size)
        if array.size:
            self._align(array.itemsize)
            self._raw(array.tobytes())

    def stamp(self, time_ns: int) -> None:
        sec, nanosec = divmod(time_ns, 1_000_000_000)
        self.int32(sec)
        self.uint32(nanosec)

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def joint_state(time_ns: int, names: Sequence[str], position, velocity, effort) -> bytes:
    """sensor_msgs/JointState, frame_id empty; None for a field not measured (empty)."""
    w = CdrWriter()
    w.stamp(time_ns)
    w.string("")
    w.strings(names)
    for values in (position, velocity, effort):
        w.floats(() if values is None else values, "<f8")
    return w.getvalue()


def imu(time_ns: int, frame_id: str, orientation_wxyz, angular_velocity, linear_acceleration):
    """sensor_msgs/Imu, orientation (w, x, y, z) in; covariances zero, except that the
    acceleration's covariance[0] is -1 ("not measured") when `linear_acceleration` is None."""
    w = CdrWriter()
    w.stamp(time_ns)
    w.string(frame_id)
    qw, qx, qy, qz = np.asarray(orientation_wxyz, dtype=float)
    accel_cov = np.zeros(9)
    if linear_acceleration is None:
        linear_acceleration, accel_cov[0] = np.zeros(3), -1.0
    w.floats((qx, qy, qz, qw), "<f8", sequence=False)
    w.floats(np.zeros(9), "<f8", sequence=False)
    w.floats(angular_velocity, "<f8", sequence=False)
    w.floats(np.zeros(9), "<f8", sequence=False)
    w.floats(linear_acceleration, "<f8", sequence=False)
    w.floats(accel_cov, "<f8", sequence=False)
    return w.getvalue()


def multi_array(values, dims: Sequence[str], dtype: str) -> bytes:
    """std_msgs/Float64MultiArray (`<f8`) or Float32MultiArray (`<f4`) of `values` (any
    shape), one labelled dim per axis. Row-major: dim[i].stride is the number of elements
    spanned by one step along axis i-1, as std_msgs/MultiArrayLayout defines it."""
    array = np.asarray(values)
    if array.ndim != len(dims):
        raise ValueError(f"{len(dims)} dimension labels for an array of shape {array.shape}")
    strides = np.cumprod(array.shape[::-1])[::-1]
    w = CdrWriter()
    w.uint32(len(dims))
    for label, size, stride in zip(dims, array.shape, strides, strict=True):
        w.string(label)
        w.uint32(int(size))
        w.uint32(int(stride))
    w.uint32(0)
    w.floats(array, dtype)
    return w.getvalue()
