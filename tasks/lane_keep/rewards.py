"""Reward terms of `lane-keep`: pure functions returning (N,) unweighted values."""

from __future__ import annotations

import numpy as np

from simreal.tasks.terms import RewardTerm


def lane_keeping(offset: np.ndarray) -> np.ndarray:
    """Up to 1.5 per step: sharp within 10 cm of the lane centre, with a tail that still
    pulls the car back from a metre away. offset (N,) m."""
    e = np.abs(offset)
    return np.exp(-e / 0.1) + 0.5 * np.exp(-e / 0.5)


def heading(heading_error: np.ndarray) -> np.ndarray:
    """Squared heading error (rad^2): weighted negative."""
    return heading_error**2


def clearance(gap: np.ndarray) -> np.ndarray:
    """Grows to 1 as the gap (m) to the nearest obstacle closes: weighted negative."""
    return np.exp(-np.maximum(gap, 0.0) / 0.5)


def speed(forward_speed: np.ndarray, desired: np.ndarray) -> np.ndarray:
    """1 at the desired speed (m/s), falling off over about 2 m/s."""
    return np.exp(-(((forward_speed - desired) / 2.0) ** 2))


def smoothness(action: np.ndarray, last_action: np.ndarray) -> np.ndarray:
    """Squared action change between control steps: weighted negative."""
    return ((action - last_action) ** 2).sum(axis=1)


def semantic_alignment(forward_speed: np.ndarray, caption_speed: np.ndarray) -> np.ndarray:
    """How far (m/s) the car drives above the speed its caption asks for (e.g. slowing
    before a sharp curve): weighted negative."""
    return np.maximum(forward_speed - caption_speed, 0.0)


def failure(collided: np.ndarray, off_road: np.ndarray) -> np.ndarray:
    """1 on the step the car hits an obstacle or leaves the road: weighted negative."""
    return (collided | off_road).astype(np.float64)


REWARDS: tuple[RewardTerm, ...] = (
    RewardTerm("lane_keeping", lane_keeping, 20.0, inputs=("lane_offset",)),
    RewardTerm("heading", heading, -20.0, inputs=("heading_error",)),
    RewardTerm("clearance", clearance, -20.0, inputs=("gap",)),
    RewardTerm("speed", speed, 10.0, inputs=("forward_speed", "desired_speed")),
    RewardTerm("smoothness", smoothness, -4.0, inputs=("action", "last_action")),
    RewardTerm("semantic", semantic_alignment, -2.0, inputs=("forward_speed", "caption_speed")),
    RewardTerm("failure", failure, -400.0, inputs=("collided", "off_road")),
)
"""Default weights per second (at 20 Hz control: lane_keeping 1, heading -1, clearance -1,
speed 0.5, smoothness -0.2, semantic -0.1, failure -20 per step)."""
