"""The walking command a deployed policy follows: the newest planar velocity
(vx, vy, yaw_rate) from the operator's sources, checked, clipped and aged.

Sources, highest priority first: `keys` (the node's terminal), `remote` (the Unitree
wireless remote in LowState), `cmd_vel` (ROS 2 geometry_msgs/Twist). The command in
force is the one of the highest-priority source that is live; none live: zero velocity.
A `cmd_vel` or remote command is live for `MAX_AGE_S` after it arrived, so a publisher
that dies or a remote link that drops stops the robot within half a second instead of
walking it on with the last command. A key set-point is held while it is not zero (`k`
or an e-stop zeros it, and hands control back to the other sources): the terminal is local and cannot go silent the way a network
publisher can, and a terminal's key repeat is too slow and uneven to refresh a command
every half second. The remote offers a command only while a stick is out of its dead
zone (and once more, zero, when the sticks come back), so a remote lying on the table
leaves cmd_vel in control.

Every offered command is checked before it counts: one with a value that is not finite
is dropped and counted (`non_finite`); one outside the policy's trained ranges
(`CommandRanges`, from the task's own config) is clipped to them and counted (`clipped`).
A policy was never trained outside those ranges, so what it does there is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

VELOCITY_FIELDS = ("vx", "vy", "yaw_rate")
"""m/s forward, m/s to the left, rad/s counter-clockwise: ROS's base_link convention."""
MAX_AGE_S = 0.5
"""A cmd_vel or remote command older than this decays to zero velocity."""
SOURCES = ("keys", "remote", "cmd_vel")
"""In priority order: the first live source is obeyed."""
HELD_SOURCES = frozenset({"keys"})
"""Sources whose command holds until changed (no decay)."""


@dataclass(frozen=True)
class CommandRanges:
    """The trained range of each velocity field: low (3,) <= command <= high (3,)."""

    low: tuple[float, float, float]
    high: tuple[float, float, float]

    def __post_init__(self):
        if not all(lo <= hi for lo, hi in zip(self.low, self.high, strict=True)):
            raise ValueError(f"command ranges: low {self.low} above high {self.high}")

    def clip(self, command: np.ndarray) -> np.ndarray:
        return np.clip(command, self.low, self.high)

    def describe(self) -> str:
        return ", ".join(
            f"{name} {lo:g}..{hi:g}"
            for name, lo, hi in zip(VELOCITY_FIELDS, self.low, self.high, strict=True)
        )


@dataclass
class VelocityCommands:
    """The velocity command mux: `offer` commands as they arrive, read `current(now)`."""

    ranges: CommandRanges
    max_age_s: float = MAX_AGE_S
    received: int = 0
    clipped: int = 0
    non_finite: int = 0
    _latest: dict[str, tuple[np.ndarray, float]] = field(default_factory=dict)

    def offer(self, source: str, command, now: float) -> np.ndarray | None:
        """Take a command from `source` at time `now` (s, monotonic); returns what will be
        followed (clipped), or None when it was dropped as not finite."""
        if source not in SOURCES:
            raise ValueError(f"command source {source!r}: expected one of {SOURCES}")
        command = np.asarray(command, dtype=float).reshape(-1)
        if command.size != len(VELOCITY_FIELDS):
            raise ValueError(
                f"a velocity command has {len(VELOCITY_FIELDS)} values, not {command.size}"
            )
        self.received += 1
        if not np.isfinite(command).all():
            self.non_finite += 1
            return None
        inside = self.ranges.clip(command)
        if not np.array_equal(inside, command):
            self.clipped += 1
        self._latest[source] = (inside, now)
        return inside

    def live(self, source: str, now: float) -> bool:
        """A held source while its set-point is not zero; any other for max_age_s."""
        if source not in self._latest:
            return False
        command, stamp = self._latest[source]
        if source in HELD_SOURCES:
            return bool(command.any())
        return now - stamp <= self.max_age_s

    def source(self, now: float) -> str | None:
        """The source obeyed at `now`, or None (zero velocity)."""
        return next((s for s in SOURCES if self.live(s, now)), None)

    def current(self, now: float) -> np.ndarray:
        """(3,) the command in force at `now`: the first live source's, else zero."""
        source = self.source(now)
        if source is None:
            return np.zeros(len(VELOCITY_FIELDS))
        return self._latest[source][0].copy()

    def held(self, source: str) -> np.ndarray:
        """The last command `source` gave (zero if none), whatever its age."""
        entry = self._latest.get(source)
        return np.zeros(len(VELOCITY_FIELDS)) if entry is None else entry[0].copy()

    def stop(self, now: float) -> None:
        """Zero every source (an e-stop or policy stop): nothing walks on afterwards."""
        for source in list(self._latest):
            self._latest[source] = (np.zeros(len(VELOCITY_FIELDS)), now)

    def counters(self) -> dict[str, int]:
        return {
            "commands_received": self.received,
            "commands_clipped": self.clipped,
            "commands_non_finite": self.non_finite,
        }
