"""Reward terms of `quad-track`: pure functions returning (num_envs,) unweighted values,
listed once in REWARDS with their default weights (per second)."""

from __future__ import annotations

import numpy as np

from simreal.tasks.quadrotor.rewards import action_rate_reward, ang_vel_reward
from simreal.tasks.terms import RewardTerm


def tracking(error: np.ndarray) -> np.ndarray:
    """Up to 1.5 per step: sharp within a few centimetres, with a broad tail that still
    pulls a drone back from half a metre away. error: (N,) distance to the reference (m)."""
    return np.exp(-error / 0.1) + 0.5 * np.exp(-error / 0.5)


REWARDS: tuple[RewardTerm, ...] = (
    RewardTerm("tracking", tracking, 30.0, inputs=("tracking_error",)),
    ang_vel_reward(weight=-0.06),
    action_rate_reward(),
)
