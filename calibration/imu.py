"""IMU biases from a static log: the rate a resting body measures is zero, and its
specific force is gravity seen through the (logged) orientation."""

from __future__ import annotations

import numpy as np

from simreal.calibration.dynamics import Estimate
from simreal.calibration.logdata import CalibrationError, HungLog

GRAVITY = 9.81
MAX_TURN_RAD = 0.01
"""A log whose orientation turns by more than this is not static: the mean rate would be
motion, not bias."""


def largest_turn(quat_wxyz: np.ndarray) -> float:
    """Largest rotation angle (rad) between any logged orientation and the first."""
    q = quat_wxyz / np.linalg.norm(quat_wxyz, axis=1, keepdims=True)
    return float(np.max(2 * np.arccos(np.clip(np.abs(q @ q[0]), 0.0, 1.0))))


def _rotate_to_body(quat_wxyz: np.ndarray, v_world: np.ndarray) -> np.ndarray:
    w, x, y, z = quat_wxyz
    R = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    return R.T @ v_world


def fit_imu(log: HungLog) -> dict[str, list[Estimate]]:
    """gyro_bias and accel_bias (each 3 Estimates; std of the mean), and the mounting
    tilt (rad) between measured and expected gravity, under key `tilt`. An accelerometer
    that does not see gravity (SimG1's hung IMU reads zero) leaves the accelerometer
    unidentifiable: only gyro_bias is returned."""
    if np.isnan(log.accel).any():
        raise CalibrationError(f"{log.path}: /imu carries no linear acceleration")
    turned = largest_turn(log.quat)
    if turned > MAX_TURN_RAD:
        raise CalibrationError(
            f"{log.path}: `imu` needs a static log (the IMU at rest), but its orientation "
            f"turns by {turned:.3f} rad (> {MAX_TURN_RAD}): gyro_bias and accel_bias "
            "are unidentifiable from it"
        )
    gyro_mean = log.gyro.mean(0)
    n = len(log.gyro)
    gyro_std = log.gyro.std(0) / np.sqrt(n)
    expected = np.array([_rotate_to_body(q, np.array([0.0, 0.0, GRAVITY])) for q in log.quat]).mean(
        0
    )
    accel_bias = log.accel.mean(0) - expected
    accel_std = log.accel.std(0) / np.sqrt(n)
    measured = log.accel.mean(0)
    if np.linalg.norm(measured) < 0.5 * GRAVITY:
        return {
            "gyro_bias": [
                Estimate(float(m), float(s)) for m, s in zip(gyro_mean, gyro_std, strict=True)
            ]
        }
    cos = measured @ expected / (np.linalg.norm(measured) * np.linalg.norm(expected))
    tilt = float(np.arccos(np.clip(cos, -1.0, 1.0)))
    return {
        "gyro_bias": [
            Estimate(float(m), float(s)) for m, s in zip(gyro_mean, gyro_std, strict=True)
        ],
        "accel_bias": [
            Estimate(float(m), float(s)) for m, s in zip(accel_bias, accel_std, strict=True)
        ],
        "tilt": [Estimate(tilt, 0.0)],
    }
