"""Observation terms `g1-pull` adds to g1-force's, appended at the end of each layout so
that a g1-force policy extends to g1-pull (`simreal train --init-from`): the policy sees
g1-force's 93 values, then the walking command, then the gait clock; the critic sees
g1-force's critic observation, then the command, the load's privileged terms and the
gait clock (appended last so that g1-pull runs from before the clock still warm-start)."""

from __future__ import annotations

import numpy as np

from simreal.tasks.g1.observations import POLICY_OBSERVATION, PRIVILEGED_OBSERVATION

COMMAND_OBSERVATION: tuple[tuple[str, int], ...] = (
    ("command_velocity", 3),
    ("pull_direction", 1),
)
"""command_velocity: commanded (vx, vy) in m/s in the heading frame and yaw rate in rad/s;
pull_direction: +1 pulling forward (load behind), -1 pulling backward (load in front)."""

GAIT_OBSERVATION: tuple[tuple[str, int], ...] = (("gait_phase", 2),)
"""gait_phase: (sin, cos) of the gait clock's left-leg phase 2 pi phi while walking is
commanded, (0, 0) while standing (gait.py). The right leg runs half a period behind."""

LOAD_OBSERVATION: tuple[tuple[str, int], ...] = (
    ("rope_tension", 1),
    ("load_resistance_n", 1),
    ("load_damping", 1),
    ("load_stiffness", 1),
    ("load_velocity", 1),
)
"""Critic-only: rope tension (N), the cart's rolling resistance (N), damping (N s/m),
spring stiffness (N/m) and velocity along the rails (m/s)."""

PULL_POLICY_OBSERVATION = POLICY_OBSERVATION + COMMAND_OBSERVATION + GAIT_OBSERVATION
PULL_CRITIC_OBSERVATION = (
    POLICY_OBSERVATION
    + PRIVILEGED_OBSERVATION
    + COMMAND_OBSERVATION
    + LOAD_OBSERVATION
    + GAIT_OBSERVATION
)


def command_observation(command: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """(N, 4) float32 in COMMAND_OBSERVATION order from the command (N, 3) and the pull
    direction (N,)."""
    return np.concatenate([command, direction[:, None]], axis=1, dtype=np.float32)


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
