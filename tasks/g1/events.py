"""What is done to a G1's simulations, as `EventTerm`s in the order they run within each
mode (the order of the random draws, so part of every rollout's numbers):

- startup: the calibration overlay written into every simulation;
- reset (after the robot's initial pose, `G1Env.reset_state`): the robot randomized,
  the task's loads started (`G1Env.reset_loads`), the first push scheduled;
- interval (every control step before physics): the task's external forces
  (`G1Env.apply_external_forces`), then the random pushes.

Randomization events run only in training with `randomize` on."""

from __future__ import annotations

import numpy as np

from simreal.tasks.g1.calibration import apply_calibration
from simreal.tasks.g1.randomization import push, randomize_robot, schedule_pushes
from simreal.tasks.terms import EventTerm


def start_loads(env, ids: np.ndarray) -> None:
    """The task's own loads for new episodes (`reset_loads`: g1-pull's cart, g1-force's
    force schedule, g1-walk's command)."""
    env.reset_loads(ids)


def external_forces(env, t: np.ndarray) -> None:
    """The task's external forces for the coming control period (`apply_external_forces`)."""
    env.apply_external_forces(t)


EVENTS: tuple[EventTerm, ...] = (
    EventTerm("calibration", apply_calibration, "startup"),
    EventTerm("robot", randomize_robot, "reset", randomization=True),
    EventTerm("loads", start_loads, "reset"),
    EventTerm("push_schedule", schedule_pushes, "reset", randomization=True),
    EventTerm("external_forces", external_forces, "interval"),
    EventTerm("push", push, "interval", randomization=True),
)
