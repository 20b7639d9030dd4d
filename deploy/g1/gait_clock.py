"""The gait clock of a walking policy, run inside the deploy node from the policy's
metadata, as the task runs it in training (`tasks.g1.gait`).

Training's clock starts with the episode: the phase at episode time t is
((t - gait_start_s) / gait_period_s) mod 1, the clock reads (0, 0) while no walking
speed is commanded, and the stepping reference (`gait_reference_rad`,
`gait_stride_gain`, `gait_turn_gain`, `gait_side_gain`) is added under the policy's
action. On the robot t is the policy's own time, counted in control steps since the
policy was started, so the clock advances exactly one control period per policy step
whatever the loop's jitter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.deploy.runtime import PolicyMetadataError
from simreal.tasks.g1 import gait

KEYS = (
    "gait_period_s",
    "gait_start_s",
    "stance_fraction",
    "gait_reference_rad",
    "gait_stride_gain",
)
"""What the task's `deployment_metadata` writes for its clock (`G1GaitEnv`)."""
RULE_KEY = "gait_walking_rule"
"""Which commands step (gait.WALKING_RULES); policies exported before g1-walk lack it and
walk on the forward speed alone (`forward`, g1-pull's rule)."""
OPTIONAL_KEYS = {"gait_turn_gain": ("turn_gain", 0.0), "gait_side_gain": ("side_gain", 0.0)}
"""Numeric clock keys added after the first walking policies: the GaitClock field each
sets and the value those policies were trained with (the reference's hip turn per
commanded yaw rate, gait.turn_reference, and its sideways stride, gait.side_reference,
were 0 before they existed)."""


@dataclass(frozen=True)
class GaitClock:
    period_s: float
    start_s: float
    stance_fraction: float
    reference_rad: float
    stride_gain: float
    walking_rule: str = "forward"
    turn_gain: float = 0.0
    side_gain: float = 0.0

    @classmethod
    def from_metadata(cls, raw: dict[str, str], source: str) -> GaitClock:
        """The clock in a policy's metadata strings; refuses one that lacks a key."""
        missing = [key for key in KEYS if key not in raw]
        if missing:
            raise PolicyMetadataError(
                f"{source}: its observation has a gait clock but the metadata lacks "
                f"{', '.join(missing)}"
            )
        numbers = {key: raw[key] for key in KEYS} | {
            key: raw.get(key, default) for key, (_, default) in OPTIONAL_KEYS.items()
        }
        bad = [f"{key}={value!r}" for key, value in numbers.items() if not _is_number(value)]
        if bad:
            raise PolicyMetadataError(f"{source}: gait metadata not numbers: {', '.join(bad)}")
        rule = raw.get(RULE_KEY, "forward")
        if rule not in gait.WALKING_RULES:
            raise PolicyMetadataError(
                f"{source}: {RULE_KEY} {rule!r} is not one of {gait.WALKING_RULES}"
            )
        values = [float(numbers[key]) for key in KEYS]
        optional = {field: float(numbers[key]) for key, (field, _) in OPTIONAL_KEYS.items()}
        clock = cls(*values, walking_rule=rule, **optional)
        if not (clock.period_s > 0 and 0 < clock.stance_fraction < 1):
            raise PolicyMetadataError(
                f"{source}: gait_period_s {clock.period_s} must be > 0 and stance_fraction "
                f"{clock.stance_fraction} within (0, 1)"
            )
        return clock

    def phase(self, t: float) -> np.ndarray:
        """(1,) the left leg's phase at policy time t (s)."""
        return gait.gait_phase(np.array([t]), self.start_s, self.period_s)

    def walking(self, command: np.ndarray) -> np.ndarray:
        """(1,) bool: `command` (1, 3) asks for steps under the policy's rule."""
        return gait.walking(command, self.walking_rule)

    def reference_offset(self, t: float, command: np.ndarray) -> np.ndarray:
        """(29,) the stepping reference's joint-target offsets at policy time t under
        `command` (3,)."""
        offset = gait.reference_offset(
            self.phase(t),
            np.asarray(command, dtype=float)[None],
            self.stance_fraction,
            self.reference_rad,
            self.stride_gain,
            self.walking_rule,
            self.turn_gain,
            self.side_gain,
        )
        return offset[0]


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
