"""Observation terms of `lane-keep`: the fused observation of BLIP-FusePPO.

`policy_terms` is the single definition for training, evaluation and deployment. Its
parts: geometric lane state, the PID controller's correction, LiDAR ranges and caption
tokens (last, so the policy's embedding finds them at the end). Parts switched off in
the config are left out of the terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.lane_keep.config import LaneKeepConfig
from simreal.tasks.terms import ObservationTerm, layout


@dataclass
class LaneReading:
    """What the observation is computed from, (N,) or (N, k) per car: offset from the
    lane centre (m, left positive), heading error (rad), chassis-frame velocity (m/s),
    yaw rate (rad/s), front wheel angle (rad), lane width (m), curvature ahead (1/m), the
    previous action, and the parts a config may switch off (None then)."""

    lane_offset: np.ndarray
    heading_error: np.ndarray
    body_vel: np.ndarray
    yaw_rate: np.ndarray
    steer: np.ndarray
    lane_width: np.ndarray
    curvature_preview: np.ndarray
    last_action: np.ndarray
    pid_correction: np.ndarray | None = None
    lidar: np.ndarray | None = None
    tokens: np.ndarray | None = None


def _column(name: str):
    def term(r: LaneReading) -> np.ndarray:
        return getattr(r, name)[:, None]

    term.__name__ = name
    return term


def curvature_preview(r: LaneReading) -> np.ndarray:
    """Scaled by 10, so that tight curves read about 0.4."""
    return 10.0 * r.curvature_preview


def policy_terms(cfg: LaneKeepConfig, num_tokens: int) -> tuple[ObservationTerm, ...]:
    geometry = [
        ObservationTerm("lane_offset", 1, _column("lane_offset")),
        ObservationTerm("heading_error", 1, _column("heading_error")),
    ]
    shape = [
        ObservationTerm("lane_width", 1, _column("lane_width")),
        ObservationTerm("curvature_preview", len(cfg.curvature_preview_m), curvature_preview),
    ]
    terms = [
        *(geometry if cfg.geometry else []),
        ObservationTerm("base_lin_vel", 2, lambda r: r.body_vel),
        ObservationTerm("yaw_rate", 1, _column("yaw_rate")),
        ObservationTerm("steer_angle", 1, _column("steer")),
        *(shape if cfg.geometry else []),
        ObservationTerm("last_action", 2, lambda r: r.last_action),
    ]
    if cfg.pid.feature:
        terms.append(ObservationTerm("pid_correction", 1, _column("pid_correction")))
    if cfg.lidar.enabled:
        terms.append(ObservationTerm("lidar_ranges", cfg.lidar.beams, lambda r: r.lidar))
    if num_tokens:
        terms.append(ObservationTerm("caption_tokens", num_tokens, lambda r: r.tokens))
    return tuple(terms)


def observation_layout(cfg: LaneKeepConfig, num_tokens: int) -> tuple[tuple[str, int], ...]:
    return layout(policy_terms(cfg, num_tokens))


PRIVILEGED_TERMS: tuple[ObservationTerm, ...] = (
    ObservationTerm("friction", 1, lambda env: env.bank.friction[env.road][:, None]),
    ObservationTerm("obstacle_clearance", 1, lambda env: env.gap[:, None]),
    ObservationTerm("desired_speed", 1, lambda env: env.desired_speed[:, None]),
    ObservationTerm("caption_speed", 1, lambda env: env.caption_speed[:, None]),
)
"""Critic-only, read from the simulation (a LaneKeepEnv): the road's friction, the gap to
the nearest obstacle (m), the desired speed and the speed the captions imply (m/s)."""
PRIVILEGED_OBSERVATION = layout(PRIVILEGED_TERMS)
