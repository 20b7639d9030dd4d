"""Tyre and drive forces of the dynamic bicycle model, as pure batched functions.

MuJoCo integrates the chassis (planar x, y, yaw joints) and the steering servo; these
functions give the forces the road exerts, applied to the chassis each physics step:

- lateral axle force Fy = -mu Fz tanh(C alpha / (mu Fz)): linear in the slip angle
  alpha for small slip (cornering stiffness C) and saturating at the friction limit
  mu Fz, a smooth stand-in for the brush tyre model;
- drive/brake force from a proportional speed controller toward the target speed,
  limited by the motor, the brakes and rear-axle friction;
- rolling resistance and aerodynamic drag.
"""

from __future__ import annotations

import numpy as np

from simreal.robots.car.params import GRAVITY, CarParams

AIR_DENSITY = 1.2


def body_velocity(yaw: np.ndarray, vel_world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Forward and leftward speed (N,) in the chassis frame from world (N, 2) velocity."""
    c, s = np.cos(yaw), np.sin(yaw)
    return c * vel_world[:, 0] + s * vel_world[:, 1], -s * vel_world[:, 0] + c * vel_world[:, 1]


def slip_angles(
    vx: np.ndarray, vy: np.ndarray, yaw_rate: np.ndarray, steer: np.ndarray, p: CarParams
) -> tuple[np.ndarray, np.ndarray]:
    """Front and rear slip angles (N,) in rad: wheel travel direction minus wheel heading."""
    u = np.maximum(vx, p.min_slip_speed)
    front = np.arctan2(vy + p.cg_to_front * yaw_rate, u) - steer
    rear = np.arctan2(vy - p.cg_to_rear * yaw_rate, u)
    return front, rear


def lateral_force(
    alpha: np.ndarray, stiffness: float, normal_load: float, mu: np.ndarray
) -> np.ndarray:
    """Axle side force (N,) in N; saturates at mu * normal_load."""
    limit = mu * normal_load
    return -limit * np.tanh(stiffness * alpha / limit)


def drive_force(
    vx: np.ndarray, target_speed: np.ndarray, mu: np.ndarray, p: CarParams
) -> np.ndarray:
    """Longitudinal force (N,) at the rear axle from the speed controller."""
    accel = np.clip(p.speed_gain * (target_speed - vx), -p.max_decel, p.max_accel)
    grip = mu * p.axle_loads[1]
    return np.clip(p.mass * accel, -grip, grip)


def resistance(vx: np.ndarray, p: CarParams) -> np.ndarray:
    """Rolling resistance plus drag (N,), opposing forward motion."""
    return -np.sign(vx) * (
        p.rolling_resistance * p.mass * GRAVITY + 0.5 * AIR_DENSITY * p.drag_area * vx**2
    )


def chassis_wrench(
    yaw: np.ndarray,
    vel_world: np.ndarray,
    yaw_rate: np.ndarray,
    steer: np.ndarray,
    target_speed: np.ndarray,
    mu: np.ndarray,
    p: CarParams,
) -> np.ndarray:
    """(N, 6) world-frame force and torque on the chassis centre of mass (xfrc_applied)."""
    vx, vy = body_velocity(yaw, vel_world)
    alpha_f, alpha_r = slip_angles(vx, vy, yaw_rate, steer, p)
    load_f, load_r = p.axle_loads
    fy_f = lateral_force(alpha_f, p.cornering_stiffness_front, load_f, mu)
    fy_r = lateral_force(alpha_r, p.cornering_stiffness_rear, load_r, mu)
    fx = drive_force(vx, target_speed, mu, p) + resistance(vx, p)
    fx_body = fx - fy_f * np.sin(steer)
    fy_body = fy_f * np.cos(steer) + fy_r
    mz = p.cg_to_front * fy_f * np.cos(steer) - p.cg_to_rear * fy_r
    c, s = np.cos(yaw), np.sin(yaw)
    wrench = np.zeros((yaw.shape[0], 6))
    wrench[:, 0] = c * fx_body - s * fy_body
    wrench[:, 1] = s * fx_body + c * fy_body
    wrench[:, 5] = mz
    return wrench
