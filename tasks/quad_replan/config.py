"""Configuration of `quad-replan`: time allocation of minimum-snap plans through random
waypoints, judged at a named fidelity."""

from __future__ import annotations

from dataclasses import dataclass, field

from simreal.tasks.quad_replan.baseline import BaselineConfig
from simreal.tasks.quad_replan.flight import FlightConfig
from simreal.tasks.quad_replan.waypoints import WaypointBox
from simreal.tasks.rate_timing import RateTiming
from simreal.tasks.terms import WEIGHTS_UNIT, check_unit, default_weights

FIDELITIES = ("low", "medium", "high")
"""low: analytic feasibility (feasibility.py); medium: closed-loop flight in mjbatch with
the nominal airframe (flight.py); high: closed-loop flight in PyBullet with motor lag,
latency, drag and airframe randomization, standing in for real flights (not built yet)."""
BUILT_FIDELITIES = ("low", "medium")


def _rewards():
    from simreal.tasks.quad_replan.rewards import REWARDS

    return REWARDS


@dataclass
class QuadReplanConfig(RateTiming):
    physics_hz: int = 240
    control_hz: int = 1
    """One decision per episode: the whole plan. At 1 Hz a reward weight (per second)
    is its weight per plan."""
    episode_s: float = 1.0
    num_segments: int = 7
    """Segments per plan: the policy sees the next num_segments waypoints (5-10 in the
    issue) and outputs one time scale per segment."""
    nominal_speed: float = 1.5
    """Segment time at action 0: its length / nominal_speed (m/s)."""
    time_scale_range: float = 4.0
    """Action a in [-1, 1] scales a segment's nominal time by time_scale_range ** a."""
    fidelity: str = "low"
    """The fidelity that rewards training plans."""
    eval_fidelity: str = "medium"
    """The fidelity `simreal eval` judges plans at."""
    evaluation: bool = False
    box: WaypointBox = field(default_factory=WaypointBox)
    flight: FlightConfig = field(default_factory=FlightConfig)
    baseline: BaselineConfig = field(default_factory=BaselineConfig)
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(_rewards()))
    reward_weights_unit: str = WEIGHTS_UNIT

    @property
    def active_fidelity(self) -> str:
        return self.eval_fidelity if self.evaluation else self.fidelity

    def validate(self) -> None:
        self.check_rates()
        check_unit(self.reward_weights_unit)
        if self.max_episode_steps != 1:
            raise ValueError(
                f"quad-replan: one plan per episode, so episode_s * control_hz must be 1, got "
                f"{self.episode_s} * {self.control_hz}"
            )
        if not 1 <= self.num_segments <= 10:
            raise ValueError(f"num_segments must be in 1..10, got {self.num_segments}")
        if self.nominal_speed <= 0 or self.time_scale_range <= 1:
            raise ValueError(
                "nominal_speed must be > 0 and time_scale_range > 1, got "
                f"{self.nominal_speed}, {self.time_scale_range}"
            )
        for name in ("fidelity", "eval_fidelity"):
            value = getattr(self, name)
            if value not in FIDELITIES:
                raise ValueError(f"{name} must be one of {list(FIDELITIES)}, got {value!r}")
            if value not in BUILT_FIDELITIES:
                raise ValueError(
                    f"{name}={value!r}: the high fidelity (PyBullet with motor lag, latency, "
                    f"drag and airframe randomization) is not built yet; use one of "
                    f"{list(BUILT_FIDELITIES)}"
                )
        self.box.validate()
        self.flight.validate()
        self.baseline.validate()
