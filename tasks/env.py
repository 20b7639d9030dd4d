"""The batched task environment: episode bookkeeping shared by every task.

A task supplies the model, how actions become controls, its terms (`terms.py`) and its
initial state (`reset_state`); this base class steps the engine, runs the events, weights
and logs the rewards, evaluates the terminations, resets ended or diverged simulations
and hands PPO plain (num_envs, ...) float32 arrays. The order of one step: docs/tasks.md.
Startup events run when the task's constructor says (`run_events("startup", ...)`).
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from simreal.policies.vecenv import StepResult
from simreal.sim import Engine, EngineError, make_engine
from simreal.tasks.terms import (
    EventTerm,
    ObservationTerm,
    RewardTerm,
    TerminationTerm,
    check_weights,
    layout,
    step_weights,
    term_columns,
)


class TaskEnv(ABC):
    """N copies of one task stepped together at the control rate."""

    policy_terms: tuple[ObservationTerm, ...]
    """The policy observation's terms in order (`terms.py`): the layout, the ONNX
    observation_names and, where a task randomizes, the observation noise derive from
    them. A task whose terms depend on its config sets them before `__init__` here."""
    observation_layout: tuple[tuple[str, int], ...]
    """(name, size) of each policy term: derived, on the class where the terms are fixed
    (so a warm start can compare tasks without building them), else per instance."""
    reward_terms: tuple[RewardTerm, ...]
    """Every reward term the task defines; `cfg.reward_weights` (per second) picks and
    weights them."""
    termination_terms: tuple[TerminationTerm, ...] = ()
    """How episodes fail (`terms.py`); an episode ends where any is True."""
    event_terms: tuple[EventTerm, ...] = ()
    """What is done to the simulations at startup, at resets and every step before physics
    (`terms.py`), run in this order within each mode."""
    randomize: bool = False
    """Whether domain randomization is on (events with `randomization` run only then); a
    task that randomizes sets it from its config."""
    critic_observation_layout: tuple[tuple[str, int], ...]
    estimate_terms: tuple[ObservationTerm, ...] = ()
    """Privileged quantities for the policy's state estimator to infer from the policy
    observation (terms of the critic's observation, by name; `ActorCritic`'s
    `estimate_columns`): none by default."""
    action_groups: dict[str, tuple[int, ...]]
    max_episode_steps: int
    decimation: int
    agents_per_sim: int = 1
    """Policy rows per simulation (a swarm: one per drone); arrays PPO sees lead with
    num_envs = num_sims * agents_per_sim agents."""
    agents_end_together: bool = True
    """False: an agent that fails ends only its own episode and is respawned
    (`respawn_agents`) while the others fly on; a simulation restarts when its time
    runs out. True: any failure restarts the whole simulation."""
    action_clip: float = 1.0
    """Actions are clipped to [-action_clip, action_clip] before they reach the robot, in
    training, evaluation and deploy alike (the ONNX metadata carries it). 1 for most tasks;
    the G1 allows more (see G1Env)."""
    observe_after_resets: bool = False
    """True where `observe()` is a function of the state alone in evaluation (it draws no
    random numbers there and keeps no per-call state, such as a sensor delay line): then a
    step that resets simulations, and cuts no episode by the time limit, observes once,
    after the resets, instead of before and after (the rows that keep running read the
    same either way; the reset rows' observation before their reset is never used). In
    training the observation noise then draws one step's numbers instead of two."""
    command_fields: tuple[str, ...] = ()
    """Per-joint fields of the low-level command (`command_from_action`), e.g. ("rpm",) or
    ("q", "dq", "kp", "kd", "tau"); empty for a task that has none."""
    command_tracks: tuple[str, float] = ("position", 1.0)
    """The JointState field (position or velocity) that the first command field sets, and
    one command unit in that field's SI unit (a drone's RPM command: velocity, 2 pi / 60)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "policy_terms" in cls.__dict__:
            cls.observation_layout = layout(cls.policy_terms)

    def __init__(self, mjcf: str, num_sims: int, engine: str, seed: int, num_threads: int = 0):
        self.observation_layout = layout(self.policy_terms)
        self.num_sims = num_sims
        self.num_envs = num_sims * self.agents_per_sim
        self.mjcf = mjcf
        self.engine: Engine = make_engine(engine, mjcf, num_sims, num_threads)
        self.engine_name, self.seed = engine, seed
        self.physics_time_s = 0.0
        """Wall time spent inside the engine's step calls since construction: what a
        training iteration's time splits into physics and task layer by (metrics.csv)."""
        self.rng = np.random.default_rng(seed)
        check_weights(self.cfg.reward_weights, self.reward_terms)
        self._terms = {term.name: term for term in self.reward_terms}
        self._step_weights = step_weights(self.cfg.reward_weights, self.cfg.control_dt)
        self.sim_step = np.zeros(num_sims, dtype=np.int64)
        self.episode_step = np.zeros(self.num_envs, dtype=np.int64)
        self.episode_return = np.zeros(self.num_envs)
        self.episode_terms: dict[str, np.ndarray] = {
            name: np.zeros(self.num_envs) for name in self.reward_weights()
        }
        self.unstable_resets = 0
        self.terminations: dict[str, np.ndarray] = {
            term.name: np.zeros(self.num_envs, dtype=bool) for term in self.termination_terms
        }
        """Each termination term's value at the last step, by name."""

    @property
    def num_obs(self) -> int:
        return sum(size for _, size in self.observation_layout)

    @property
    def num_critic_obs(self) -> int:
        return sum(size for _, size in self.critic_observation_layout)

    @classmethod
    def input_layouts(cls, cfg) -> tuple[tuple, tuple]:
        """(name, size) of each block of the actor's input (the policy observation, then
        any state estimate, named as the term it estimates) and of the critic's, for an
        environment built with `cfg`: what a warm start matches a source run's weights by.
        The class's layouts unless a task's config extends them."""
        return cls.observation_layout, cls.critic_observation_layout

    def estimate_columns(self) -> list[int]:
        """The critic-observation columns of `estimate_terms`, in their order."""
        return term_columns(self.critic_observation_layout, [t.name for t in self.estimate_terms])

    @property
    def num_actions(self) -> int:
        return sum(len(idx) for idx in self.action_groups.values())

    @property
    def control_dt(self) -> float:
        return self.engine.physics_dt * self.decimation

    def reward_weights(self) -> dict[str, float]:
        """Reward weights per control step by term name (the config's per-second weights
        times its control period); a term with weight 0 is logged but not computed."""
        return self._step_weights

    def after_step(self) -> None:
        """Update running metrics (and state rewards difference against) after the rewards
        of a step and before its terminations; nothing by default."""
        return None

    @abstractmethod
    def apply_action(self, action: np.ndarray) -> None:
        """Turn (num_envs, num_actions) actions in [-1, 1] into engine controls."""

    @abstractmethod
    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        """Policy and critic observations, float32 (num_envs, n)."""

    def terminated(self) -> np.ndarray:
        """(num_envs,) bool: episodes that failed: where any termination term was True."""
        out = np.zeros(self.num_envs, dtype=bool)
        for value in self.terminations.values():
            out |= value
        return out

    def check_terminations(self) -> None:
        """Evaluate every termination term on the new state, into `terminations`."""
        for term in self.termination_terms:
            self.terminations[term.name] = term(self)

    def run_events(self, mode: str, arg: np.ndarray) -> None:
        """Run the event terms of `mode` in their order (`EventTerm`): `arg` is the
        simulations' ids (startup, reset) or the episode times (interval)."""
        for term in self.event_terms:
            if term.mode == mode and (self.randomize or not term.randomization):
                term(self, arg)

    def after_reset(self, sim_ids: np.ndarray) -> None:
        """What follows from a new episode's state and its reset events (the G1's held
        targets and link poses); nothing by default."""
        return None

    @abstractmethod
    def reset_state(self, sim_ids: np.ndarray) -> None:
        """Write initial states (and randomized parameters) for simulations `sim_ids`."""

    def simulate(self) -> None:
        """Run one control period of physics; tasks with state-dependent forces override."""
        self.step_physics(self.decimation)

    def step_physics(self, substeps: int) -> None:
        """The engine's step, timed into `physics_time_s`: every task steps through here."""
        t0 = time.perf_counter()
        try:
            self.engine.step(substeps)
        finally:
            self.physics_time_s += time.perf_counter() - t0

    def deployment_metadata(self) -> dict:
        """What a deployed policy needs to know about this task, for the ONNX metadata.

        Subclasses add their robot's joint (or motor) names in hardware order, default
        positions, action scale and PD gains: a command is default + action_scale * action.
        """
        meta = {
            "observation_names": [list(term) for term in self.observation_layout],
            "action_groups": {name: list(idx) for name, idx in self.action_groups.items()},
            "control_dt": self.control_dt,
            "sim_dt": self.engine.physics_dt,
            "decimation": self.decimation,
            "obs_history": 0,
            "action_clip": self.action_clip,
        }
        if self.estimate_terms:  # informative: the graph estimates them from `obs` itself
            meta["state_estimates"] = [list(term) for term in layout(self.estimate_terms)]
        return meta

    def command_from_action(self, action: np.ndarray) -> np.ndarray:
        """The low-level command (num_envs, n_joints[, fields]) that actions in [-1, 1] send
        to the robot, in hardware units and joint order (what a deploy log records)."""
        raise NotImplementedError(f"{type(self).__name__} has no low-level command")

    def apply_command(self, command: np.ndarray) -> None:
        """Write a low-level command into the engine's controls, as if the robot received it:
        `apply_action` after latency, and open-loop replay of a log."""
        raise NotImplementedError(f"{type(self).__name__} has no low-level command")

    def joint_state(self) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """Measured joint position, velocity and effort (num_sims, n_joints) in SI units
        and hardware order, None where the robot does not measure it."""
        raise NotImplementedError(f"{type(self).__name__} reports no joint state")

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """Task metrics of episodes ending now in simulations `ids` (before their reset)."""
        return {}

    def evaluation_conditions(self) -> dict:
        """What an evaluation's numbers hold under, written beside them in the eval JSON:
        the engine, its step and the seed here; tasks add what matters for them (the G1:
        foot friction, self-collision, terrain)."""
        return {"engine": self.engine_name, "physics_dt": self.engine.physics_dt, "seed": self.seed}

    def zero_action_policy(self) -> Callable[[np.ndarray], np.ndarray]:
        """A policy that always outputs zero actions: the floor of several tasks' baselines
        (the G1's PD loop holding its pose, the swarm's prior, the dex hand's replay)."""
        n = self.num_actions
        return lambda obs: np.zeros((obs.shape[0], n), dtype=np.float32)

    def curriculum_state(self) -> dict[str, float]:
        """The curriculum's levels by name (empty without a curriculum): logged every
        iteration as curriculum/<name> and saved in checkpoints, so a resumed run carries
        on at the level it reached instead of starting over."""
        return {}

    def curriculum_checkpoint(self) -> dict:
        """What a checkpoint keeps of the curriculum: the logged levels, plus whatever a
        task needs to resume exactly where it stopped (g1-pull: every simulation's level)."""
        return self.curriculum_state()

    def restore_curriculum(self, state: dict) -> None:
        """Set the levels `curriculum_checkpoint` returned (from a checkpoint)."""
        return None

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        self._reset_sims(np.arange(self.num_sims))
        return self.observe()

    def per_agent(self, values: np.ndarray) -> np.ndarray:
        """Repeat per-simulation values (num_sims, ...) for each of its agents."""
        return (
            values if self.agents_per_sim == 1 else np.repeat(values, self.agents_per_sim, axis=0)
        )

    def step(self, action: np.ndarray) -> StepResult:
        self.begin_step(action)
        self.advance()
        return self.finish_step()

    # A step in three phases, so that `OverlappedEnv` can run one group's physics on a
    # worker thread while the main thread does the task layer of another group: the
    # physics phase should hold the GIL as little as it can (what follows from the new
    # state belongs in `after_physics`, on the main thread).
    def begin_step(self, action: np.ndarray) -> None:
        """Before physics: the actions become engine controls."""
        self.apply_action(np.clip(action, -self.action_clip, self.action_clip))

    def advance(self) -> None:
        """The interval events, then physics of one control period (`simulate`). An engine
        error ends it early; the simulations it left in a bad state are found by
        `finish_step` and reset."""
        with contextlib.suppress(EngineError):
            if self.event_terms:
                self.run_events("interval", self.episode_step * self.control_dt)
            self.simulate()
        self.sim_step += 1
        self.episode_step += 1

    def finish_step(self) -> StepResult:
        """After physics: what follows from the new state, rewards, terminations,
        observations and resets; diverged simulations end their episodes."""
        self.after_physics()
        unstable = self.engine.unstable()
        self.unstable_resets += int(unstable.sum())
        with np.errstate(invalid="ignore", over="ignore"):
            return self._end_step(self.per_agent(unstable))

    def after_physics(self) -> None:
        """State derived from the new physics state before rewards are computed (the G1's
        link poses, measured rope forces); nothing by default."""
        return None

    def _end_step(self, unstable: np.ndarray) -> StepResult:
        reward = np.zeros(self.num_envs)
        for name, weight in self._step_weights.items():
            if weight == 0.0:
                continue
            value = weight * self._terms[name](self)
            value[unstable] = 0.0
            self.episode_terms[name] += value
            reward += value
        self.episode_return += reward
        self.check_terminations()
        self.after_step()
        terminated = self.terminated() | unstable
        time_up = self.sim_step >= self.max_episode_steps
        truncated = self.per_agent(time_up) & ~terminated
        info: dict = {"unstable_resets": int(unstable.sum()) // self.agents_per_sim}
        done_ids = np.flatnonzero(terminated | truncated)
        final_critic_obs = None  # the critic's last look at truncated episodes
        if not (done_ids.size and self.observe_after_resets and not truncated.any()):
            obs, critic_obs = self.observe()
            final_critic_obs = critic_obs
        if done_ids.size:
            info["episode"] = self._finish_episodes(done_ids)
            self._reset_done(done_ids, time_up | self._all_failed(terminated))
            obs, critic_obs = self.observe()  # the reset rows start new episodes
        if final_critic_obs is None:
            final_critic_obs = critic_obs  # no row reads it: nothing was truncated
        return StepResult(
            obs,
            critic_obs,
            reward.astype(np.float32),
            terminated,
            truncated,
            final_critic_obs,
            info,
        )

    def _finish_episodes(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        ended = {
            "return": self.episode_return[ids].copy(),
            "length": self.episode_step[ids].copy(),
            **{f"reward/{n}": v[ids].copy() for n, v in self.episode_terms.items()},
            **self.episode_metrics(ids),
        }
        return ended

    def respawn_agents(self, agent_ids: np.ndarray) -> None:
        """Put failed agents back into their running simulations (agents_end_together False)."""
        raise NotImplementedError

    def _all_failed(self, terminated: np.ndarray) -> np.ndarray:
        return terminated.reshape(self.num_sims, self.agents_per_sim).all(axis=1)

    def _reset_done(self, done_ids: np.ndarray, sim_over: np.ndarray) -> None:
        a = self.agents_per_sim
        if self.agents_end_together:
            self._reset_sims(np.unique(done_ids // a))
            return
        over = np.flatnonzero(sim_over)
        if over.size:
            self._reset_sims(over)
        alone = done_ids[~sim_over[done_ids // a]]
        if alone.size:
            self.respawn_agents(alone)
            self._clear_agents(alone)

    def _reset_sims(self, sim_ids: np.ndarray) -> None:
        self.reset_state(sim_ids)
        self.run_events("reset", sim_ids)
        self.after_reset(sim_ids)
        self.sim_step[sim_ids] = 0
        a = self.agents_per_sim
        self._clear_agents((sim_ids[:, None] * a + np.arange(a)).ravel())

    def _clear_agents(self, ids: np.ndarray) -> None:
        self.episode_step[ids] = 0
        self.episode_return[ids] = 0.0
        for values in self.episode_terms.values():
            values[ids] = 0.0
