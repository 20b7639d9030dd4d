"""Observation terms of `quad-hover`, pure functions of the drone's state.

`policy_observation` is the one definition used in training, evaluation and on a
robot: deploy builds `QuadState` from its sensors and calls the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.quadrotor import PRIVILEGED_OBSERVATION, QuadState
from simreal.tasks.quadrotor.observations import NOISE, OWN_STATE_TERMS
from simreal.tasks.terms import ObservationTerm, layout, observe

__all__ = [
    "POLICY_OBSERVATION",
    "POLICY_TERMS",
    "PRIVILEGED_OBSERVATION",
    "HoverReading",
    "QuadState",
    "policy_observation",
]


@dataclass
class HoverReading:
    """What the observation is computed from: the drone's state, the target (3,) or
    (N, 3) and the policy's previous action (N, 4)."""

    state: QuadState
    target: np.ndarray
    last_action: np.ndarray


def target_pos_error(r: HoverReading) -> np.ndarray:
    """Target minus position (m, world frame)."""
    return r.target - r.state.base_pos


POLICY_TERMS: tuple[ObservationTerm, ...] = (
    ObservationTerm("target_pos_error", 3, target_pos_error, NOISE),
    *OWN_STATE_TERMS,
)
POLICY_OBSERVATION: tuple[tuple[str, int], ...] = layout(POLICY_TERMS)


def policy_observation(state: QuadState, target: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    """(N, 22) float32 observation in POLICY_TERMS order."""
    return observe(POLICY_TERMS, HoverReading(state, target, last_action))
