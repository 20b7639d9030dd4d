"""Observation terms `g1-pull` adds to g1-force's, appended at the end of each layout so
that a g1-force policy extends to g1-pull (`simreal train --init-from`): the policy sees
g1-force's 93 values, then the walking command, then the gait clock; the critic sees
g1-force's critic observation, then the command, the load's privileged terms and the
gait clock (appended last so that g1-pull runs from before the clock still warm-start)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.g1.observations import (
    POLICY_OBSERVATION,
    POLICY_TERMS,
    PRIVILEGED_OBSERVATION,
    G1Reading,
)
from simreal.tasks.g1.walking_terms import (
    COMMAND_VELOCITY,
    GAIT_OBSERVATION,
    GAIT_TERMS,
    GaitReading,
)
from simreal.tasks.terms import ObservationTerm, layout


@dataclass
class PullReading(GaitReading):
    """The walking reading (command, gait phase, walking) and the pull direction (N,)."""

    direction: np.ndarray


@dataclass
class PullPolicyReading(G1Reading, PullReading):
    """Everything `PULL_POLICY_TERMS` read, in one object: the robot's sensors, default
    pose and last action (`G1Reading`) and the command and gait clock (`PullReading`).
    The deploy node evaluates the task's terms on it; the environment reads the same
    fields from its two readings."""


def pull_direction(r: PullReading) -> np.ndarray:
    """+1 pulling forward (load behind), -1 pulling backward (load in front)."""
    return r.direction[:, None]


COMMAND_TERMS: tuple[ObservationTerm, ...] = (
    COMMAND_VELOCITY,
    ObservationTerm("pull_direction", 1, pull_direction),
)
COMMAND_OBSERVATION = layout(COMMAND_TERMS)

LOAD_TERMS: tuple[ObservationTerm, ...] = (
    ObservationTerm("rope_tension", 1, lambda env: env.tension[:, None]),
    ObservationTerm("load_resistance_n", 1, lambda env: env.resistance[:, None]),
    ObservationTerm("load_damping", 1, lambda env: env.damping[:, None]),
    ObservationTerm("load_stiffness", 1, lambda env: env.stiffness[:, None]),
    ObservationTerm("load_velocity", 1, lambda env: env.engine.qvel[:, env.cart_dof, None]),
)
"""Critic-only, read from the simulation (a G1PullEnv): rope tension (N), the cart's
rolling resistance (N), damping (N s/m), spring stiffness (N/m) and velocity along the
rails (m/s)."""
LOAD_OBSERVATION = layout(LOAD_TERMS)

PULL_POLICY_TERMS = POLICY_TERMS + COMMAND_TERMS + GAIT_TERMS
PULL_POLICY_OBSERVATION = layout(PULL_POLICY_TERMS)
PULL_CRITIC_OBSERVATION = (
    POLICY_OBSERVATION
    + PRIVILEGED_OBSERVATION
    + COMMAND_OBSERVATION
    + LOAD_OBSERVATION
    + GAIT_OBSERVATION
)


def walking_command(
    t: np.ndarray,
    direction: np.ndarray,
    speed: np.ndarray,
    yaw: np.ndarray,
    start_delay_s: float,
    heading_gain: float,
    max_yaw_rate: float,
) -> np.ndarray:
    """(N, 3) command at episode times t: vx = direction * speed after the standing start
    (0 before), vy = 0, yaw rate steering the heading back to the rails (yaw 0)."""
    vx = np.where(t >= start_delay_s, direction * speed, 0.0)
    yaw_rate = np.clip(-heading_gain * yaw, -max_yaw_rate, max_yaw_rate)
    return np.stack([vx, np.zeros_like(vx), yaw_rate], axis=1)
