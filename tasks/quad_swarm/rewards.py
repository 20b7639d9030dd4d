"""Reward terms of `quad-swarm`: pure functions of (num_sims, num_drones, ...) arrays that
return one unweighted value per drone, shaped (num_sims, num_drones).

The shaping follows one rule: a drone must earn more by arriving and staying than by any
other way to spend its episode. `progress` (a potential difference, metres closed this
step) points the way from far off; `approach` pays every step in proportion to
1 / (1 + d), so hovering at the goal is worth far more than racing past it; `crash`
ends the drone's episode, losing that stream. Swarm safety comes from `clearance`, a soft
penalty that starts before a collision does, and `speed`, which keeps flight brisk but
controllable among the columns.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.quad_swarm.neighbours import other_drones
from simreal.tasks.quadrotor.rewards import ang_vel
from simreal.tasks.terms import RewardTerm


def approach(goal_dist: np.ndarray) -> np.ndarray:
    """1 / (1 + d): 1 at the goal, 0.5 one metre away, ~0.1 across the room."""
    return 1.0 / (1.0 + goal_dist)


def speed(lin_vel: np.ndarray) -> np.ndarray:
    """Squared speed (m^2/s^2), to be weighted negatively."""
    return np.sum(np.square(lin_vel), axis=-1)


def nearest_drone_gap(pos: np.ndarray) -> np.ndarray:
    """Centre-to-centre distance (m) to the nearest other drone of the same simulation."""
    return other_drones(pos)[1].min(axis=2)


def nearest_column_gap(
    pos: np.ndarray, columns_xy: np.ndarray, present: np.ndarray, column_radius: float
) -> np.ndarray:
    """Horizontal distance (m) from each drone's centre to the nearest column surface."""
    rel = columns_xy[:, None, :, :] - pos[:, :, None, :2]
    surface = np.linalg.norm(rel, axis=-1) - column_radius
    return np.where(present[:, None, :], surface, np.inf).min(axis=2)


def clearance(
    drone_gap: np.ndarray,
    column_gap: np.ndarray,
    drone_collision: float,
    drone_radius: float,
    margin: float,
) -> np.ndarray:
    """0 with `margin` (m) to spare, rising linearly to 1 at contact, for the tighter of the
    nearest drone and the nearest column; weighted negatively."""
    to_drone = (drone_gap - drone_collision) / margin
    to_column = (column_gap - drone_radius) / margin
    return np.clip(1.0 - np.minimum(to_drone, to_column), 0.0, 1.0)


# -- the terms, read from a QuadSwarmEnv: one value per drone, flattened to (num_envs,) --


def progress_term(env) -> np.ndarray:
    """Metres closed on the goal since the last step (`after_step` keeps the last)."""
    return (env.prev_goal_dist - env.goal_dist).ravel()


def path_progress_term(env) -> np.ndarray:
    """Metres closed on the goal along the shortest path round the columns."""
    return (env.prev_path_dist - env.path_dist()).ravel()


def approach_term(env) -> np.ndarray:
    return approach(env.goal_dist).ravel()


def distance_term(env) -> np.ndarray:
    return env.goal_dist.ravel()


def at_goal_term(env) -> np.ndarray:
    return (env.goal_dist < env.cfg.goal_radius).astype(float).ravel()


def collision_term(env) -> np.ndarray:
    return env.collisions.astype(float).ravel()


def clearance_term(env) -> np.ndarray:
    return env.near_miss.ravel()


def crash_term(env) -> np.ndarray:
    return env.crashed_now.astype(float).ravel()


def speed_term(env) -> np.ndarray:
    return speed(env.lin_vel).ravel()


def ang_vel_term(env) -> np.ndarray:
    return ang_vel(env.ang_vel.reshape(-1, 3))


REWARDS: tuple[RewardTerm, ...] = (
    RewardTerm("progress", progress_term, weight=60.0),
    RewardTerm("path_progress", path_progress_term, weight=0.0),
    RewardTerm("approach", approach_term, weight=30.0),
    RewardTerm("distance", distance_term, weight=0.0),
    RewardTerm("at_goal", at_goal_term, weight=15.0),
    RewardTerm("collision", collision_term, weight=-300.0),
    RewardTerm("clearance", clearance_term, weight=-15.0),
    RewardTerm("crash", crash_term, weight=-600.0),
    RewardTerm("speed", speed_term, weight=-0.3),
    RewardTerm("ang_vel", ang_vel_term, weight=-0.06),
)
"""Default weights per second (at 30 Hz control: progress 2, approach 1, at_goal 0.5,
collision -10, clearance -0.5, crash -20, speed -0.01, ang_vel -0.002 per step)."""
