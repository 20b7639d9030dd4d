"""The policy observation on the robot, from the task's own observation terms.

The task a policy was trained on (its `task` metadata, looked up in the task registry)
declares its policy observation once, as terms (`policy_terms` of its environment:
`tasks.g1.observations.POLICY_TERMS` for g1-force, `PULL_POLICY_TERMS` for g1-pull,
`WALK_POLICY_TERMS` for g1-walk).
Training, evaluation and this node evaluate those same term functions; here on a batch
of one `PullPolicyReading`: the robot state, the policy's default pose and last action,
the walking command (`deploy.commands`), the pull direction and the gait clock
(`gait_clock`). No layout is written down in deploy/.

A policy is refused, naming what is wrong, when its task is not registered, when its
`observation_names` differ from its task's terms, when a term reads something this node
does not feed, when its observation has a gait clock but its metadata lacks the clock,
or when it takes a command its task declares no trained ranges for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from simreal.deploy.commands import CommandRanges
from simreal.deploy.g1.gait_clock import GaitClock
from simreal.deploy.g1.messages import RobotState
from simreal.deploy.runtime import OnnxPolicy, PolicyMetadataError
from simreal.tasks.g1.observations import G1State
from simreal.tasks.g1.walking_terms import COMMAND_VELOCITY, GAIT_TERMS
from simreal.tasks.g1_pull.observations import PullPolicyReading
from simreal.tasks.terms import ObservationTerm, layout, observe

PULL_DIRECTIONS = {"forward": 1.0, "backward": -1.0}
"""`--pull-direction`: +1 pulls forward (the load behind), -1 backward (the load in front)."""


@dataclass(frozen=True)
class PolicyInputs:
    """What the node adds to the robot state for one policy step: the walking command
    (vx, vy, yaw_rate) and the policy time (s since the policy started)."""

    command: np.ndarray
    t: float


def reading(
    state: RobotState,
    last_action: np.ndarray,
    default_joint_pos: np.ndarray,
    command: np.ndarray,
    pull_direction: float,
    clock: GaitClock | None,
    t: float,
) -> PullPolicyReading:
    """Everything the G1 tasks' terms read, for one robot state (a batch of one)."""
    command = np.asarray(command, dtype=float)[None]
    sensors = G1State(
        base_quat=state.quat_wxyz[None],
        base_ang_vel=state.gyro[None],
        joint_pos=state.q[None],
        joint_vel=state.dq[None],
    )
    return PullPolicyReading(
        state=sensors,
        default_joint_pos=np.asarray(default_joint_pos),
        last_action=np.asarray(last_action)[None],
        command=command,
        direction=np.array([pull_direction]),
        phase=clock.phase(t) if clock else np.zeros(1),
        walking=clock.walking(command) if clock else np.zeros(1, dtype=bool),
    )


def task_terms(task: str, source: str) -> tuple[type, tuple[ObservationTerm, ...]]:
    """The environment class and policy terms of a registered task."""
    from simreal.tasks import get_task

    try:
        env_cls = get_task(task).env_cls
    except KeyError as err:
        raise PolicyMetadataError(f"{source}: {err.args[0]}") from None
    return env_cls, env_cls.policy_terms


class G1Observation:
    """The observation function of one policy: `obs = G1Observation(policy)(state,
    last_action, PolicyInputs(command, t))`, float32 (n_obs,)."""

    def __init__(self, policy: OnnxPolicy, pull_direction: float = -1.0):
        meta, source = policy.metadata, str(policy.path)
        self.meta = meta
        env_cls, self.terms = task_terms(meta.task, source)
        ours = [(name, size) for name, size in meta.observation_names]
        theirs = [tuple(pair) for pair in layout(self.terms)]
        if ours != theirs:
            raise PolicyMetadataError(
                f"{source}: observation_names {ours} differ from task {meta.task!r}'s "
                f"observation terms {theirs}"
            )
        self.needs_command = COMMAND_VELOCITY in self.terms
        self.clock = (
            GaitClock.from_metadata(policy.raw_metadata, source)
            if any(term in GAIT_TERMS for term in self.terms)
            else None
        )
        self.pull_direction = float(pull_direction)
        self.default = np.asarray(meta.default_joint_pos)
        self.ranges = (
            self._command_ranges(env_cls, policy.raw_metadata, source)
            if self.needs_command
            else None
        )
        self._check_feedable(source)

    def _command_ranges(self, env_cls, raw: dict[str, str], source: str) -> CommandRanges:
        ranges = getattr(env_cls, "command_ranges", None)
        if ranges is None:
            raise PolicyMetadataError(
                f"{source}: task {self.meta.task!r} takes a command but declares no trained "
                "command ranges (command_ranges) to clip it to"
            )
        if "task_config" not in raw:
            raise PolicyMetadataError(
                f"{source}: the policy takes a command but its metadata lacks task_config, "
                "which holds the trained command ranges"
            )
        try:
            low, high = ranges(json.loads(raw["task_config"]), self.pull_direction)
        except (TypeError, ValueError) as err:
            raise PolicyMetadataError(f"{source}: task_config's command: {err}") from None
        return CommandRanges(tuple(low), tuple(high))

    def _check_feedable(self, source: str) -> None:
        """Evaluate every term once on a resting robot: a term reading a field this node
        does not fill is refused, named."""
        n = len(self.default)
        state = RobotState(
            q=self.default.copy(),
            dq=np.zeros(n),
            tau_est=np.zeros(n),
            quat_wxyz=np.array([1.0, 0.0, 0.0, 0.0]),
            gyro=np.zeros(3),
            accel=np.zeros(3),
            tick=0,
            mode_machine=0,
        )
        r = self._reading(state, np.zeros(n), PolicyInputs(np.zeros(3), 0.0))
        for term in self.terms:
            try:
                value = term.func(r)
            except AttributeError as err:
                raise PolicyMetadataError(
                    f"{source}: observation term {term.name!r} of task {self.meta.task!r} "
                    f"reads {err.name!r}, which the deploy node does not feed"
                ) from None
            if np.shape(value) != (1, term.size):
                raise PolicyMetadataError(
                    f"{source}: observation term {term.name!r} gives shape {np.shape(value)} "
                    f"on the robot, not (1, {term.size})"
                )

    def _reading(self, state: RobotState, last_action, inputs: PolicyInputs) -> PullPolicyReading:
        return reading(
            state,
            last_action,
            self.default,
            inputs.command,
            self.pull_direction,
            self.clock,
            inputs.t,
        )

    def __call__(self, state: RobotState, last_action, inputs: PolicyInputs) -> np.ndarray:
        return observe(self.terms, self._reading(state, last_action, inputs))[0]

    def reference_offset(self, inputs: PolicyInputs) -> np.ndarray | float:
        """Joint-target offsets the task adds under the action (its stepping reference)."""
        if self.clock is None:
            return 0.0
        return self.clock.reference_offset(inputs.t, inputs.command)
