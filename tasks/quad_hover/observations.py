"""Observation terms of `quad-hover`, pure functions of the drone's state.

`policy_observation` is the one definition used in training, evaluation and on a
robot: deploy builds `QuadState` from its sensors and calls the same function.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.quadrotor import PRIVILEGED_OBSERVATION, QuadState, base_rot

__all__ = ["POLICY_OBSERVATION", "PRIVILEGED_OBSERVATION", "QuadState", "policy_observation"]

POLICY_OBSERVATION: tuple[tuple[str, int], ...] = (
    ("target_pos_error", 3),
    ("base_rot", 9),
    ("base_lin_vel", 3),
    ("base_ang_vel", 3),
    ("last_action", 4),
)
"""Layout of the policy observation: name and size of each term, in order."""


def target_pos_error(state: QuadState, target: np.ndarray) -> np.ndarray:
    return target - state.base_pos


def policy_observation(state: QuadState, target: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    """(N, 22) float32 observation in POLICY_OBSERVATION order."""
    return np.concatenate(
        [
            target_pos_error(state, target),
            base_rot(state),
            state.base_lin_vel,
            state.base_ang_vel,
            last_action,
        ],
        axis=1,
        dtype=np.float32,
    )
