"""Success and error metrics of `dex-track`, per reference (episode).

A reference succeeds when the object's position error stays <= 5 cm and its orientation
error <= 30 deg at every frame, and their means over the frames are <= 2 cm and 10 deg.
"""

from __future__ import annotations

import numpy as np

MAX_POS_ERROR_M = 0.05
MAX_ROT_ERROR_DEG = 30.0
MEAN_POS_ERROR_M = 0.02
MEAN_ROT_ERROR_DEG = 10.0


def success(
    pos_max_m: np.ndarray, rot_max_deg: np.ndarray, pos_mean_m: np.ndarray, rot_mean_deg: np.ndarray
) -> np.ndarray:
    """(N,) bool from per-episode maxima and means of the object's errors."""
    return (
        (pos_max_m <= MAX_POS_ERROR_M)
        & (rot_max_deg <= MAX_ROT_ERROR_DEG)
        & (pos_mean_m <= MEAN_POS_ERROR_M)
        & (rot_mean_deg <= MEAN_ROT_ERROR_DEG)
    )


def tracking_metrics(
    pos_err_m: np.ndarray, rot_err_deg: np.ndarray, finger_err_rad: np.ndarray
) -> dict[str, np.ndarray]:
    """Per-episode metrics from per-frame errors (N, T): the object's position and
    orientation errors and the mean absolute finger joint error."""
    return {
        "success_rate": success(
            pos_err_m.max(axis=1),
            rot_err_deg.max(axis=1),
            pos_err_m.mean(axis=1),
            rot_err_deg.mean(axis=1),
        ).astype(float),
        "object_pos_err_mean_m": pos_err_m.mean(axis=1),
        "object_rot_err_mean_deg": rot_err_deg.mean(axis=1),
        "finger_joint_err_mean_rad": finger_err_rad.mean(axis=1),
        "object_pos_err_max_m": pos_err_m.max(axis=1),
        "object_rot_err_max_deg": rot_err_deg.max(axis=1),
    }
