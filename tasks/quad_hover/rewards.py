"""Reward terms of `quad-hover`: pure functions returning (num_envs,) unweighted values,
listed once in REWARDS with their default weights (per second)."""

from __future__ import annotations

import numpy as np

from simreal.tasks.quadrotor.rewards import action_rate_reward, ang_vel_reward
from simreal.tasks.terms import RewardTerm


def hover(base_pos: np.ndarray, target: np.ndarray) -> np.ndarray:
    """HoverAviary's reward: max(0, 2 - d^4), d the distance to the target (m)."""
    d = np.linalg.norm(target - base_pos, axis=1)
    return np.maximum(0.0, 2.0 - d**4)


REWARDS: tuple[RewardTerm, ...] = (
    RewardTerm("hover", hover, 30.0, inputs=("state.base_pos", "target")),
    ang_vel_reward(),
    action_rate_reward(),
)
"""HoverAviary's reward alone: 30 per second at 30 Hz control is its 1 per step."""
