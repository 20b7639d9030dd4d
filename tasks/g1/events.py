"""What is done to a G1's simulations, as `EventTerm`s. A G1 task lists them in this
order, its own load events in their places (the order of the random draws, so part of
every rollout's numbers):

- startup: the calibration overlay written into every simulation (`CALIBRATION`);
- reset (after the robot's initial pose, `G1Env.reset_state`): the robot randomized
  (`ROBOT`), the task's loads started (g1-pull's cart, g1-force's force schedule,
  g1-walk's command), the first push scheduled (`PUSH_SCHEDULE`);
- interval (every control step before physics): g1-walk's push test, the task's
  external forces (`EXTERNAL_FORCES`: g1-force), then the random pushes (`PUSH`).

Randomization events run only in training with `randomize` on."""

from __future__ import annotations

import numpy as np

from simreal.tasks.g1.calibration import apply_calibration
from simreal.tasks.g1.randomization import push, randomize_robot, schedule_pushes
from simreal.tasks.terms import EventTerm


def external_forces(env, t: np.ndarray) -> None:
    """The task's external forces for the coming control period (`apply_external_forces`)."""
    env.apply_external_forces(t)


CALIBRATION = EventTerm("calibration", apply_calibration, "startup")
ROBOT = EventTerm("robot", randomize_robot, "reset", randomization=True)
PUSH_SCHEDULE = EventTerm("push_schedule", schedule_pushes, "reset", randomization=True)
EXTERNAL_FORCES = EventTerm("external_forces", external_forces, "interval")
PUSH = EventTerm("push", push, "interval", randomization=True)

EVENTS: tuple[EventTerm, ...] = (CALIBRATION, ROBOT, PUSH_SCHEDULE, PUSH)
"""The bare G1's events: no loads."""
