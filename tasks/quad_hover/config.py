"""Configuration of `quad-hover`; defaults reproduce gym-pybullet-drones' HoverAviary."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class QuadRandomization:
    """Per-simulation ranges sampled at every reset during training (uniform, inclusive).

    Scales multiply the nominal value. kf and km scale together (same propeller).
    """

    mass_scale: tuple[float, float] = (1.0, 1.0)
    kf_scale: tuple[float, float] = (1.0, 1.0)
    motor_lag_s: tuple[float, float] = (0.0, 0.0)

    def validate(self) -> None:
        for name in ("mass_scale", "kf_scale", "motor_lag_s"):
            low, high = getattr(self, name)
            if not 0.0 <= low <= high:
                raise ValueError(f"randomization.{name}: need 0 <= low <= high, got {low}, {high}")
        if self.mass_scale[0] <= 0 or self.kf_scale[0] <= 0:
            raise ValueError("randomization.mass_scale and kf_scale must be positive")


@dataclass
class QuadPhysics:
    """Aerodynamic terms on top of rotor thrust; HoverAviary uses none of them."""

    ground_effect: bool = False
    drag: bool = False
    downwash: bool = False


@dataclass
class QuadHoverConfig:
    physics_hz: int = 240
    control_hz: int = 30
    episode_s: float = 8.0
    target: tuple[float, float, float] = (0.0, 0.0, 1.0)
    action_rpm_scale: float = 0.5
    """Per-motor action a in [-1, 1] commands rpm = hover_rpm * (1 + action_rpm_scale * a);
    0.5 spans half the hover speed up to the motor's maximum (thrust-to-weight 2.25)."""
    start_height: float = 0.1
    """Evaluation start: at rest beneath the target, this far (m) above resting on the
    ground. HoverAviary starts there (collision half-height + 0.1 m, zero velocity)."""
    random_init_fraction: float = 0.5
    """Share of training episodes that start from a random pose in the air instead of
    at the evaluation start; evaluation always uses the evaluation start."""
    evaluation: bool = False
    """Start every episode on the ground and sample no randomization."""
    max_xy: float = 1.5
    max_z: float = 2.0
    max_tilt: float = 0.4
    physics: QuadPhysics = field(default_factory=QuadPhysics)
    randomization: QuadRandomization = field(default_factory=QuadRandomization)
    reward_weights: dict[str, float] = field(default_factory=lambda: {"hover": 1.0})

    @property
    def decimation(self) -> int:
        return self.physics_hz // self.control_hz

    @property
    def max_episode_steps(self) -> int:
        return round(self.episode_s * self.control_hz)

    def validate(self) -> None:
        if self.physics_hz <= 0 or self.control_hz <= 0:
            raise ValueError("physics_hz and control_hz must be positive")
        if self.physics_hz % self.control_hz:
            raise ValueError(
                f"physics_hz ({self.physics_hz}) must be a multiple of control_hz ({self.control_hz})"
            )
        if not 0.0 <= self.start_height < self.max_z:
            raise ValueError(f"start_height must be in [0, max_z), got {self.start_height}")
        if self.episode_s <= 0:
            raise ValueError(f"episode_s must be positive, got {self.episode_s}")
        if not 0.0 < self.action_rpm_scale <= 1.0:
            raise ValueError(f"action_rpm_scale must be in (0, 1], got {self.action_rpm_scale}")
        if not 0.0 <= self.random_init_fraction <= 1.0:
            raise ValueError(
                f"random_init_fraction must be in [0, 1], got {self.random_init_fraction}"
            )
        unknown = set(self.reward_weights) - {"hover", "ang_vel", "action_rate"}
        if unknown:
            raise ValueError(f"reward_weights: unknown terms {sorted(unknown)}")
        self.randomization.validate()
