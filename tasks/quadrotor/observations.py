"""Observation terms every Crazyflie task shares: the drone's own state and its last
action, read from a task's reading (any object with `state: QuadState` and
`last_action`). Noise: the randomization's `obs_noise_std`, on every term."""

from __future__ import annotations

import numpy as np

from simreal.tasks.quadrotor.state import base_rot
from simreal.tasks.terms import ObservationTerm, layout

NOISE = "obs_noise_std"


def rotation(r) -> np.ndarray:
    return base_rot(r.state)


def lin_vel(r) -> np.ndarray:
    """World-frame velocity (m/s)."""
    return r.state.base_lin_vel


def ang_vel(r) -> np.ndarray:
    """Body rates (rad/s)."""
    return r.state.base_ang_vel


def last_action(r) -> np.ndarray:
    return r.last_action


OWN_STATE_TERMS: tuple[ObservationTerm, ...] = (
    ObservationTerm("base_rot", 9, rotation, NOISE),
    ObservationTerm("base_lin_vel", 3, lin_vel, NOISE),
    ObservationTerm("base_ang_vel", 3, ang_vel, NOISE),
    ObservationTerm("last_action", 4, last_action, NOISE),
)
"""The drone's attitude (rotation matrix, row-major: no angle wrap-around to learn),
velocity, body rates and last action, after a task's own terms."""


# -- critic-only terms, read from the simulation (a QuadrotorEnv) -----------------------


def _scale(name: str):
    def term(env) -> np.ndarray:
        return env.scales[name][:, None]

    return term


PRIVILEGED_TERMS: tuple[ObservationTerm, ...] = (
    *(
        ObservationTerm(name, 1, _scale(name))
        for name in ("mass_scale", "inertia_scale", "kf_scale", "km_scale")
    ),
    ObservationTerm("motor_lag_s", 1, lambda env: env.motor_lag_s[:, None]),
    ObservationTerm("latency_steps", 1, lambda env: env.latency_control_steps()[:, None]),
    ObservationTerm("wind_force_n", 3, lambda env: env.wind_force),
)
"""Critic-only terms, after the policy observation: the randomized parameters and the
wind now."""
PRIVILEGED_OBSERVATION: tuple[tuple[str, int], ...] = layout(PRIVILEGED_TERMS)
