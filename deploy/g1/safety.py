"""The deploy node's state machine and the safety layer around the policy.

    ZERO_TORQUE --(valid state for settle_ticks)--> MOVE_TO_DEFAULT --(move_s)--> HOLD
    HOLD --(start)--> ACTIVE --(stop)--> MOVE_TO_DEFAULT
    any --(fault or estop)--> DAMPING (latched until the node restarts)

Faults: state older than `state_timeout_s` once state has been seen (watchdog),
`max_consecutive_bad` malformed or bad-crc states in a row, a non-finite or
out-of-range action (`action_fault`), an e-stop. Pure: time and inputs come in as
arguments, so every transition is testable without DDS.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


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
    ) -> Mode:
        """Advance on this tick's inputs; `state_age_s` is None before any valid state."""
        cfg = self.config
        if self.mode is Mode.DAMPING:
            return self.mode
        if command == "estop":
            self.fault(now, "estop")
        elif state_age_s is not None and state_age_s > cfg.state_timeout_s:
            self.fault(now, f"watchdog: state {state_age_s * 1e3:.0f} ms old")
        elif consecutive_bad >= cfg.max_consecutive_bad:
            self.fault(now, f"{consecutive_bad} bad states in a row (crc or malformed)")
        elif self.mode is Mode.ZERO_TORQUE:
            self.good_states += bool(new_state)
            if self.good_states >= cfg.settle_ticks:
                self._go(now, Mode.MOVE_TO_DEFAULT, "state ok")
        elif self.mode is Mode.MOVE_TO_DEFAULT and now - self.mode_since >= cfg.move_s:
            self._go(now, Mode.HOLD, "at default pose")
        elif self.mode is Mode.HOLD and command == "start":
            self._go(now, Mode.ACTIVE, "start")
        elif self.mode is Mode.ACTIVE and command == "stop":
            self._go(now, Mode.MOVE_TO_DEFAULT, "stop")
        return self.mode


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
