"""The Unitree wireless remote, as the G1 carries it in `LowState_.wireless_remote`.

The 40 bytes are Unitree's `xRockerBtnDataStruct`, little-endian and packed: `head` u8[2],
`btn` u16 (a bitfield of the 16 keys, `xKeySwitchUnion`), then float32 `lx`, `rx`, `ry`,
`L2`, `ly` at byte offsets 4, 8, 12, 16, 20, and 16 idle bytes. Sticks read -1..1, right
and up positive. Sources: Unitree's G1 developer guide, "Remote Control Data"
(support.unitree.com/home/en/G1_developer/remote_control_data), and the same struct in
unitree_legged_sdk's `unitree_joystick.h`.

Mapping to the walking command (the one unitree_rl_gym's G1 deployment uses: forward on
the left stick's y, sideways on its x, turning on the right stick's x; left and
counter-clockwise positive, as in ROS): vx from `ly`, vy from `-lx`, yaw rate from `-rx`.
Each stick's half maps onto its side of the policy's trained range (full forward: the
largest trained vx; full back: the most negative), so the remote reaches every trained
command and never leaves the ranges. Within `DEAD_ZONE` of centre a stick reads 0.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from simreal.deploy.commands import CommandRanges

REMOTE_BYTES = 40
_LAYOUT = struct.Struct("<2BH5f16x")
DEAD_ZONE = 0.05
BUTTONS = (
    "R1", "L1", "start", "select", "R2", "L2", "F1", "F2",
    "A", "B", "X", "Y", "up", "right", "down", "left",
)  # fmt: skip
"""`btn` bits, least significant first."""


@dataclass(frozen=True)
class Remote:
    """One reading of the remote: the sticks (-1..1) and the pressed buttons."""

    lx: float
    rx: float
    ry: float
    l2: float
    ly: float
    buttons: frozenset[str]

    def sticks(self) -> np.ndarray:
        """(lx, ly, rx, ry) with the dead zone applied."""
        raw = np.array([self.lx, self.ly, self.rx, self.ry])
        return np.where(np.abs(raw) < DEAD_ZONE, 0.0, raw)

    def deflected(self) -> bool:
        return bool(np.isfinite(self.sticks()).all() and self.sticks().any())


def parse_remote(data: bytes) -> Remote:
    """The remote in LowState_'s `wireless_remote` bytes (40)."""
    if len(data) != REMOTE_BYTES:
        raise ValueError(f"wireless_remote: {len(data)} bytes, expected {REMOTE_BYTES}")
    _, _, btn, lx, rx, ry, l2, ly = _LAYOUT.unpack(bytes(data))
    pressed = frozenset(name for bit, name in enumerate(BUTTONS) if btn >> bit & 1)
    return Remote(lx, rx, ry, l2, ly, pressed)


def remote_bytes(lx=0.0, ly=0.0, rx=0.0, ry=0.0, l2=0.0, buttons=()) -> bytes:
    """The 40 bytes a remote in this position sends (the virtual robot's remote)."""
    unknown = set(buttons) - set(BUTTONS)
    if unknown:
        raise ValueError(f"remote buttons {sorted(unknown)}: known {BUTTONS}")
    btn = sum(1 << BUTTONS.index(name) for name in buttons)
    return _LAYOUT.pack(0, 0, btn, lx, rx, ry, l2, ly)


def _onto(stick: float, low: float, high: float) -> float:
    """-1..1 onto low..high with 0 at 0: the positive half to high, the negative to low."""
    stick = float(np.clip(stick, -1.0, 1.0))
    return stick * high if stick > 0 else -stick * low


def remote_command(remote: Remote, ranges: CommandRanges) -> np.ndarray:
    """(vx, vy, yaw_rate) the sticks ask for (non-finite sticks pass through, to be
    dropped and counted by the command mux)."""
    lx, ly, rx, _ = remote.sticks()
    if not np.isfinite([lx, ly, rx]).all():
        return np.array([ly, -lx, -rx])
    (vx_lo, vy_lo, yaw_lo), (vx_hi, vy_hi, yaw_hi) = ranges.low, ranges.high
    return np.array([_onto(ly, vx_lo, vx_hi), _onto(-lx, vy_lo, vy_hi), _onto(-rx, yaw_lo, yaw_hi)])
