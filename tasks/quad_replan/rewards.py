"""Reward terms of `quad-replan`, one value per plan (the episode is one decision):
pure functions of the judged outcome, listed once in REWARDS with default weights."""

from __future__ import annotations

import numpy as np

from simreal.tasks.terms import RewardTerm


def success(succeeded: np.ndarray) -> np.ndarray:
    """1 where the plan succeeded at the active fidelity (low: feasible; medium: every
    waypoint reached in order, no crash)."""
    return succeeded.astype(float)


def duration(time_s: np.ndarray) -> np.ndarray:
    """Seconds the plan takes (medium: the flight time where it completed), to be
    weighted negatively: faster plans earn more."""
    return time_s


def infeasibility(worst_margin: np.ndarray) -> np.ndarray:
    """How far the worst low-fidelity margin is below zero (0 where feasible), to be
    weighted negatively: a gradient towards feasibility for plans that fail anyway."""
    return np.maximum(-worst_margin, 0.0)


REWARDS: tuple[RewardTerm, ...] = (
    RewardTerm("success", success, 10.0, inputs=("succeeded",)),
    RewardTerm("duration", duration, -1.0, inputs=("time_s",)),
    RewardTerm("infeasibility", infeasibility, -5.0, inputs=("worst_margin",)),
)
