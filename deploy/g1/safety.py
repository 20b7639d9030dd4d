"""The deploy node's state machine and the safety layer around the policy.

    ZERO_TORQUE --(valid state for settle_ticks)--> MOVE_TO_DEFAULT --(move_s)--> HOLD
    HOLD --(start)--> ACTIVE --(stop)--> MOVE_TO_DEFAULT
    any --(fault or estop)--> DAMPING (latched until the node restarts)

Faults: state older than `state_timeout_s` once state has been seen (watchdog); a
robot `tick` that has not advanced for `state_timeout_s` (a frozen or replayed state
stream passes the age check: `TickWatch`); the node's own loop stalled for longer than
`state_timeout_s` between the tops of two ticks (SIGSTOP, swapping, a long GC: on
waking it finds fresh states queued and must not carry on as if nothing happened);
`max_consecutive_bad` malformed or bad-crc states in a row; a non-finite or
out-of-range action (`action_fault`); an e-stop; and, reported by the node through
`fault`, a changed `mode_machine` or a second writer on the robot's command topic.
Pure: time and inputs come in as arguments, so every transition is testable without DDS.

The limits on the node's settings (`check_state_timeout`, `check_rate`, `check_domain`)
and on a policy's gains and pose (`policy_limit_errors`) live here too, so that a bad
value is refused before any DDS entity exists or any command is sent.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

MAX_STATE_TIMEOUT_S = 0.2
"""Longest watchdog allowed: beyond it a falling robot is past saving when damping starts."""
MAX_RATE_HZ = 2000.0
"""Fastest command loop allowed (the G1's own low-level loop runs at 500 Hz)."""
MAX_DOMAIN_ID = 232
"""DDS domain ids are 0-232: the RTPS port mapping (base 7400, gain 250) leaves no port
for a larger one, and CycloneDDS refuses it."""


class Mode(enum.Enum):
    ZERO_TORQUE = "ZERO_TORQUE"
    MOVE_TO_DEFAULT = "MOVE_TO_DEFAULT"
    HOLD = "HOLD"
    ACTIVE = "ACTIVE"
    DAMPING = "DAMPING"


COMMANDS = ("start", "stop", "estop")


@dataclass(frozen=True)
class SafetyConfig:
    state_timeout_s: float = 0.05
    max_consecutive_bad: int = 5
    settle_ticks: int = 10
    move_s: float = 2.0
    max_abs_action: float = 20.0
    """An action beyond this (before scaling) is a fault, not something to clip."""
    max_target_step_rad: float = 0.25
    """Largest change of a joint target per policy step."""
    damping_kd: float = 8.0
    settle_s: float = 0.2
    """Least time in ZERO_TORQUE, so that DDS discovery has found any other writer on
    the command topic before the node moves the robot."""

    def __post_init__(self):
        check_state_timeout(self.state_timeout_s)
        for name in ("move_s", "max_abs_action", "max_target_step_rad", "damping_kd"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"safety {name} = {value}: expected a finite number > 0")
        if not (math.isfinite(self.settle_s) and self.settle_s >= 0):
            raise ValueError(f"safety settle_s = {self.settle_s}: expected a finite number >= 0")


def check_state_timeout(seconds: float, name: str = "state timeout") -> float:
    """`seconds` if it is a usable watchdog timeout: in (0, MAX_STATE_TIMEOUT_S]."""
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_STATE_TIMEOUT_S):
        raise ValueError(
            f"{name} {seconds * 1e3:g} ms: expected more than 0 and at most "
            f"{MAX_STATE_TIMEOUT_S * 1e3:g} ms (inf or nan would switch the watchdog off)"
        )
    return seconds


def check_rate(hz: float, name: str = "rate") -> float:
    """`hz` if it is a usable loop rate: in (0, MAX_RATE_HZ]."""
    if not (math.isfinite(hz) and 0 < hz <= MAX_RATE_HZ):
        raise ValueError(f"{name} {hz:g} Hz: expected more than 0 and at most {MAX_RATE_HZ:g} Hz")
    return hz


def check_domain(domain_id: int, name: str = "DDS domain") -> int:
    """`domain_id` if DDS accepts it: an integer 0-232."""
    if isinstance(domain_id, bool) or not isinstance(domain_id, int | np.integer):
        raise ValueError(f"{name} {domain_id!r}: expected an integer 0-{MAX_DOMAIN_ID}")
    if not 0 <= domain_id <= MAX_DOMAIN_ID:
        raise ValueError(f"{name} {domain_id}: expected 0-{MAX_DOMAIN_ID}")
    return int(domain_id)


@dataclass
class Transition:
    t: float
    old: Mode
    new: Mode
    reason: str


@dataclass
class StateMachine:
    config: SafetyConfig = field(default_factory=SafetyConfig)
    mode: Mode = Mode.ZERO_TORQUE
    mode_since: float = 0.0
    good_states: int = 0
    transitions: list[Transition] = field(default_factory=list)

    def _go(self, now: float, mode: Mode, reason: str) -> None:
        self.transitions.append(Transition(now, self.mode, mode, reason))
        self.mode, self.mode_since = mode, now

    def fault(self, now: float, reason: str) -> None:
        if self.mode is not Mode.DAMPING:
            self._go(now, Mode.DAMPING, reason)

    def update(
        self,
        now: float,
        *,
        state_age_s: float | None,
        consecutive_bad: int = 0,
        new_state: bool = False,
        command: str | None = None,
        tick_age_s: float | None = None,
        loop_gap_s: float | None = None,
    ) -> Mode:
        """Advance on this tick's inputs; `state_age_s` is None before any valid state,
        `tick_age_s` (time since the robot's tick last advanced) None where the state
        has no tick, `loop_gap_s` (time since the top of the previous tick) None on the
        first tick."""
        cfg = self.config
        if self.mode is Mode.DAMPING:
            return self.mode
        if command == "estop":
            self.fault(now, "estop")
        elif loop_gap_s is not None and loop_gap_s > cfg.state_timeout_s:
            self.fault(now, f"loop stalled: {loop_gap_s * 1e3:.0f} ms between ticks")
        elif state_age_s is not None and state_age_s > cfg.state_timeout_s:
            self.fault(now, f"watchdog: state {state_age_s * 1e3:.0f} ms old")
        elif tick_age_s is not None and tick_age_s > cfg.state_timeout_s:
            self.fault(now, f"tick frozen: not advanced for {tick_age_s * 1e3:.0f} ms")
        elif consecutive_bad >= cfg.max_consecutive_bad:
            self.fault(now, f"{consecutive_bad} bad states in a row (crc or malformed)")
        elif self.mode is Mode.ZERO_TORQUE:
            self.good_states += bool(new_state)
            settled = now - self.mode_since >= cfg.settle_s
            if self.good_states >= cfg.settle_ticks and settled:
                self._go(now, Mode.MOVE_TO_DEFAULT, "state ok")
        elif self.mode is Mode.MOVE_TO_DEFAULT and now - self.mode_since >= cfg.move_s:
            self._go(now, Mode.HOLD, "at default pose")
        elif self.mode is Mode.HOLD and command == "start":
            self._go(now, Mode.ACTIVE, "start")
        elif self.mode is Mode.ACTIVE and command == "stop":
            self._go(now, Mode.MOVE_TO_DEFAULT, "stop")
        return self.mode


@dataclass
class TickWatch:
    """When the robot's `tick` last advanced, and the `mode_machine` it first reported.

    A state stream can stay fresh while the robot behind it is gone: a bridge or a
    replay resending the last sample. The robot's tick (ms) advances with every real
    state, so a tick that stands still is a lost robot. `mode_machine` is the robot's
    control mode; a change while the node runs means someone switched the robot's mode
    (or another robot's states arrived), and the node's commands no longer fit it."""

    tick: int | None = None
    advanced_s: float | None = None
    mode_machine: int | None = None

    def observe(self, tick: int, mode_machine: int, now: float) -> str | None:
        """Record a state received at `now`; the fault it shows, or None."""
        if tick != self.tick:
            self.tick, self.advanced_s = tick, now
        if self.mode_machine is None:
            self.mode_machine = mode_machine
        elif mode_machine != self.mode_machine:
            return f"mode_machine changed from {self.mode_machine} to {mode_machine}"
        return None

    def age(self, now: float) -> float | None:
        """Seconds since the tick last advanced; None before the first state."""
        return None if self.advanced_s is None else now - self.advanced_s


def policy_limit_errors(
    joint_names: Sequence[str],
    *,
    kp: Sequence[float],
    kd: Sequence[float],
    action_scale: Sequence[float],
    default_joint_pos: Sequence[float],
    kp_max: Sequence[float],
    kd_max: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
) -> list[str]:
    """What in a policy's gains, action scale and default pose the robot must not get,
    one line per joint and field; empty if all is within the robot's limits."""
    errors = []
    for i, name in enumerate(joint_names):
        for field_name, value, top in (("kp", kp[i], kp_max[i]), ("kd", kd[i], kd_max[i])):
            if not (math.isfinite(value) and 0 <= value <= top):
                errors.append(f"{name}: {field_name} {value:g} outside [0, {top:g}]")
        scale, span = action_scale[i], upper[i] - lower[i]
        if not (math.isfinite(scale) and 0 < scale <= span):
            errors.append(f"{name}: action_scale {scale:g} outside (0, {span:.4g}] (joint range)")
        q = default_joint_pos[i]
        if not (math.isfinite(q) and lower[i] <= q <= upper[i]):
            errors.append(
                f"{name}: default_joint_pos {q:g} outside the joint limits "
                f"[{lower[i]:g}, {upper[i]:g}]"
            )
    return errors


def action_fault(action: np.ndarray, max_abs: float) -> str | None:
    """Why an action must not be applied, or None."""
    if not np.isfinite(action).all():
        return "non-finite action"
    if np.abs(action).max(initial=0.0) > max_abs:
        return f"action out of range (|a| = {np.abs(action).max():.3g} > {max_abs})"
    return None


def action_to_target(
    action: np.ndarray,
    *,
    default: np.ndarray,
    scale: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    previous: np.ndarray,
    max_step: float,
) -> np.ndarray:
    """q_target = default + scale * action, rate-limited around `previous`, within limits."""
    target = default + scale * action
    target = np.clip(target, previous - max_step, previous + max_step)
    return np.clip(target, lower, upper)


def move_to_default(q0: np.ndarray, default: np.ndarray, elapsed: float, duration: float):
    """The interpolated target `elapsed` s into a move from q0 to default over `duration`."""
    alpha = min(max(elapsed / duration, 0.0), 1.0)
    return q0 + alpha * (default - q0)
