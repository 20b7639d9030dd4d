"""Configuration of `quad-hover`; defaults reproduce gym-pybullet-drones' HoverAviary."""

from __future__ import annotations

from dataclasses import dataclass, field

from simreal.tasks.quad_hover.rewards import REWARDS
from simreal.tasks.quadrotor import QuadrotorConfig
from simreal.tasks.terms import default_weights


@dataclass
class QuadHoverConfig(QuadrotorConfig):
    target: tuple[float, float, float] = (0.0, 0.0, 1.0)
    start_height: float = 0.1
    """Evaluation start: at rest beneath the target, this far (m) above resting on the
    ground. HoverAviary starts there (collision half-height + 0.1 m, zero velocity)."""
    max_xy: float = 1.5
    max_z: float = 2.0
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))

    def validate(self) -> None:
        super().validate()
        if not 0.0 <= self.start_height < self.max_z:
            raise ValueError(f"start_height must be in [0, max_z), got {self.start_height}")
