"""The policy observation built from the robot's state, from the task's own function.

The task's observation function is the single source of truth: for a policy trained on
task T, `observation_function(meta)` uses `simreal.tasks.<T>.observations`
(`policy_observation` over a batch of one `G1State`, the g1-force interface) when that
module exists, and refuses a policy whose observation_names differ from the task's
`POLICY_OBSERVATION`. For a task without such a module it falls back to
`default_observation`, the same documented layout written here, and refuses a policy
whose layout differs from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np

from simreal.deploy.g1.messages import RobotState
from simreal.deploy.runtime import PolicyMetadata, PolicyMetadataError

ObservationFn = Callable[[RobotState, np.ndarray, PolicyMetadata], np.ndarray]

DEFAULT_LAYOUT: tuple[tuple[str, int], ...] = (
    ("base_ang_vel", 3),
    ("projected_gravity", 3),
    ("joint_pos", 29),
    ("joint_vel", 29),
    ("last_action", 29),
)
"""joint_pos is relative to the default pose; 93 in all."""


def projected_gravity(quat_wxyz: np.ndarray) -> np.ndarray:
    """The world's unit gravity vector (0, 0, -1) in the body frame."""
    w, x, y, z = quat_wxyz / np.linalg.norm(quat_wxyz)
    return np.array([-2 * (x * z - w * y), -2 * (y * z + w * x), -(1 - 2 * (x * x + y * y))])


def default_observation(
    state: RobotState, last_action: np.ndarray, meta: PolicyMetadata
) -> np.ndarray:
    return np.concatenate(
        [
            state.gyro,
            projected_gravity(state.quat_wxyz),
            state.q - np.asarray(meta.default_joint_pos),
            state.dq,
            last_action,
        ]
    ).astype(np.float32)


def _check_layout(meta: PolicyMetadata, expected, source: str) -> None:
    layout = [(name, size) for name, size in meta.observation_names]
    expected = [(name, size) for name, size in expected]
    if layout != expected:
        raise PolicyMetadataError(
            f"the policy's observation_names {layout} differ from {source}'s {expected}"
        )


def task_observation(meta: PolicyMetadata) -> ObservationFn | None:
    """The task's own policy observation for one robot state, or None if it has none."""
    module_name = f"simreal.tasks.{meta.task.replace('-', '_')}.observations"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    policy_observation = getattr(module, "policy_observation", None)
    state_type = getattr(module, "G1State", None)
    if policy_observation is None or state_type is None:
        return None
    _check_layout(meta, getattr(module, "POLICY_OBSERVATION", ()), module_name)

    def observe(state: RobotState, last_action: np.ndarray, meta: PolicyMetadata) -> np.ndarray:
        batch = state_type(
            base_quat=state.quat_wxyz[None],
            base_ang_vel=state.gyro[None],
            joint_pos=state.q[None],
            joint_vel=state.dq[None],
        )
        default = np.asarray(meta.default_joint_pos)
        return policy_observation(batch, default, np.asarray(last_action)[None])[0]

    return observe


def observation_function(meta: PolicyMetadata) -> ObservationFn:
    """The task's observation if it provides one, else the default layout."""
    task_fn = task_observation(meta)
    if task_fn is not None:
        return task_fn
    _check_layout(meta, DEFAULT_LAYOUT, "the deploy node's default layout")
    return default_observation
