"""Plain CDR (XCDR1, little endian) bytes of a fixed-size struct, straight from numpy.

cyclonedds' Python types (de)serialize field by field in Python: about 0.4-0.6 ms for a
LowState_ or LowCmd_, which is most of a 2 ms tick at 500 Hz. The G1's messages are
fixed-size structs of primitives, so their CDR bytes are the bytes of the robot's C
struct with the padding laid out by CDR's rules instead of C's, and a precomputed byte
map converts one into the other with a single numpy gather (a few microseconds).

The rules that make the two layouts differ: in C a struct is aligned to its widest
member and padded to a multiple of it; in CDR a struct has no alignment of its own and
each primitive is aligned to its own size, counted from the start of the payload (after
the 4-byte encapsulation header). So in LowCmd_, `motor_cmd[0].mode` sits at byte 2 in
CDR but at byte 4 in C, and everything after it is 4 bytes earlier in CDR; LowState_
loses 2 bytes after the IMU's int16 temperature and 2 more inside `motor_state[0]`.

`CdrLayout(dtype)` derives the map from the same numpy dtype (C layout, `align=True`)
that the CRC runs over (`crc.LOWCMD_DTYPE`, `crc.LOWSTATE_DTYPE`), so there is one
description of each message; the tests check the bytes against cyclonedds' own
serialization, field values chosen so that every byte differs.
"""

from __future__ import annotations

import numpy as np

CDR_LE_HEADER = b"\x00\x01\x00\x00"
"""Encapsulation: plain CDR, little endian, no options (what the robot and rmw_cyclonedds send)."""


def _byte_map(dtype: np.dtype, c_base: int, cdr_pos: int, c_idx: list, cdr_idx: list) -> int:
    """Append (C offset, CDR offset) of every data byte of `dtype`; return the CDR end."""
    fields = sorted(dtype.fields.items(), key=lambda item: item[1][1])
    for name, (sub, offset, *_title) in fields:
        base, shape = sub.subdtype if sub.subdtype is not None else (sub, ())
        count = int(np.prod(shape, dtype=int))
        start = c_base + offset
        if base.names is not None:
            for i in range(count):
                cdr_pos = _byte_map(base, start + i * base.itemsize, cdr_pos, c_idx, cdr_idx)
            continue
        if base.kind not in "uif" or base.itemsize not in (1, 2, 4, 8):
            raise TypeError(f"field {name}: {base} is not a CDR primitive")
        cdr_pos += -cdr_pos % base.itemsize
        size = count * base.itemsize
        c_idx.extend(range(start, start + size))
        cdr_idx.extend(range(cdr_pos, cdr_pos + size))
        cdr_pos += size
    return cdr_pos


class CdrLayout:
    """Converts a record of `dtype` (a C-layout struct) to and from its CDR message bytes."""

    def __init__(self, dtype: np.dtype):
        if dtype.names is None:
            raise TypeError("CdrLayout needs a structured dtype")
        c_idx: list[int] = []
        cdr_idx: list[int] = []
        end = _byte_map(dtype, 0, 0, c_idx, cdr_idx)
        self.dtype = dtype
        self.payload_size = end + (-end % 4)  # cyclonedds pads a sample to whole words
        self.size = len(CDR_LE_HEADER) + self.payload_size
        self._c_idx = np.array(c_idx, dtype=np.intp)
        self._cdr_idx = np.array(cdr_idx, dtype=np.intp) + len(CDR_LE_HEADER)
        self._header = np.frombuffer(CDR_LE_HEADER, dtype=np.uint8)

    def to_cdr(self, record: np.ndarray) -> bytes:
        """The CDR message (header included) of one record; padding bytes are zero."""
        if record.dtype != self.dtype or record.size != 1:
            raise TypeError(f"expected one record of {self.dtype}, got {record.dtype}")
        out = np.zeros(self.size, dtype=np.uint8)
        out[: len(CDR_LE_HEADER)] = self._header
        out[self._cdr_idx] = record.reshape(1).view(np.uint8)[self._c_idx]
        return out.tobytes()

    def from_cdr(self, data: bytes) -> np.ndarray:
        """The record (a 0-d structured array, C padding zero) in CDR message `data`.

        Raises ValueError naming what is wrong if `data` is not such a message.
        """
        if len(data) != self.size:
            raise ValueError(f"{len(data)} bytes, a {self._name} message has {self.size}")
        if data[:2] != CDR_LE_HEADER[:2]:
            raise ValueError(f"encapsulation {data[:2].hex()} is not plain little-endian CDR")
        raw = np.zeros(self.dtype.itemsize, dtype=np.uint8)
        raw[self._c_idx] = np.frombuffer(data, dtype=np.uint8)[self._cdr_idx]
        return raw.view(self.dtype).reshape(())

    @property
    def _name(self) -> str:
        return f"{self.dtype.itemsize}-byte C struct"
