"""Configuration shared by the Crazyflie tasks."""

from __future__ import annotations

from dataclasses import dataclass, field

from simreal.tasks.rate_timing import RateTiming
from simreal.tasks.terms import WEIGHTS_UNIT, check_unit


@dataclass
class QuadRandomization:
    """Per-simulation ranges sampled at every training reset (uniform, inclusive).

    Scales multiply the nominal value. Off (all nominal) by default.
    """

    mass_scale: tuple[float, float] = (1.0, 1.0)
    inertia_scale: tuple[float, float] = (1.0, 1.0)
    kf_scale: tuple[float, float] = (1.0, 1.0)
    km_scale: tuple[float, float] = (1.0, 1.0)
    motor_lag_s: tuple[float, float] = (0.0, 0.0)
    """First-order motor time constant (s)."""
    latency_steps: tuple[int, int] = (0, 0)
    """Actions reach the motors this many control steps late."""
    latency_physics_steps: tuple[int, int] = (0, 0)
    """And this many physics steps (1 / physics_hz) into the control period: a latency
    shorter than a control period (radio link, onboard estimator), which a policy at
    30 Hz must ride out without knowing it. The motors fly the previous command until
    then. Single-drone tasks only (quad-hover, quad-track)."""
    obs_noise_std: float = 0.0
    """Gaussian noise added to every policy observation (training, and evaluation with
    `eval_randomize`)."""
    wind_gust_std_n: float = 0.0
    """Wind on the airframe: a force (N) per world axis with this standard deviation,
    wandering as an Ornstein-Uhlenbeck process (correlation time `wind_gust_tau_s`) and
    redrawn at every reset. A Crazyflie weighs 0.26 N; 2 m/s of wind pushes it with about
    0.02 N. Single-drone tasks only (quad-hover, quad-track)."""
    wind_gust_tau_s: float = 1.0

    @property
    def enabled(self) -> bool:
        nominal = QuadRandomization()
        return self != nominal

    def validate(self) -> None:
        for name in ("mass_scale", "inertia_scale", "kf_scale", "km_scale", "motor_lag_s"):
            low, high = getattr(self, name)
            if not 0.0 <= low <= high:
                raise ValueError(f"randomization.{name}: need 0 <= low <= high, got {low}, {high}")
        for name in ("mass_scale", "inertia_scale", "kf_scale", "km_scale"):
            if getattr(self, name)[0] <= 0:
                raise ValueError(f"randomization.{name} must be positive")
        low, high = self.latency_steps
        if not 0 <= low <= high <= 10:
            raise ValueError(
                f"randomization.latency_steps: need 0 <= low <= high <= 10, got {low}, {high}"
            )
        if self.obs_noise_std < 0:
            raise ValueError(f"randomization.obs_noise_std must be >= 0, got {self.obs_noise_std}")
        low, high = self.latency_physics_steps
        if not 0 <= low <= high:
            raise ValueError(
                f"randomization.latency_physics_steps: need 0 <= low <= high, got {low}, {high}"
            )
        if self.wind_gust_std_n < 0 or self.wind_gust_tau_s <= 0:
            raise ValueError(
                "randomization.wind_gust_std_n must be >= 0 and wind_gust_tau_s > 0, got "
                f"{self.wind_gust_std_n}, {self.wind_gust_tau_s}"
            )


@dataclass
class QuadPhysics:
    """Aerodynamic terms on top of rotor thrust; HoverAviary uses none of them."""

    ground_effect: bool = False
    drag: bool = False
    downwash: bool = False


@dataclass
class QuadrotorConfig(RateTiming):
    physics_hz: int = 240
    control_hz: int = 30
    episode_s: float = 8.0
    action_rpm_scale: float = 0.5
    """Per-motor action a in [-1, 1] commands rpm = hover_rpm * (1 + action_rpm_scale * a);
    0.5 spans half the hover speed up to the motor's maximum (thrust-to-weight 2.25)."""
    random_init_fraction: float = 0.5
    """Share of training episodes that start from a random pose in the air instead of
    at the evaluation start; evaluation always uses the evaluation start."""
    evaluation: bool = False
    """Start every episode at the evaluation start and sample no randomization (unless
    `eval_randomize`)."""
    eval_randomize: bool = False
    """Evaluation samples `randomization` as training does (airframe, motor lag, latency,
    observation noise, wind gusts), from the evaluation's own seed; the eval JSON states
    the ranges. Needs a randomization that is not nominal."""
    max_tilt: float = 0.4
    """Roll or pitch (rad) beyond which the episode ends as a failure."""
    physics: QuadPhysics = field(default_factory=QuadPhysics)
    randomization: QuadRandomization = field(default_factory=QuadRandomization)
    reward_weights_unit: str = WEIGHTS_UNIT
    """The unit of `reward_weights`, saved with the config: always per second
    (`tasks/terms.py`)."""

    def validate(self) -> None:
        self.check_rates()
        if self.episode_s <= 0:
            raise ValueError(f"episode_s must be positive, got {self.episode_s}")
        if not 0.0 < self.action_rpm_scale <= 1.0:
            raise ValueError(f"action_rpm_scale must be in (0, 1], got {self.action_rpm_scale}")
        if not 0.0 <= self.random_init_fraction <= 1.0:
            raise ValueError(
                f"random_init_fraction must be in [0, 1], got {self.random_init_fraction}"
            )
        if self.physics.downwash:
            raise ValueError("physics.downwash needs several drones per simulation (quad-swarm)")
        check_unit(self.reward_weights_unit)
        self.randomization.validate()
        if self.randomization.latency_physics_steps[1] >= self.decimation:
            raise ValueError(
                "randomization.latency_physics_steps must stay below one control period "
                f"({self.decimation} physics steps); use latency_steps for whole periods"
            )
        if self.eval_randomize and not self.randomization.enabled:
            raise ValueError(
                "eval_randomize needs task.randomization ranges (this config has only nominal "
                "values), e.g. --set 'task.randomization.motor_lag_s=[0.01, 0.03]'"
            )
