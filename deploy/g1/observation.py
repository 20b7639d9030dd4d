"""The policy observation on the robot, from the G1 tasks' own observation terms.

`simreal.tasks.g1.observations.POLICY_TERMS` is the single definition: training,
evaluation and this node evaluate the same term functions, here on a batch of one robot
state. A policy whose observation_names differ from those terms is refused, naming both
layouts (g1-pull's walking command and gait clock have no source on the robot yet).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from simreal.deploy.g1.messages import RobotState
from simreal.deploy.runtime import PolicyMetadata, PolicyMetadataError
from simreal.tasks.g1.observations import POLICY_OBSERVATION, POLICY_TERMS, G1Reading, G1State
from simreal.tasks.terms import observe

ObservationFn = Callable[[RobotState, np.ndarray, PolicyMetadata], np.ndarray]


def reading(state: RobotState, last_action: np.ndarray, meta: PolicyMetadata) -> G1Reading:
    """What the G1's observation terms read, from one robot state (a batch of one)."""
    sensors = G1State(
        base_quat=state.quat_wxyz[None],
        base_ang_vel=state.gyro[None],
        joint_pos=state.q[None],
        joint_vel=state.dq[None],
    )
    return G1Reading(sensors, np.asarray(meta.default_joint_pos), np.asarray(last_action)[None])


def g1_observation(state: RobotState, last_action: np.ndarray, meta: PolicyMetadata) -> np.ndarray:
    """The (93,) float32 policy observation of one robot state."""
    return observe(POLICY_TERMS, reading(state, last_action, meta))[0]


def observation_function(meta: PolicyMetadata) -> ObservationFn:
    """The observation of a policy trained on a G1 task with the G1's own terms; refuses
    a policy with another layout."""
    layout = [(name, size) for name, size in meta.observation_names]
    expected = [(name, size) for name, size in POLICY_OBSERVATION]
    if layout != expected:
        raise PolicyMetadataError(
            f"the policy's observation_names {layout} (task {meta.task!r}) differ from the "
            f"G1 observation terms {expected}"
        )
    return g1_observation
