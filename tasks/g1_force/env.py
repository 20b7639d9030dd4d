"""`g1-force` environment: the G1 stands (and steps when it must) under random external
forces on its torso and hands, growing with a curriculum; evaluation applies one backward
torso push per simulation instead (`forces.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np

from simreal.robots.g1.mjcf import COM_SENSOR, LOAD_BODIES, load_point_sensor
from simreal.tasks.curriculum import checkpoint_state, restore_state
from simreal.tasks.g1.env import G1Env
from simreal.tasks.g1.events import CALIBRATION, EXTERNAL_FORCES, PUSH, PUSH_SCHEDULE, ROBOT
from simreal.tasks.g1.terminations import TERMINATIONS
from simreal.tasks.g1_force import rewards
from simreal.tasks.g1_force.config import G1ForceConfig
from simreal.tasks.g1_force.forces import ForceSchedule, sustained_directions
from simreal.tasks.terms import (
    EventTerm,
    ObservationTerm,
    TerminationTerm,
    first_columns,
    layout,
    observe,
)

TORSO_FORCE_ORACLE = ObservationTerm(
    "torso_force_oracle", 3, lambda env: env.to_heading(env.external_force)[:, 0]
)
"""The true external force on the torso (N, heading frame): the actor's extra input with
`actor_observes_force` (a diagnostic; no G1 measures it)."""


def blind_to_force(policy, env):
    """`policy` (obs -> actions) with the true torso force it was trained to observe
    (`actor_observes_force`) read as zero: a diagnostic of how much it leans on what it
    is told, and a teacher whose actions carry nothing of the load."""
    if not env.cfg.actor_observes_force:
        raise ValueError("--blind: the policy's task config has no actor_observes_force")
    start = first_columns(env.observation_layout)[TORSO_FORCE_ORACLE.name]
    stop = start + TORSO_FORCE_ORACLE.size

    def act(obs: np.ndarray) -> np.ndarray:
        obs = obs.copy()
        obs[:, start:stop] = 0.0
        return policy(obs)

    return act


def load_teacher(path: Path, student_layout: tuple):
    """The policy (obs -> actions) of a checkpoint trained with `actor_observes_force`
    whose observation is `student_layout` plus the true torso force; refused otherwise,
    naming the file and what differs."""
    from simreal.config import from_plain
    from simreal.evaluation import load_policy

    if not path.is_file():
        raise FileNotFoundError(f"task.teacher: no checkpoint at {path}")
    policy, config = load_policy(path)
    if config.get("task") != "g1-force":
        raise ValueError(f"task.teacher {path}: a g1-force policy, got {config.get('task')!r}")
    cfg = from_plain(G1ForceConfig, config["task_config"], "task.")
    if not cfg.actor_observes_force:
        raise ValueError(f"task.teacher {path}: trained without actor_observes_force")
    theirs = list(G1ForceEnv.input_layouts(cfg)[0])
    ours = [*student_layout, *layout((TORSO_FORCE_ORACLE,))]
    if [tuple(t) for t in theirs] != [tuple(t) for t in ours]:
        raise ValueError(
            f"task.teacher {path}: its observation {theirs} is not the student's {ours[:-1]} "
            "plus the torso force"
        )
    return policy


def cop_offset(env) -> np.ndarray:
    """(N, 2) `COP_OFFSET` of a G1ForceEnv."""
    cop, centre = rewards.posture_cop(env)
    offset = np.zeros((env.num_sims, 3))
    offset[:, :2] = cop - centre
    return env.to_heading(offset)[:, :2]


COP_OFFSET = ObservationTerm("cop_offset", 2, cop_offset)
"""Where the ground must push for the robot, held still, to balance gravity and every
external force (the quasi-static centre of pressure, its own randomized mass and CoM
included), from the middle of the soles (m, heading frame): what a steady push and a
shifted body ask of the ankles together, which they feel as one torque. A target of
`actor_estimates_cop`."""


def hold_drift(env) -> np.ndarray:
    """(N,) bool: with `forces.hold_drift_ends_episode`, training episodes whose pelvis
    left a torso hold by more than `forces.fail_on_hold_drift_m` (`drifted_from_hold`)."""
    if not env.cfg.forces.hold_drift_ends_episode:
        return np.zeros(env.num_envs, dtype=bool)
    return env.drifted_from_hold()


def estimated_terms(cfg: G1ForceConfig) -> tuple[ObservationTerm, ...]:
    """The privileged quantities the actor estimates under `cfg`."""
    chosen = (
        (TORSO_FORCE_ORACLE, cfg.actor_estimates_force),
        (COP_OFFSET, cfg.actor_estimates_cop),
    )
    return tuple(term for term, on in chosen if on)


def start_forces(env, ids: np.ndarray) -> None:
    """New episodes' forces in simulations `ids`: no torso hold yet, and the force
    schedule restarted (evaluation: the configured push)."""
    env.hold_start_xy[ids] = np.nan
    env.hold_drift_m[ids] = 0.0
    if env.cfg.evaluation:
        env.schedule.set_eval_push(env.cfg.eval_push)
    else:
        env.schedule.reset(ids)


class G1ForceEnv(G1Env):
    """`g1-force`: random forces on torso and hands (ForceSchedule) with a fall-rate
    curriculum on their cap; evaluation pushes the torso backward, harder in each
    simulation (max_push_resisted_n)."""

    reward_terms = rewards.REWARDS
    event_terms = (
        CALIBRATION,
        ROBOT,
        EventTerm("forces", start_forces, "reset"),
        PUSH_SCHEDULE,
        EXTERNAL_FORCES,
        PUSH,
    )
    termination_terms = (*TERMINATIONS, TerminationTerm("hold_drift", hold_drift))
    metric_reductions: ClassVar[dict[str, str]] = {
        **G1Env.metric_reductions,
        "max_sustained_push_backward_n": "max",
        "max_sustained_push_forward_n": "max",
        "max_sustained_push_backward_in_place_n": "max",
        "max_sustained_push_forward_in_place_n": "max",
    }

    def __init__(
        self,
        cfg: G1ForceConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
    ):
        super().__init__(cfg, num_envs, engine, seed, num_threads)
        self.schedule = ForceSchedule(cfg.forces, num_envs, self.rng)
        self.first_episode = np.ones(num_envs, dtype=bool)
        self.hold_start_xy = np.full((num_envs, 2), np.nan)
        self.hold_drift_m = np.zeros(num_envs)
        """Sustained protocol: the pelvis' largest horizontal distance from where it stood
        when the hold began, over the hold (a robot that walks with the push is not
        holding it)."""
        if cfg.actor_observes_force:
            self.policy_terms = (*self.policy_terms, TORSO_FORCE_ORACLE)
            self.observation_layout = layout(self.policy_terms)
        self.estimate_terms = estimated_terms(cfg)
        self._teacher = None  # loaded by the first expert_action (cfg.teacher)
        self._policy_obs: np.ndarray | None = None
        self.critic_observation_layout = self.critic_observation_layout + layout(
            self.estimate_terms
        )

    @classmethod
    def input_layouts(cls, cfg: G1ForceConfig) -> tuple[tuple, tuple]:
        """The class's layouts with the true torso force appended to the actor's input
        (`actor_observes_force`), and any estimated quantities (`actor_estimates_force`,
        `actor_estimates_cop`) to both: the actor reads their estimates, the critic's
        observation carries their true values as the estimator's targets."""
        actor, critic = super().input_layouts(cfg)
        if cfg.actor_observes_force:
            actor = actor + layout((TORSO_FORCE_ORACLE,))
        estimates = layout(estimated_terms(cfg))
        return actor + estimates, critic + estimates

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        obs, critic = super().observe()
        if self.cfg.actor_observes_force:  # appended: the critic's input is unchanged
            oracle = observe((TORSO_FORCE_ORACLE,), self).astype(obs.dtype)
            obs = np.concatenate([obs, oracle], axis=1)
        if self.estimate_terms:  # the estimator's targets, after the critic's own terms
            truth = observe(self.estimate_terms, self).astype(critic.dtype)
            critic = np.concatenate([critic, truth], axis=1)
        if self.cfg.teacher:  # what the teacher reads: this observation, noise and all
            self._policy_obs = obs
        return obs, critic

    def expert_action(self) -> np.ndarray:
        """(N, 29) what `cfg.teacher` does in the current states: its policy on the
        observation the student got (the same noise) with the true torso force appended,
        as it was trained."""
        if not self.cfg.teacher:
            raise ValueError(
                "g1-force has an expert only with task.teacher=CHECKPOINT (a policy trained "
                "with task.actor_observes_force)"
            )
        if self._teacher is None:
            self._teacher = load_teacher(Path(self.cfg.teacher), self.observation_layout)
        oracle = observe((TORSO_FORCE_ORACLE,), self).astype(self._policy_obs.dtype)
        return self._teacher(np.concatenate([self._policy_obs, oracle], axis=1))

    def robot_com(self) -> np.ndarray:
        """(N, 3) the whole robot's centre of mass (world, m), from MuJoCo's subtreecom
        sensor (randomized link masses included)."""
        return self.sensor(COM_SENSOR)

    def load_points(self) -> np.ndarray:
        """(N, 3 bodies, 3) where the external forces act now: the centres of mass of the
        torso and the hands (world, m), from framepos sensors."""
        return np.stack([self.sensor(load_point_sensor(b)) for b in LOAD_BODIES], axis=1)

    def apply_external_forces(self, t: np.ndarray) -> None:
        forces = self.schedule.forces(t, resample=not self.cfg.evaluation)
        frame = self.cfg.eval_push.frame if self.cfg.evaluation else self.cfg.forces.frame
        if frame == "heading":  # the direction is the robot's: turn it with the pelvis yaw
            forces = np.einsum("nij,nkj->nki", self.heading_rot(), forces)
        self.external_force = forces
        self.engine.xfrc_applied[:, self.force_body_ids, 0:3] = self.external_force
        self.record_external_force()
        if self._tracks_drift:
            self._track_hold_drift(t)

    @property
    def _tracks_drift(self) -> bool:
        if self.cfg.evaluation:
            return self.cfg.eval_push.mode == "sustained"
        return self.cfg.forces.fail_on_hold_drift_m > 0

    def torso_holding(self, t: np.ndarray) -> np.ndarray:
        """(N,) bool: the torso force of each simulation is in its hold phase at episode
        times t (after its ramp, before its release)."""
        s = self.schedule
        start = s.onset_s[:, 0] + s.ramp_s[:, 0]
        return (t >= start) & (t < start + s.hold_s[:, 0])

    def _track_hold_drift(self, t: np.ndarray) -> None:
        """hold_drift_m: the largest drift of any torso hold of the episode so far, each
        measured from where the pelvis stood when that hold began (training runs many
        holds per episode; evaluation one)."""
        holding = self.torso_holding(t) & (self.schedule.magnitude_n[:, 0] > 0)
        self.hold_start_xy[~holding] = np.nan
        xy = self.engine.qpos[holding, :2]
        start = self.hold_start_xy[holding]
        start[np.isnan(start[:, 0])] = xy[np.isnan(start[:, 0])]
        self.hold_start_xy[holding] = start
        moved = np.linalg.norm(xy - start, axis=1)
        self.hold_drift_m[holding] = np.maximum(self.hold_drift_m[holding], moved)

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """fall_rate (1 for a fall), peak_force_n (largest total external force), and in
        training force_cap_n and hold_drift_rate (1 for an episode that left a torso hold,
        with forces.fail_on_hold_drift_m; such an episode is not also a fall); in
        evaluation push_n and max_push_resisted_n (step pushes) or
        max_sustained_push_{backward,forward}_n (the push held without a fall, 0 for the
        other direction; `simreal eval` takes their maximum).

        max_push_resisted_n is built so that its mean over the first episodes of the
        evaluation simulations (what `simreal eval` reports) is the largest push any of
        them survived: every first episode that survives ends at the same (time-limit)
        step, and each of the k survivors reports M * N / k (M the largest push survived,
        N the number of simulations), a fall reports 0. Read push_n and fall_rate per
        episode for the survival curve.
        """
        fell = self.ended_in_fall(ids)
        drifted = self.drifted_from_hold()[ids]
        out = {
            "fall_rate": (fell & ~drifted).astype(float),
            "peak_force_n": self.peak_force_n[ids].copy(),
        }
        if not self.cfg.evaluation:
            out["hold_drift_rate"] = drifted.astype(float)
            out["force_cap_n"] = self.schedule.sim_caps_n()[ids]
            self.schedule.record_outcomes(ids, fell | drifted, window=self.num_sims)
            return out
        push = self.schedule.magnitude_n[ids, 0].copy()
        if self.cfg.eval_push.mode == "sustained":
            held = np.where(fell, 0.0, push)
            drift = self.hold_drift_m[ids].copy()
            in_place = np.where(drift <= self.cfg.eval_push.max_hold_drift_m, held, 0.0)
            backward = sustained_directions(self.num_sims)[ids] < 0
            return {
                **out,
                "push_n": push,
                "max_sustained_push_backward_n": np.where(backward, held, 0.0),
                "max_sustained_push_forward_n": np.where(backward, 0.0, held),
                "max_sustained_push_backward_in_place_n": np.where(backward, in_place, 0.0),
                "max_sustained_push_forward_in_place_n": np.where(backward, 0.0, in_place),
                "hold_drift_m": drift,
                "self_penetration_m": self.self_penetration_m[ids].copy(),
            }
        survived = self.first_episode[ids] & ~fell
        resisted = np.zeros(ids.size)
        if survived.any():
            resisted[survived] = push[survived].max() * self.num_sims / survived.sum()
        self.first_episode[ids] = False
        return {
            **out,
            "push_n": push,
            "max_push_resisted_n": resisted,
            "self_penetration_m": self.self_penetration_m[ids].copy(),
        }

    def drifted_from_hold(self) -> np.ndarray:
        """(N,) bool: training simulations whose pelvis has left a torso hold by more than
        forces.fail_on_hold_drift_m this episode (all False when that is off)."""
        limit = self.cfg.forces.fail_on_hold_drift_m
        if self.cfg.evaluation or limit <= 0:
            return np.zeros(self.num_envs, dtype=bool)
        return self.hold_drift_m > limit

    def evaluation_conditions(self) -> dict:
        return {**super().evaluation_conditions(), "push_frame": self.cfg.eval_push.frame}

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        self.first_episode[:] = True
        return super().reset()

    def curriculum_state(self) -> dict[str, float]:
        return {} if self.cfg.evaluation else {"force_cap_n": self.schedule.curriculum.level}

    def curriculum_checkpoint(self) -> dict:
        if self.cfg.evaluation:
            return {}
        return checkpoint_state(self.schedule.curriculum, "force_cap_n")

    def restore_curriculum(self, state: dict) -> None:
        restore_state(self.schedule.curriculum, state, "force_cap_n")
