"""Observation terms of `lane-keep`: the fused observation of BLIP-FusePPO.

`policy_observation` is the single definition for training, evaluation and deployment.
Its parts: geometric lane state, the PID controller's correction, LiDAR ranges and
caption tokens (last, so the policy's embedding finds them at the end). Parts switched
off in the config are left out of the layout.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.lane_keep.config import LaneKeepConfig


def observation_layout(cfg: LaneKeepConfig, num_tokens: int) -> tuple[tuple[str, int], ...]:
    layout = [
        ("lane_offset", 1),
        ("heading_error", 1),
        ("base_lin_vel", 2),
        ("yaw_rate", 1),
        ("steer_angle", 1),
        ("lane_width", 1),
        ("curvature_preview", len(cfg.curvature_preview_m)),
        ("last_action", 2),
    ]
    if cfg.pid.feature:
        layout.append(("pid_correction", 1))
    if cfg.lidar.enabled:
        layout.append(("lidar_ranges", cfg.lidar.beams))
    if num_tokens:
        layout.append(("caption_tokens", num_tokens))
    return tuple(layout)


PRIVILEGED_OBSERVATION = (
    ("friction", 1),
    ("obstacle_clearance", 1),
    ("desired_speed", 1),
    ("caption_speed", 1),
)


def lane_state(
    lane_offset: np.ndarray,
    heading_error: np.ndarray,
    body_vel: np.ndarray,
    yaw_rate: np.ndarray,
    steer: np.ndarray,
    lane_width: np.ndarray,
    curvature_preview: np.ndarray,
    last_action: np.ndarray,
) -> list[np.ndarray]:
    """Geometric lane state as (N, k) columns: offset from the lane centre (m, left
    positive), heading error (rad), chassis-frame velocity (m/s), yaw rate (rad/s),
    front wheel angle (rad), lane width (m), curvature ahead (1/m, scaled by 10 so
    that tight curves read about 0.4) and the previous action."""
    return [
        lane_offset[:, None],
        heading_error[:, None],
        body_vel,
        yaw_rate[:, None],
        steer[:, None],
        lane_width[:, None],
        10.0 * curvature_preview,
        last_action,
    ]


def policy_observation(
    lane: list[np.ndarray],
    pid_correction: np.ndarray | None,
    lidar: np.ndarray | None,
    tokens: np.ndarray | None,
) -> np.ndarray:
    """(N, n_obs) float32 in `observation_layout` order; None parts are left out."""
    parts = list(lane)
    if pid_correction is not None:
        parts.append(pid_correction[:, None])
    if lidar is not None:
        parts.append(lidar)
    if tokens is not None and tokens.shape[1]:
        parts.append(tokens)
    return np.concatenate(parts, axis=1, dtype=np.float32)
