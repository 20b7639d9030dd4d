"""Configuration of `quad-track`: follow a moving reference with a preview of it."""

from __future__ import annotations

from dataclasses import dataclass, field

from simreal.tasks.quad_track.references import EVAL_KINDS, KINDS
from simreal.tasks.quad_track.rewards import REWARDS
from simreal.tasks.quadrotor import QuadrotorConfig
from simreal.tasks.terms import default_weights


@dataclass
class QuadTrackConfig(QuadrotorConfig):
    episode_s: float = 10.0
    train_kinds: tuple[str, ...] = KINDS
    """Reference shapes sampled in training (figure8, circle, spline)."""
    eval_kind: str = "figure8"
    """The evaluation reference: one of KINDS at eval_radius and eval_period_s (the same
    curve in every episode), or "random": smooth random curves (the training "spline"
    shape, sizes and speeds from `radius` and `period_s`), a new one per episode, drawn
    from the evaluation seed's own stream (quadrotor/env.py: EVALUATION_STREAM), never
    from a training generator."""
    eval_radius: float = 1.0
    eval_period_s: float = 8.0
    radius: tuple[float, float] = (0.4, 1.0)
    period_s: tuple[float, float] = (6.0, 12.0)
    centre: tuple[float, float, float] = (0.0, 0.0, 1.0)
    preview_steps: int = 5
    preview_dt_s: float = 0.1
    """The policy sees the reference at t + k * preview_dt_s for k = 1..preview_steps."""
    max_error: float = 1.0
    """Tracking error (m) beyond which the episode ends as a failure."""
    start_noise: float = 0.1
    """Training starts this far (m, and m/s) off the reference, uniformly per axis."""
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))

    def validate(self) -> None:
        super().validate()
        unknown = set(self.train_kinds) - set(KINDS)
        if unknown or not self.train_kinds:
            raise ValueError(f"train_kinds must be among {list(KINDS)}, got {sorted(unknown)}")
        if self.eval_kind not in EVAL_KINDS:
            raise ValueError(f"eval_kind must be one of {list(EVAL_KINDS)}, got {self.eval_kind!r}")
        if not 0 < self.radius[0] <= self.radius[1] <= 1.2 or not 0 < self.eval_radius <= 1.2:
            raise ValueError("radius and eval_radius must lie in (0, 1.2] m")
        if not 0 < self.period_s[0] <= self.period_s[1] or self.eval_period_s <= 0:
            raise ValueError("period_s and eval_period_s must be positive")
        if self.preview_steps < 0 or self.preview_dt_s <= 0:
            raise ValueError("preview_steps must be >= 0 and preview_dt_s > 0")
