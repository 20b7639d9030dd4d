"""Reward terms every Crazyflie task shares: pure functions returning (num_envs,)
unweighted values, and the `RewardTerm`s that read them from a `QuadrotorEnv`."""

from __future__ import annotations

import numpy as np

from simreal.tasks.terms import RewardTerm


def ang_vel(base_ang_vel: np.ndarray) -> np.ndarray:
    """Squared body rate (rad^2/s^2), to be weighted negatively."""
    return np.sum(np.square(base_ang_vel), axis=1)


def action_rate(action: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    """Squared change of the action between control steps, to be weighted negatively."""
    return np.sum(np.square(action - last_action), axis=1)


def ang_vel_reward(weight: float | None = None) -> RewardTerm:
    """`ang_vel`: squared body rate, with a task's default weight (per second)."""
    return RewardTerm("ang_vel", ang_vel, weight, inputs=("state.base_ang_vel",))


def action_rate_reward(weight: float | None = None) -> RewardTerm:
    """`action_rate`: squared action change, with a task's default weight (per second)."""
    return RewardTerm("action_rate", action_rate, weight, inputs=("action", "last_action"))
