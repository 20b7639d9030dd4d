"""Reward terms of `quad-hover`: pure functions returning (num_envs,) unweighted values."""

from __future__ import annotations

import numpy as np


def hover(base_pos: np.ndarray, target: np.ndarray) -> np.ndarray:
    """HoverAviary's reward: max(0, 2 - d^4), d the distance to the target (m)."""
    d = np.linalg.norm(target - base_pos, axis=1)
    return np.maximum(0.0, 2.0 - d**4)


def ang_vel(base_ang_vel: np.ndarray) -> np.ndarray:
    """Squared body rate (rad^2/s^2), to be weighted negatively."""
    return np.sum(np.square(base_ang_vel), axis=1)


def action_rate(action: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    """Squared change of the action between control steps, to be weighted negatively."""
    return np.sum(np.square(action - last_action), axis=1)
