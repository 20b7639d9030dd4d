"""Observation terms of `quad-track`: where the reference is now and where it is going.

`policy_terms` is the single definition for training, evaluation and robots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.quadrotor import QuadState
from simreal.tasks.quadrotor.observations import NOISE, OWN_STATE_TERMS
from simreal.tasks.terms import ObservationTerm, layout


@dataclass
class TrackReading:
    """What the observation is computed from: the drone's state, the reference now
    (N, 3), its preview (N, K, 3) and velocity (N, 3), and the previous action (N, 4)."""

    state: QuadState
    ref_pos: np.ndarray
    ref_preview: np.ndarray
    ref_vel: np.ndarray
    last_action: np.ndarray


def ref_pos_error(r: TrackReading) -> np.ndarray:
    return r.ref_pos - r.state.base_pos


def ref_preview_error(r: TrackReading) -> np.ndarray:
    pos = r.state.base_pos
    return (r.ref_preview - pos[:, None, :]).reshape(pos.shape[0], -1)


def ref_vel(r: TrackReading) -> np.ndarray:
    return r.ref_vel


def policy_terms(preview_steps: int) -> tuple[ObservationTerm, ...]:
    """The reference now, its preview and velocity, all relative to the drone, then the
    drone's own state: 25 + 3 * preview_steps values."""
    return (
        ObservationTerm("ref_pos_error", 3, ref_pos_error, NOISE),
        ObservationTerm("ref_preview_error", 3 * preview_steps, ref_preview_error, NOISE),
        ObservationTerm("ref_vel", 3, ref_vel, NOISE),
        *OWN_STATE_TERMS,
    )


def observation_layout(preview_steps: int) -> tuple[tuple[str, int], ...]:
    return layout(policy_terms(preview_steps))
