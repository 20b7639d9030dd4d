"""Observation terms of `quad-track`: where the reference is now and where it is going.

`policy_observation` is the single definition for training, evaluation and robots.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.quadrotor import QuadState, base_rot


def observation_layout(preview_steps: int) -> tuple[tuple[str, int], ...]:
    return (
        ("ref_pos_error", 3),
        ("ref_preview_error", 3 * preview_steps),
        ("ref_vel", 3),
        ("base_rot", 9),
        ("base_lin_vel", 3),
        ("base_ang_vel", 3),
        ("last_action", 4),
    )


def policy_observation(
    state: QuadState,
    ref_pos: np.ndarray,
    ref_preview: np.ndarray,
    ref_vel: np.ndarray,
    last_action: np.ndarray,
) -> np.ndarray:
    """(N, 25 + 3K) float32: reference now (N, 3), preview (N, K, 3) and its velocity,
    all relative to the drone, then the drone's own state."""
    pos = state.base_pos
    return np.concatenate(
        [
            ref_pos - pos,
            (ref_preview - pos[:, None, :]).reshape(pos.shape[0], -1),
            ref_vel,
            base_rot(state),
            state.base_lin_vel,
            state.base_ang_vel,
            last_action,
        ],
        axis=1,
        dtype=np.float32,
    )
