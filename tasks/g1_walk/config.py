"""Configuration of `g1-walk`: the velocity commands, the ground, the evaluation protocol
behind the tracking, fall and push metrics, and the reward weights."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from simreal.tasks.g1.config import G1_TRAIN_DEFAULTS, G1GaitConfig
from simreal.tasks.g1_walk.rewards import REWARDS
from simreal.tasks.g1_walk.terrain import TerrainConfig
from simreal.tasks.terms import default_weights

TRAIN_DEFAULTS = replace(
    G1_TRAIN_DEFAULTS,
    eval_episodes=8,
    schedule="fixed",
    learning_rate=2e-4,
    critic_learning_rate=1e-3,
)
"""The G1 tasks' network and rollout (policies carry over between them), and g1-pull's
recipe's learning rates (experiments/g1_pull_chain.py): a fixed 2e-4 for the actors, 1e-3
for the critic, where the adaptive-KL schedule sinks to its floor with 29 actions."""


@dataclass
class WalkCommandConfig:
    """Velocity commands (vx, vy in m/s in the heading frame, yaw rate in rad/s), drawn
    uniformly from the ranges and held for a random time; a share of them is zero, so the
    policy learns to stand still (the gait clock stops: no stepping in place)."""

    vx_m_s: tuple[float, float] = (-0.6, 1.0)
    vy_m_s: tuple[float, float] = (-0.4, 0.4)
    yaw_rate_rad_s: tuple[float, float] = (-1.0, 1.0)
    standing_prob: float = 0.15
    single_axis_prob: float = 0.0
    """The share of commands that keep only one of vx, vy and yaw rate (which one uniform),
    the others zero: walk straight, step sideways, turn in place, the commands a joystick
    or a scripted cmd_vel sends most and a draw from the whole box almost never gives (the
    README's walkthrough turns in place). 0 draws as before (the same random numbers)."""
    hold_s: tuple[float, float] = (4.0, 10.0)
    """Each command lasts this long (uniform), then a new one is drawn."""

    def velocity_ranges(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(low, high) of the trained (vx, vy, yaw_rate) commands: what a deployment clips
        its commands to."""
        ranges = (self.vx_m_s, self.vy_m_s, self.yaw_rate_rad_s)
        return tuple(r[0] for r in ranges), tuple(r[1] for r in ranges)

    def validate(self) -> None:
        for name in ("vx_m_s", "vy_m_s", "yaw_rate_rad_s"):
            low, high = getattr(self, name)
            if not low <= 0.0 <= high:
                raise ValueError(f"command.{name}: need low <= 0 <= high, got {low}, {high}")
        for name in ("standing_prob", "single_axis_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"command.{name} must lie in [0, 1], got {getattr(self, name)}")
        low, high = self.hold_s
        if not 0.0 < low <= high:
            raise ValueError(f"command.hold_s: need 0 < low <= high, got {low}, {high}")


@dataclass
class EvalWalkConfig:
    """The evaluation protocol. Commands are drawn as in training from the evaluation's
    own seed. Tracking errors leave out the first `settle_s` after each new command (the
    robot cannot change its speed at once) and the steps after a fall.

    `push_test`: every episode is also pushed once, at `push_at_s`, its base velocity
    jumping horizontally (a random direction) by a magnitude from a ladder over the
    simulations, 0 .. max_push_m_s; `max_push_recovered_m_s` is the largest push of an
    episode that did not fall. Off by default: the fall rate is that of walking under
    training's random pushes, not of the ladder's deliberately large ones."""

    settle_s: float = 1.0
    push_test: bool = False
    push_at_s: float = 10.0
    max_push_m_s: float = 2.0

    def validate(self) -> None:
        if self.settle_s < 0 or self.push_at_s < 0 or self.max_push_m_s < 0:
            raise ValueError("eval_walk: settle_s, push_at_s and max_push_m_s must be >= 0")


@dataclass
class G1WalkConfig(G1GaitConfig):
    """`g1-walk`: the G1 tracks a commanded planar velocity on rough ground."""

    eval_episode_s: float = 20.0
    eval_friction: float = 0.7
    terrain: TerrainConfig = field(default_factory=TerrainConfig)
    command: WalkCommandConfig = field(default_factory=WalkCommandConfig)
    eval_walk: EvalWalkConfig = field(default_factory=EvalWalkConfig)
    gait_reference_rad: float = 0.3
    """The stepping reference (a residual policy on stepping in place) helps PPO find a
    gait, as it did for g1-pull."""
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))

    def validate(self) -> None:
        super().validate()
        if self.eval_walk.push_test and self.eval_walk.push_at_s >= self.eval_episode_s:
            raise ValueError(
                f"eval_walk.push_at_s={self.eval_walk.push_at_s} is not inside an evaluation "
                f"episode of {self.eval_episode_s} s"
            )
        self.terrain.validate()
        self.command.validate()
        self.eval_walk.validate()
