"""Rotor physics of the Crazyflie as separate, switchable terms (pure functions).

All functions are batched: arrays lead with the simulation axis (num_envs, ...).
Forces are in the world frame unless the name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.robots.crazyflie.params import CrazyflieParams


@dataclass(frozen=True)
class PhysicsTerms:
    """Which aerodynamic effects beyond plain rotor thrust are simulated."""

    ground_effect: bool = False
    drag: bool = False
    downwash: bool = False

    @property
    def any(self) -> bool:
        return self.ground_effect or self.drag or self.downwash


def motor_thrust(rpm: np.ndarray, kf: np.ndarray | float) -> np.ndarray:
    """Thrust (N) of each rotor, (num_envs, 4), from its speed in RPM."""
    return kf * np.square(rpm)


def motor_yaw_torque(rpm: np.ndarray, km: np.ndarray | float) -> np.ndarray:
    """Reaction torque magnitude (N m) of each rotor, (num_envs, 4)."""
    return km * np.square(rpm)


def ground_effect_thrust(
    rpm: np.ndarray,
    rotor_height: np.ndarray,
    kf: np.ndarray | float,
    params: CrazyflieParams,
) -> np.ndarray:
    """Extra thrust (N) of each rotor near the ground, (num_envs, 4).

    Grows as (prop_radius / 4h)^2, with h clipped from below where the model stops
    being valid, as in the gym-pybullet-drones model.
    """
    h = np.maximum(rotor_height, params.ground_effect_clip_height)
    return (
        kf * np.square(rpm) * params.ground_effect_coeff * np.square(params.prop_radius / (4 * h))
    )


def drag_force(
    rpm: np.ndarray,
    lin_vel_world: np.ndarray,
    rot_world_from_body: np.ndarray,
    params: CrazyflieParams,
) -> np.ndarray:
    """Rotor drag (N, world frame), (num_envs, 3): opposes the body-frame velocity,
    scaled per body axis and by the summed rotor speed (rad/s)."""
    omega_sum = np.sum(rpm, axis=1, keepdims=True) * (2 * np.pi / 60)
    coeff = np.array([params.drag_coeff_xy, params.drag_coeff_xy, params.drag_coeff_z])
    vel_body = np.einsum("nji,nj->ni", rot_world_from_body, lin_vel_world)
    force_body = -coeff * omega_sum * vel_body
    return np.einsum("nij,nj->ni", rot_world_from_body, force_body)


def downwash_force(positions: np.ndarray, params: CrazyflieParams) -> np.ndarray:
    """Vertical force (N) on each drone from the drones above it, (num_envs, num_drones).

    positions: (num_envs, num_drones, 3). A drone feels the wake of each drone higher
    up within 10 m horizontally, decaying as a Gaussian of horizontal distance.
    """
    c1, c2, c3 = params.downwash_coeffs
    delta = positions[:, None, :, :] - positions[:, :, None, :]  # [n, self, other, 3]
    dz = delta[..., 2]
    dxy = np.linalg.norm(delta[..., :2], axis=-1)
    above = (dz > 0) & (dxy < 10)
    dz_safe = np.where(above, dz, 1.0)
    alpha = c1 * np.square(params.prop_radius / (4 * dz_safe))
    beta = c2 * dz_safe + c3
    beta = np.where(np.abs(beta) < 1e-9, 1e-9, beta)
    push = -alpha * np.exp(-0.5 * np.square(dxy / beta))
    return np.sum(np.where(above, push, 0.0), axis=2)
