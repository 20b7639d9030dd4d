"""Configuration of `g1-force`: the external-force schedule and its curriculum and the
evaluation push, on top of the G1's own configuration (`tasks/g1/config.py`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simreal.tasks.g1.config import G1Config
from simreal.tasks.g1_force.rewards import REWARDS
from simreal.tasks.terms import default_weights

FORCE_BODIES = ("torso", "left_hand", "right_hand")
"""Where external forces act, in the order of every (num_sims, 3, ...) force array."""
PUSH_FRAMES = ("heading", "world")
"""Where a force's direction is fixed: the robot's heading frame (turning with the pelvis
yaw) or the world."""


@dataclass
class ForceConfig:
    """Random external forces on the torso and both hands (at each body's CoM; `frame`).

    Each body runs its own sequence of events: a pause of `gap_s`, then the force rises
    (a step with probability `step_prob`, otherwise a linear ramp over `ramp_s`), holds
    for `hold_s` (a sustained load when long) and is released; then the next event.
    """

    active_prob: tuple[float, float, float] = (0.7, 0.5, 0.5)
    """Probability that an event on (torso, left hand, right hand) carries a force at all."""
    step_prob: float = 0.3
    ramp_s: tuple[float, float] = (0.2, 2.0)
    hold_s: tuple[float, float] = (0.3, 6.0)
    gap_s: tuple[float, float] = (0.5, 4.0)
    magnitude_min_fraction: float = 0.0
    """An active event's magnitude is uniform in [this, 1] times its body's cap (a
    fraction): at 0 most events sit well under the cap; raising it trains near the cap."""
    max_elevation_rad: float = 0.5
    """Directions are uniform in azimuth, elevation uniform within +-this (mostly horizontal)."""
    hand_cap_fraction: float = 0.6
    """A hand's force is capped at this fraction of the torso cap."""
    cap_start_n: float = 50.0
    cap_max_n: float = 300.0
    cap_step_n: float = 25.0
    cap_min_n: float = 0.0
    """The floor the cap may fall back to (N)."""
    curriculum: str = "per_sim"
    """per_sim: every simulation keeps its own cap, up a step after an episode it stood
    through, down a step after a fall (PerSimulationCurriculum), so the simulations that
    cope rise while the rest train where they can stand; shared: one cap for all, moved by
    the fall rate of a window of episodes (the rates below)."""
    failure_share: float = 0.5
    """per_sim: the share of episodes ending in a fall at which the caps settle (a fall
    steps a cap down by cap_step_n * (1 - share) / share). At 0.5 (symmetric steps) the
    caps sit where the robot falls in every other 20 s episode."""
    raise_below_fall_rate: float = 0.15
    """The cap rises by cap_step_n when the training fall rate over the last window of
    episodes (one per simulation) is below this, and falls back when it exceeds
    lower_above_fall_rate."""
    lower_above_fall_rate: float = 0.5
    frame: str = "world"
    """world: each event's direction is fixed in the world, so a robot can turn under a
    long hold until the force meets it where it is strongest; heading: fixed in the
    robot's heading frame (the pelvis yaw) and turning with it, as `eval_push.frame`
    "heading" evaluates."""
    fail_on_hold_drift_m: float = 0.0
    """When > 0, a training episode in which the pelvis moved more than this horizontal
    distance from where it stood when a torso hold began (during that hold) counts as a
    failure for the curriculum, like a fall (m). At 0 (off) the caps rise after every
    episode survived, walked with or not."""
    hold_drift_ends_episode: bool = False
    """With fail_on_hold_drift_m > 0: the episode also ends when the drift passes it, so
    walking away from a load costs the episode's remaining reward, as a fall does."""
    sagittal_halfwidth_rad: float = math.pi / 2
    """Directions come from within this angle (azimuth, in `frame`) of straight ahead or
    straight behind, half each (rad); pi / 2 (the default): every azimuth. A
    simulation's cap is one number for every direction, so with sideways pushes the caps
    settle where those fail first, while the evaluation asks backward and forward only."""

    def validate(self) -> None:
        if self.fail_on_hold_drift_m < 0:
            raise ValueError(
                f"forces.fail_on_hold_drift_m must be >= 0 (0: off), got {self.fail_on_hold_drift_m}"
            )
        if self.hold_drift_ends_episode and self.fail_on_hold_drift_m == 0:
            raise ValueError("forces.hold_drift_ends_episode needs forces.fail_on_hold_drift_m > 0")
        if not 0.0 <= self.sagittal_halfwidth_rad <= math.pi / 2:
            raise ValueError(
                f"forces.sagittal_halfwidth_rad must lie in [0, pi / 2], got "
                f"{self.sagittal_halfwidth_rad}"
            )
        if not all(0.0 <= p <= 1.0 for p in (*self.active_prob, self.step_prob)):
            raise ValueError("forces: probabilities must lie in [0, 1]")
        if self.frame not in PUSH_FRAMES:
            raise ValueError(f"forces.frame must be one of {PUSH_FRAMES}, got {self.frame!r}")
        if not 0.0 <= self.magnitude_min_fraction <= 1.0:
            raise ValueError(
                f"forces.magnitude_min_fraction must lie in [0, 1], got "
                f"{self.magnitude_min_fraction}"
            )
        for name in ("ramp_s", "hold_s", "gap_s"):
            low, high = getattr(self, name)
            if not 0.0 < low <= high:
                raise ValueError(f"forces.{name}: need 0 < low <= high, got {low}, {high}")
        if not 0.0 <= self.cap_min_n <= self.cap_start_n <= self.cap_max_n or self.cap_step_n <= 0:
            raise ValueError(
                "forces: need 0 <= cap_min_n <= cap_start_n <= cap_max_n and cap_step_n > 0"
            )
        if self.curriculum not in ("shared", "per_sim"):
            raise ValueError(
                f"forces.curriculum must be 'shared' or 'per_sim', got {self.curriculum!r}"
            )
        if not 0.0 < self.failure_share < 1.0:
            raise ValueError(f"forces.failure_share must lie in (0, 1), got {self.failure_share}")
        if not 0.0 <= self.raise_below_fall_rate <= self.lower_above_fall_rate <= 1.0:
            raise ValueError(
                "forces: need 0 <= raise_below_fall_rate <= lower_above_fall_rate <= 1"
            )


@dataclass
class EvalPushConfig:
    """The evaluation protocols of `g1-force`; no other force, no randomization.

    mode "step" (`max_push_resisted_n`): one step force on the torso, magnitude
    max_n * (i + 1) / N in simulation i of N, along `direction` (backward, -x: the robot
    faces +x), from onset_s for duration_s.
    mode "sustained" (`max_sustained_push_backward_n`, `..._forward_n`): a horizontal
    torso force ramped up over ramp_s and held for hold_s, backward in even simulations
    and forward in odd ones, the k-th of n in a direction at max_n * (k + 1) / n: a load
    leaned on, as when holding a door or a cart, rather than a shove.

    `frame` "heading" (default): the push direction is fixed in the robot's heading frame
    (the pelvis yaw) and turns with it, so a backward push stays one from the front
    however the robot turns. "world": fixed in the world; a policy can then turn in place
    under a forward push and take it as a backward one."""

    mode: str = "step"
    max_n: float = 400.0
    onset_s: float = 2.0
    duration_s: float = 1.0
    direction: tuple[float, float, float] = (-1.0, 0.0, 0.0)
    ramp_s: float = 2.0
    hold_s: float = 4.0
    frame: str = "heading"
    max_hold_drift_m: float = 0.5
    """Sustained: a rung counts as held in place (`max_sustained_push_{backward,forward}
    _in_place_n`) only if the pelvis stays within this horizontal distance of where it
    stood when the hold began, over the whole hold; `hold_drift_m` is that distance
    (mean over episodes in the JSON). The issue-named keys count every rung survived."""

    def validate(self) -> None:
        if self.max_hold_drift_m <= 0:
            raise ValueError(f"eval_push.max_hold_drift_m must be > 0, got {self.max_hold_drift_m}")
        if self.mode not in ("step", "sustained"):
            raise ValueError(f"eval_push.mode must be 'step' or 'sustained', got {self.mode!r}")
        if self.frame not in PUSH_FRAMES:
            raise ValueError(f"eval_push.frame must be one of {PUSH_FRAMES}, got {self.frame!r}")
        if self.max_n <= 0 or self.onset_s < 0 or self.duration_s <= 0:
            raise ValueError("eval_push: need max_n > 0, onset_s >= 0, duration_s > 0")
        if self.ramp_s < 0 or self.hold_s <= 0:
            raise ValueError("eval_push: need ramp_s >= 0 and hold_s > 0")


@dataclass
class G1ForceConfig(G1Config):
    """`g1-force`: random external forces on torso and hands with a fall-rate curriculum;
    evaluation pushes the torso backward (EvalPushConfig)."""

    forces: ForceConfig = field(default_factory=ForceConfig)
    eval_push: EvalPushConfig = field(default_factory=EvalPushConfig)
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))
    hold_ground_sigma_m_s: float = 0.2
    """Width of `hold_ground`'s kernel on the horizontal pelvis speed: a slow stepping
    adjustment (0.1 m/s) keeps 78 % of it, a walk at 0.5 m/s 0.2 %."""
    hold_heading_sigma_rad_s: float = 0.3
    """Width of `hold_heading`'s kernel on the pelvis yaw rate."""
    cop_sigma_m: float = 0.1
    """Width of `cop_support`'s kernel on the quasi-static CoP's distance from mid-stance:
    the soles reach 0.056 m behind and 0.124 m ahead of the ankles, so a CoP at a sole's
    edge (0.09 m from its middle) keeps 44 % of it; an unleaned stance under a 100 N
    backward torso push (CoP ~0.27 m behind mid-stance) keeps 0.1 %."""

    actor_observes_force: bool = False
    """Diagnostic, not deployable: the actor also observes the true torso force (N,
    heading frame; `TORSO_FORCE_ORACLE`, appended to its observation, which the critic
    always has). A policy trained with it tells whether the actor's not knowing the load
    is what keeps it from holding one; the robot has no such sensor, so the deploy node
    refuses it (its observation differs from the task's)."""

    actor_estimates_force: bool = False
    """The deployable answer to `actor_observes_force`: a state estimator in the policy
    infers the torso force (`TORSO_FORCE_ORACLE`, appended to the critic's observation as
    the regression target) from the policy observation, and the actor reads the estimate.
    Trained concurrently with the policy (`ppo.estimation_coef`); the exported policy
    takes the task's observation alone, so it deploys as any g1-force policy."""

    actor_estimates_cop: bool = False
    """Likewise for `COP_OFFSET`: the quasi-static centre of pressure of the robot's
    posture under its loads, from the middle of its soles (what a steady push and the
    body's own randomized mass ask of the ankles together; more readable from the
    observation than the force alone, finding 9). With `actor_estimates_force` too the
    actor reads both estimates."""

    teacher: str = ""
    """A g1-force checkpoint (`RUN/checkpoints/model_*.pt`) trained with
    `actor_observes_force`: the task's expert (`expert_action`, for `train.algorithm=
    dagger` or `train.ppo.imitation_coef`) is that policy acting on the current
    observation plus the true torso force. Teacher-student distillation: a blind student
    learns, on the states it visits itself, what a policy told the load does. Loaded on
    the first expert action only, so evaluating or deploying the student needs no
    teacher."""

    def validate(self) -> None:
        super().validate()
        if self.actor_observes_force and self.actor_estimates_force:
            raise ValueError(
                "actor_observes_force and actor_estimates_force: choose one (the actor is "
                "told the true torso force, or estimates it)"
            )
        if self.teacher and self.actor_observes_force:
            raise ValueError(
                f"teacher={self.teacher!r} with actor_observes_force: the student the teacher "
                "trains is blind to the force (actor_observes_force=false)"
            )
        if self.hold_ground_sigma_m_s <= 0 or self.hold_heading_sigma_rad_s <= 0:
            raise ValueError(
                f"hold_ground_sigma_m_s and hold_heading_sigma_rad_s must be > 0, got "
                f"{self.hold_ground_sigma_m_s}, {self.hold_heading_sigma_rad_s}"
            )
        if self.cop_sigma_m <= 0:
            raise ValueError(f"cop_sigma_m must be > 0, got {self.cop_sigma_m}")
        self.forces.validate()
        self.eval_push.validate()
        push = self.eval_push
        if (
            push.mode == "sustained"
            and self.eval_episode_s < push.onset_s + push.ramp_s + push.hold_s
        ):
            raise ValueError(
                f"eval_episode_s {self.eval_episode_s} s ends before the sustained push does "
                f"(onset {push.onset_s} + ramp {push.ramp_s} + hold {push.hold_s} s)"
            )
