"""Velocity-setpoint flight controller of the Crazyflie: velocity -> thrust vector ->
attitude (geometric control on SO(3)) -> per-motor thrust, batched over drones.

Why: a swarm policy that must also learn to stabilise four rotors spends most of its
budget on attitude control; real swarm stacks (Crazyswarm, gym-pybullet-drones'
`ActionType.VEL`) fly a velocity or position setpoint through the onboard cascade. The
swarm policy therefore commands a world-frame velocity and this controller, run at the
physics rate in training and at the robot's rate on board, turns it into motor thrusts.

Symbols: m mass, g gravity, v velocity (world), v* commanded velocity, R body-to-world
rotation, omega body angular velocity, J inertia. Outer loop: a* = k_v (v* - v), clipped
to `max_accel`, F = m (a* + g e_z), its tilt from vertical clipped to `max_tilt`.
Inner loop (Lee, Leok & McClamroch 2010): b3* = F / |F|, yaw held at zero,
R* = [b1*, b2*, b3*], e_R = vee(R*^T R - R^T R*) / 2, tau = -k_R e_R - k_omega omega
(per axis, gains k = J w_n^2 and 2 zeta J w_n), collective thrust T = F . (R e_z).
The mixer inverts [T, tau_x, tau_y, tau_z] = A f for the rotor thrusts f of the X
layout and clips them to [0, max_thrust].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.robots.crazyflie import CrazyflieParams
from simreal.robots.crazyflie.params import GRAVITY, MOTOR_DIRECTIONS
from simreal.tasks.rotations import quat_to_matrix


@dataclass(frozen=True)
class VelocityControllerGains:
    velocity_gain: float = 4.0
    """k_v (1/s): the commanded acceleration per m/s of velocity error."""
    max_accel: float = 6.0
    """Largest commanded acceleration (m/s^2) besides gravity."""
    max_tilt: float = 0.6
    """Largest tilt (rad) of the commanded thrust vector from vertical."""
    attitude_bandwidth: tuple[float, float, float] = (25.0, 25.0, 8.0)
    """Natural frequency w_n (rad/s) of the roll, pitch and yaw loops."""
    attitude_damping: float = 0.9

    def as_metadata(self) -> dict:
        return {
            "velocity_gain": self.velocity_gain,
            "max_accel": self.max_accel,
            "max_tilt": self.max_tilt,
            "attitude_bandwidth": list(self.attitude_bandwidth),
            "attitude_damping": self.attitude_damping,
        }


def mixer_matrix(params: CrazyflieParams) -> np.ndarray:
    """A (4x4) with [T, tau_x, tau_y, tau_z] = A @ rotor thrusts, in MOTOR_NAMES order."""
    offsets = np.array(params.rotor_offsets)
    yaw_ratio = params.km / params.kf
    return np.stack(
        [
            np.ones(4),
            offsets[:, 1],
            -offsets[:, 0],
            yaw_ratio * np.array(MOTOR_DIRECTIONS),
        ]
    )


def _vee(skew: np.ndarray) -> np.ndarray:
    return np.stack([skew[:, 2, 1], skew[:, 0, 2], skew[:, 1, 0]], axis=-1)


def commanded_force(
    params: CrazyflieParams,
    gains: VelocityControllerGains,
    lin_vel: np.ndarray,
    velocity_command: np.ndarray,
) -> np.ndarray:
    """(M, 3) world thrust vector F (N) of the outer velocity loop."""
    accel = gains.velocity_gain * (velocity_command - lin_vel)
    norm = np.linalg.norm(accel, axis=-1, keepdims=True)
    accel = accel * np.minimum(1.0, gains.max_accel / np.maximum(norm, 1e-9))
    vertical = np.maximum(accel[:, 2] + GRAVITY, 0.2 * GRAVITY)
    horizontal = accel[:, :2]
    limit = vertical * np.tan(gains.max_tilt)
    h_norm = np.linalg.norm(horizontal, axis=-1)
    horizontal = horizontal * np.minimum(1.0, limit / np.maximum(h_norm, 1e-9))[:, None]
    return params.mass * np.concatenate([horizontal, vertical[:, None]], axis=-1)


def rotor_thrusts(
    params: CrazyflieParams,
    gains: VelocityControllerGains,
    quat: np.ndarray,
    lin_vel: np.ndarray,
    ang_vel_body: np.ndarray,
    velocity_command: np.ndarray,
    mixer_inverse: np.ndarray | None = None,
) -> np.ndarray:
    """(M, 4) rotor thrusts (N) that fly M drones at their (M, 3) commanded velocities.

    `quat` (w, x, y, z) and `lin_vel` are world-frame, `ang_vel_body` body-frame (as a
    MuJoCo free joint's qvel holds them).
    """
    force = commanded_force(params, gains, lin_vel, velocity_command)
    rot = quat_to_matrix(quat)
    b3 = force / np.linalg.norm(force, axis=-1, keepdims=True)
    heading = np.zeros_like(b3)
    heading[:, 0] = 1.0
    b2 = np.cross(b3, heading)
    b2 /= np.linalg.norm(b2, axis=-1, keepdims=True)
    b1 = np.cross(b2, b3)
    rot_des = np.stack([b1, b2, b3], axis=-1)
    err = 0.5 * _vee(
        np.einsum("nji,njk->nik", rot_des, rot) - np.einsum("nji,njk->nik", rot, rot_des)
    )
    inertia = np.array(params.inertia)
    w_n = np.array(gains.attitude_bandwidth)
    torque = -inertia * w_n**2 * err - 2.0 * gains.attitude_damping * inertia * w_n * ang_vel_body
    collective = np.einsum("ni,ni->n", force, rot[:, :, 2])
    wrench = np.concatenate([collective[:, None], torque], axis=-1)
    if mixer_inverse is None:
        mixer_inverse = np.linalg.inv(mixer_matrix(params))
    return np.clip(wrench @ mixer_inverse.T, 0.0, params.max_thrust)
