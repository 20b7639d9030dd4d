"""Each task's key quantities over an episode, logged beside the robot's own topics
(`simreal eval --log`) and plotted by `simreal replay --plot`: what the task is about
and the robot's sensors do not show (g1-pull's handle force and cart travel).

A signal's name ends with its unit (`_n`, `_m`, `_deg`, `_mps`); the plot draws the
signals of one unit on one panel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simreal.tasks.env import TaskEnv


@dataclass(frozen=True)
class Signal:
    name: str
    read: Callable[[TaskEnv], np.ndarray]
    """(num_sims,) values in the environment's current state."""


def _pull_travel(env: TaskEnv) -> np.ndarray:
    """The cart's travel along its rails from its start, positive in the pull direction."""
    start = env.cart_start_x(env.direction)
    return env.direction * (env.engine.qpos[:, env.cart_q] - start)


SIGNALS: dict[str, tuple[Signal, ...]] = {
    "quad-hover": (
        Signal(
            "position_error_m",
            lambda env: np.linalg.norm(env.target - env.engine.qpos[:, 0:3], axis=1),
        ),
    ),
    "quad-track": (Signal("tracking_error_m", lambda env: env.tracking_error()),),
    "g1-force": (
        Signal("push_n", lambda env: np.linalg.norm(env.external_force.sum(axis=1), axis=1)),
    ),
    "g1-pull": (
        Signal("handle_force_n", lambda env: env.handle_force_n),
        Signal("pull_resistance_n", lambda env: env.resistance),
        Signal("cart_travel_m", _pull_travel),
        Signal("pelvis_travel_m", lambda env: env.direction * env.engine.qpos[:, 0] - env.start_x),
        # Along the rails (world x): the walking command against the pelvis's velocity.
        Signal("commanded_velocity_x_mps", lambda env: env.command[:, 0]),
        Signal("pelvis_velocity_x_mps", lambda env: env.engine.qvel[:, 0]),
    ),
    "dex-track": (
        Signal("object_pos_error_m", lambda env: env.tracking_errors()["object_pos"]),
        Signal("object_rot_error_deg", lambda env: env.tracking_errors()["object_rot"]),
    ),
    "lane-keep": (
        Signal("lane_offset_m", lambda env: env.lane_offset),
        Signal("speed_mps", lambda env: np.linalg.norm(env.engine.qvel[:, 0:2], axis=1)),
    ),
}


def task_signals(task: str) -> tuple[Signal, ...]:
    """The task's signals; none for a task that declares none."""
    return SIGNALS.get(task, ())
