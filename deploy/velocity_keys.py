"""Velocity keys in the deploy node's terminal: each press steps the walking set-point.

The layout is teleop_twist_keyboard's (the ROS tool most people drive a robot from a
terminal with), with its `,` for backward: `i`/`,` step vx, `j`/`l` step the yaw rate,
`u`/`o` step vy (left, right), `k` stops walking. The node's own keys keep their meaning
(space or `e`: e-stop, `s`: start, `p`: stop policy), which is why walking does not use
w/s/a/d. A step lands inside the policy's trained ranges, so keys never count as clipped.
"""

from __future__ import annotations

import numpy as np

from simreal.deploy.commands import CommandRanges

STEP = np.array([0.1, 0.1, 0.1])
"""One press: 0.1 m/s of vx or vy, 0.1 rad/s of yaw rate."""
VELOCITY_KEYS: dict[str, tuple[int, float]] = {
    "i": (0, 1.0),
    ",": (0, -1.0),
    "u": (1, 1.0),
    "o": (1, -1.0),
    "j": (2, 1.0),
    "l": (2, -1.0),
}
"""Key -> (field of (vx, vy, yaw_rate), direction of its step)."""
STOP_KEY = "k"
HELP = "walk: i/, forward/back, u/o left/right, j/l turn left/right, k stop walking"


def is_velocity_key(key: str) -> bool:
    return key in VELOCITY_KEYS or key == STOP_KEY


def key_command(key: str, setpoint: np.ndarray, ranges: CommandRanges) -> np.ndarray | None:
    """The new set-point (3,) after `key` from `setpoint`, inside `ranges`; None for a key
    that is not a velocity key."""
    if key == STOP_KEY:
        return np.zeros(3)
    if key not in VELOCITY_KEYS:
        return None
    index, sign = VELOCITY_KEYS[key]
    out = np.asarray(setpoint, dtype=float).copy()
    out[index] = round(out[index] + sign * STEP[index], 6)
    return ranges.clip(out)
