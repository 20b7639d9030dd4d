"""How a G1 episode fails, as `TerminationTerm`s: the robot fell (pelvis low or thrown
high, tilted over, or a state that is not finite). The time limit is `TaskEnv`'s."""

from __future__ import annotations

import numpy as np

from simreal.tasks.rotations import projected_gravity
from simreal.tasks.terms import TerminationTerm

MAX_BASE_HEIGHT_M = 2.0
"""A pelvis thrown above this counts as a fall too."""


def fall(env) -> np.ndarray:
    """(N,) bool: pelvis below `fall_height_m` or above `MAX_BASE_HEIGHT_M` over the
    ground, tilted more than `fall_tilt_rad` from upright, or a state that is not finite."""
    qpos = env.engine.qpos
    height = env.base_height()
    up_z = -projected_gravity(qpos[:, 3:7])[:, 2]
    tilt = np.arccos(np.clip(up_z, -1.0, 1.0))
    finite = np.isfinite(qpos).all(axis=1) & np.isfinite(env.engine.qvel).all(axis=1)
    return (
        ~finite
        | (height < env.cfg.fall_height_m)
        | (height > MAX_BASE_HEIGHT_M)
        | (tilt > env.cfg.fall_tilt_rad)
    )


TERMINATIONS: tuple[TerminationTerm, ...] = (TerminationTerm("fall", fall),)
"""The G1's terminations; `env.fell` is the "fall" term's value at the last step."""
