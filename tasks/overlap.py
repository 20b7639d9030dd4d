"""Task environments stepped in groups, one group's physics overlapping another's task layer.

A task's step is physics (the engine's C++ threads, the GIL released) followed by its
task layer (rewards, terminations, observations, resets: numpy on the main thread). On a
machine with many cores the task layer is serial while the physics threads wait: on 16
threads g1-pull's task layer took 37 % of a training iteration (results/bench/gpu).
`OverlappedEnv` splits the simulations into groups, each a task environment of its own,
and steps them in turn: while a worker thread runs group k's physics, the main thread
finishes group k-1's step and prepares group k+1's. Only the first group's preparation
and the last group's task layer are left in the open, about 1/groups of the task layer;
training goes further and acts group by group (`OnPolicyRunner._collect_per_group`), so
nothing but the physics and the main thread's Python are left, side by side.

The groups are independent environments, as torchrun ranks are: each has its own random
stream (seed + group) and curriculum; the curriculum levels logged are their mean, and a
checkpoint keeps every simulation's level in order. The physics of one group at a time
uses the engine threads (one CPU fewer than the process has: `group_physics_threads`),
so a group should still give each thread several simulations.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from simreal.policies.vecenv import StepResult


def group_physics_threads() -> int:
    """Physics threads for each group's engine: one CPU fewer than this process may use.
    The main thread works while the physics runs, and the engine splits its simulations
    evenly over its threads, so a thread that lost its CPU to the main thread would
    finish last and hold the whole call up."""
    from simreal.sim.mjbatch_engine import usable_cpus

    return max(1, usable_cpus() - 1)


def make_overlapped_env(
    name: str, cfg, num_envs: int, groups: int, seed: int = 0, engine: str = "mjbatch"
) -> OverlappedEnv:
    """Task `name`'s `OverlappedEnv`: `groups` environments built as `make_env` builds one,
    each engine on `group_physics_threads()` threads (what `train.env_groups` trains on)."""
    from simreal.tasks.registry import make_env

    threads = group_physics_threads()
    return OverlappedEnv(
        lambda n, s: make_env(name, cfg, n, engine, s, threads), num_envs, groups, seed
    )


GIL_SWITCH_INTERVAL_S = 0.0005
"""The interpreter's thread switch interval while groups overlap (Python's default is
5 ms): the physics thread needs the GIL for a moment between its engine calls (a G1's
substeps), and should not wait for the main thread's numpy work for longer than this."""


class OverlappedEnv:
    """`groups` task environments of num_envs / groups simulations each, seen as one."""

    def __init__(self, make: Callable[[int, int], object], num_envs: int, groups: int, seed: int):
        """make(n, seed) builds one group's task environment of n (= num_envs / groups)
        simulations, as `make_env` counts them (a swarm's rows are its drones)."""
        if groups < 2 or num_envs % groups:
            raise ValueError(
                f"train.env_groups={groups}: needs at least 2 groups that divide "
                f"num_envs={num_envs} evenly"
            )
        self.groups = [make(num_envs // groups, seed + g) for g in range(groups)]
        first = self.groups[0]
        self.num_envs = sum(env.num_envs for env in self.groups)  # policy rows (agents)
        self.num_sims = sum(env.num_sims for env in self.groups)
        self.num_obs, self.num_critic_obs = first.num_obs, first.num_critic_obs
        self.num_actions, self.action_groups = first.num_actions, first.action_groups
        self.observation_structure = getattr(first, "observation_structure", None)
        if hasattr(first, "expert_action"):
            self.expert_action = self._expert_action
        self._physics = ThreadPoolExecutor(max_workers=1, thread_name_prefix="physics")
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)

    def __getattr__(self, name: str):
        # Read-only facts every group shares (reward_weights, control_dt, cfg, ...).
        if name == "groups":
            raise AttributeError(name)
        return getattr(self.groups[0], name)

    @property
    def physics_time_s(self) -> float:
        return sum(env.physics_time_s for env in self.groups)

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        obs, critic = zip(*(env.reset() for env in self.groups), strict=True)
        return np.concatenate(obs), np.concatenate(critic)

    def group_rows(self) -> list[slice]:
        """Each group's rows among the num_envs of a step, in order."""
        n = self.groups[0].num_envs
        return [slice(g * n, (g + 1) * n) for g in range(len(self.groups))]

    def start_physics(self, group: int) -> Future:
        """Group `group`'s physics (its `advance`) on the worker thread; one at a time."""
        return self._physics.submit(self.groups[group].advance)

    def step(self, action: np.ndarray) -> StepResult:
        """All groups one control step, one group's physics beside the next's preparation
        and the previous one's task layer. Training acts per group instead
        (policies/runner.py), so the policy overlaps the physics too."""
        actions = [np.asarray(action)[rows] for rows in self.group_rows()]
        results: list[StepResult] = []
        self.groups[0].begin_step(actions[0])
        running = self.start_physics(0)
        for k in range(1, len(self.groups)):
            self.groups[k].begin_step(actions[k])
            running.result()
            running = self.start_physics(k)
            results.append(self.groups[k - 1].finish_step())
        running.result()
        results.append(self.groups[-1].finish_step())
        return merge_steps(results)

    def _expert_action(self) -> np.ndarray:
        return np.concatenate([env.expert_action() for env in self.groups])

    def curriculum_state(self) -> dict[str, float]:
        states = [env.curriculum_state() for env in self.groups]
        return {name: float(np.mean([s[name] for s in states])) for name in states[0]}

    def curriculum_checkpoint(self) -> dict:
        """The groups' checkpoints: scalar levels averaged, per-simulation lists joined."""
        states = [env.curriculum_checkpoint() for env in self.groups]
        out: dict = {}
        for name in states[0]:
            values = [s[name] for s in states]
            out[name] = (
                [v for group in values for v in group]
                if isinstance(values[0], list)
                else float(np.mean(values))
            )
        return out

    def restore_curriculum(self, state: dict) -> None:
        """Per-simulation lists as long as all the groups' simulations are split among
        them in order; anything else (a mean level) goes to every group as it is."""
        for g, env in enumerate(self.groups):
            mine = {}
            for name, value in state.items():
                if isinstance(value, list) and len(value) == self.num_sims:
                    mine[name] = value[g * env.num_sims : (g + 1) * env.num_sims]
                else:
                    mine[name] = value
            env.restore_curriculum(mine)

    def close(self) -> None:
        self._physics.shutdown()


def merge_steps(results: list[StepResult]) -> StepResult:
    """One StepResult of several groups' steps, rows in group order; the episodes that
    ended are listed in that order too, as np.flatnonzero of the merged flags lists them."""
    info: dict = {"unstable_resets": sum(r.info.get("unstable_resets", 0) for r in results)}
    ended = [r.info["episode"] for r in results if "episode" in r.info]
    if ended:
        info["episode"] = {
            name: np.concatenate([np.atleast_1d(e[name]) for e in ended]) for name in ended[0]
        }
    return StepResult(
        *(
            np.concatenate([getattr(r, name) for r in results])
            for name in (
                "obs",
                "critic_obs",
                "reward",
                "terminated",
                "truncated",
                "final_critic_obs",
            )
        ),
        info,
    )
