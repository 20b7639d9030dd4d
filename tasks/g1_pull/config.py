"""Configuration of `g1-pull`: the towed load and its resistance curriculum, the walking
commands, the evaluation protocol behind the pulling-force metrics, reward weights."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from simreal.tasks.g1.config import G1_TRAIN_DEFAULTS, G1GaitConfig
from simreal.tasks.g1_pull.rewards import REWARDS
from simreal.tasks.terms import default_weights

CURRICULA = ("shared", "per_sim")

TRAIN_DEFAULTS = replace(G1_TRAIN_DEFAULTS, eval_episodes=8)
"""g1-force's network and rollout, so its policies warm-start this task."""


@dataclass
class LoadConfig:
    """A cart on rails along the world x axis, towed by a rope handle: the G1 holds both
    ends of a rope looped through the cart's hitch (a MuJoCo spatial tendon with a length
    limit: it pulls, never pushes; the same tension in both strands). The cart resists
    with rolling friction (Coulomb: a constant force while it rolls, MuJoCo
    `frictionloss` on its rail joint), viscous damping and a spring anchored in the world
    at the cart's start. The rope tension is a MuJoCo sensor (`tendonlimitfrc`); the
    handle force is the sum of the two strands' pulls on the hands.
    """

    rope_length_m: float = 1.0
    """Each strand's length when taut (hand to hitch); the loop is twice this."""
    rope_slack_m: float = 0.05
    """Each strand starts this much short of taut."""
    cart_mass_kg: float = 10.0
    resistance_start_n: float = 20.0
    resistance_max_n: float = 300.0
    resistance_step_n: float = 10.0
    raise_below_fall_rate: float = 0.15
    lower_above_fall_rate: float = 0.5
    min_progress_fraction: float = 0.5
    curriculum: str = "shared"
    """Failure-rate curriculum on the resistance level (as g1-force's force cap): up by
    resistance_step_n while fewer than raise_below_fall_rate of a window of training
    episodes (one per simulation) fail, down when more than lower_above_fall_rate do. An
    episode fails when the robot falls or, walking, covers less than
    min_progress_fraction of its commanded distance: a robot that holds its ground
    without towing the cart does not raise the load.
    curriculum "per_sim": each simulation keeps its own level instead, up a step after
    each episode it succeeds in, down a step after each failure (PerSimulationCurriculum);
    the raise/lower rates then do not apply."""
    resistance_spread: tuple[float, float] = (0.2, 1.0)
    """Each training episode's rolling resistance: a uniform fraction of the level."""
    damping_n_s_m: tuple[float, float] = (0.0, 50.0)
    spring_n_m: tuple[float, float] = (0.0, 5.0)
    """Per training episode, uniform."""

    def validate(self) -> None:
        if self.rope_length_m <= 0 or not 0 <= self.rope_slack_m < self.rope_length_m:
            raise ValueError("load: need rope_length_m > 0 and 0 <= rope_slack_m < rope_length_m")
        if self.cart_mass_kg <= 0:
            raise ValueError(f"load.cart_mass_kg must be positive, got {self.cart_mass_kg}")
        if not 0 <= self.resistance_start_n <= self.resistance_max_n:
            raise ValueError("load: need 0 <= resistance_start_n <= resistance_max_n")
        if self.resistance_step_n <= 0:
            raise ValueError(
                f"load.resistance_step_n must be positive, got {self.resistance_step_n}"
            )
        if not 0.0 <= self.raise_below_fall_rate <= self.lower_above_fall_rate <= 1.0:
            raise ValueError("load: need 0 <= raise_below_fall_rate <= lower_above_fall_rate <= 1")
        if self.curriculum not in CURRICULA:
            raise ValueError(f"load.curriculum must be one of {CURRICULA}, got {self.curriculum!r}")
        if not 0.0 <= self.min_progress_fraction <= 1.0:
            raise ValueError(
                f"load.min_progress_fraction must lie in [0, 1], got {self.min_progress_fraction}"
            )
        for name in ("resistance_spread", "damping_n_s_m", "spring_n_m"):
            low, high = getattr(self, name)
            if not 0.0 <= low <= high:
                raise ValueError(f"load.{name}: need 0 <= low <= high, got {low}, {high}")


@dataclass
class CommandConfig:
    """Walking commands. Each episode pulls in one direction: backward (the cart in front,
    the robot walks away from it) or forward (the cart behind, the robot walks ahead
    dragging it). The commanded speed along the heading x axis starts after a standing
    start; the yaw-rate command steers the heading back to the rails (world x)."""

    forward_prob: float = 0.5
    speed_m_s: tuple[float, float] = (0.0, 0.5)
    """Training: commanded speed, uniform per episode (0: stand and hold the load)."""
    start_delay_s: float = 1.0
    """The command is zero for this long at the start of every episode."""
    heading_gain: float = 1.0
    max_yaw_rate: float = 0.5
    """yaw-rate command = clip(-heading_gain * yaw, +-max_yaw_rate), rad/s."""

    def velocity_ranges(self, direction: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(low, high) of the trained (vx, vy, yaw_rate) commands when pulling in
        `direction` (+1 forward, -1 backward): vx from 0 (the standing start) to the
        fastest speed, on the direction's side; vy 0; yaw rate up to +-max_yaw_rate."""
        if direction not in (1.0, -1.0):
            raise ValueError(f"pull direction {direction}: expected +1 (forward) or -1 (backward)")
        fastest = direction * self.speed_m_s[1]
        return (
            (min(0.0, fastest), 0.0, -self.max_yaw_rate),
            (max(0.0, fastest), 0.0, self.max_yaw_rate),
        )

    def validate(self) -> None:
        low, high = self.speed_m_s
        if not 0.0 <= low <= high:
            raise ValueError(f"command.speed_m_s: need 0 <= low <= high, got {low}, {high}")
        if not 0.0 <= self.forward_prob <= 1.0:
            raise ValueError(f"command.forward_prob must lie in [0, 1], got {self.forward_prob}")
        if self.start_delay_s < 0 or self.heading_gain < 0 or self.max_yaw_rate < 0:
            raise ValueError("command: start_delay_s, heading_gain, max_yaw_rate must be >= 0")


@dataclass
class EvalPullConfig:
    """The evaluation protocol behind `peak_pull_force_backward_n` and
    `peak_pull_force_forward_n`: even-numbered simulations pull backward, odd ones
    forward, at `speed_m_s`; the k-th simulation of a direction (of n) tows a cart with
    rolling resistance max_resistance_n * (k + 1) / n, no damping, no spring. A force
    counts as held when the handle force (the rope's total pull on the hands) stays at
    or above it for `hold_s` while the load moves: the cart advances along the pull
    direction by at least moving_speed_m_s * hold_s over that window, which starts after
    the walk command begins (metrics.py).
    Episodes that fall hold nothing."""

    max_resistance_n: float = 300.0
    speed_m_s: float = 0.3
    hold_s: float = 2.0
    moving_speed_m_s: float = 0.1

    def validate(self) -> None:
        if self.max_resistance_n < 0 or self.speed_m_s < 0:
            raise ValueError("eval_pull: max_resistance_n and speed_m_s must be >= 0")
        if self.hold_s <= 0 or self.moving_speed_m_s < 0:
            raise ValueError("eval_pull: need hold_s > 0 and moving_speed_m_s >= 0")


@dataclass
class G1PullConfig(G1GaitConfig):
    """`g1-pull`: the G1 tows a cart by a rope handle, walking backward or forward."""

    eval_episode_s: float = 12.0
    load: LoadConfig = field(default_factory=LoadConfig)
    command: CommandConfig = field(default_factory=CommandConfig)
    eval_pull: EvalPullConfig = field(default_factory=EvalPullConfig)
    heading_sigma_rad: float = 0.3
    tow_sigma_share: float = 0.15
    """tow_steady's width: the handle force's deviation from the steady towing force, as a
    share of that force."""
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))

    def validate(self) -> None:
        super().validate()
        for name in ("heading_sigma_rad", "tow_sigma_share"):
            if getattr(self, name) <= 0:
                raise ValueError(f"task.{name} must be positive, got {getattr(self, name)}")
        if self.eval_pull.hold_s > self.eval_episode_s - self.command.start_delay_s:
            raise ValueError(
                f"eval_pull.hold_s={self.eval_pull.hold_s} does not fit in an evaluation "
                f"episode of {self.eval_episode_s} s after the {self.command.start_delay_s} s "
                "standing start"
            )
        self.load.validate()
        self.command.validate()
        self.eval_pull.validate()
