"""Observation, reward, termination and event terms, declared once as data.

A task lists its terms in one place; the observation layout and ONNX
`observation_names`, the observation noise, the reward weights a config accepts, the
per-term logs and the weighted sum derive from that list (`TaskEnv`). Reward weights are
per second (times `cfg.control_dt` per step); a config overrides a weight by name, never
the term. docs/tasks.md describes the four kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ObservationTerm:
    """One named block of an observation vector.

    `func(inputs)` returns the block, (N, size), from whatever the task observes from
    (a sensor reading in the robot's own words, e.g. `G1Reading`), the same object in
    training, evaluation and on the robot. `noise` names the field of the task's
    randomization config that holds this block's Gaussian noise std (None: never noisy).
    """

    name: str
    size: int
    func: Callable[[Any], np.ndarray]
    noise: str | None = None


@dataclass(frozen=True)
class RewardTerm:
    """One named reward: `func(env, **params)` returns its (num_envs,) unweighted value
    from the environment's state, without changing that state. With `inputs`, `func` is
    a pure function of the named state instead: `func(*inputs read from env, **params)`
    (`read_input`), so a pure function needs no adapter to reach the environment.

    `weight` is the default weight per second; None leaves the term out of the default
    weights (not computed, not logged) until a config names it.
    """

    name: str
    func: Callable[..., np.ndarray]
    weight: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    inputs: tuple[str, ...] = ()

    def __call__(self, env: Any) -> np.ndarray:
        if self.inputs:
            return self.func(*(read_input(env, name) for name in self.inputs), **self.params)
        return self.func(env, **self.params)


def read_input(env: Any, name: str) -> Any:
    """One input of a term, by name: the environment's attribute, or with dots an
    attribute's (`cfg.FIELD`, `state.base_pos`), called when it is a method
    (`foot_contact`, `walking`)."""
    value = env
    for part in name.split("."):
        value = getattr(value, part)
    return value() if callable(value) else value


@dataclass(frozen=True)
class TerminationTerm:
    """One named way an episode fails: `func(env, **params)` returns (num_envs,) bool, True
    where the episode ends now, without changing the environment's state. `TaskEnv` keeps
    each term's last value by name (`env.terminations`); the time limit is not a term."""

    name: str
    func: Callable[..., np.ndarray]
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __call__(self, env: Any) -> np.ndarray:
        return self.func(env, **self.params)


EVENT_MODES = ("startup", "reset", "interval")


@dataclass(frozen=True)
class EventTerm:
    """One named change made to the simulations at a fixed point of their life: `mode`
    "startup" (once, `func(env, ids, **params)` with every simulation), "reset" (after
    `reset_state`, `func(env, ids, **params)` with the restarting simulations) or
    "interval" (every control step before physics, `func(env, t, **params)` with the
    episode times t (num_envs,) s). `randomization` True: run only where the environment
    randomizes (`env.randomize`). Events run in the order listed and draw from the env's
    one generator, so that order is part of a rollout's numbers."""

    name: str
    func: Callable[..., None]
    mode: str
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    randomization: bool = False

    def __post_init__(self) -> None:
        if self.mode not in EVENT_MODES:
            raise ValueError(f"EventTerm {self.name!r}: mode {self.mode!r}; one of {EVENT_MODES}")

    def __call__(self, env: Any, arg: np.ndarray) -> None:
        self.func(env, arg, **self.params)


def layout(terms: Iterable[ObservationTerm]) -> tuple[tuple[str, int], ...]:
    """(name, size) of each term in order: the observation layout and ONNX names."""
    return tuple((term.name, term.size) for term in terms)


def first_columns(layout_: Iterable[tuple[str, int]]) -> dict[str, int]:
    """The first column of each term in an observation laid out as `layout_`."""
    out, col = {}, 0
    for name, size in layout_:
        out[name] = col
        col += size
    return out


def term_columns(layout_: Iterable[tuple[str, int]], names: Iterable[str]) -> list[int]:
    """The columns of the named terms in an observation laid out as `layout_`, in the
    order named; a name the layout lacks raises ValueError naming it and the layout's."""
    layout_ = list(layout_)
    starts, sizes = first_columns(layout_), dict(layout_)
    out = []
    for name in names:
        if name not in starts:
            raise ValueError(f"no observation term {name!r}; the terms: {[n for n, _ in layout_]}")
        out += range(starts[name], starts[name] + sizes[name])
    return out


def observe(terms: Iterable[ObservationTerm], inputs: Any) -> np.ndarray:
    """The terms evaluated on `inputs`, concatenated in order, float32 (N, sum of sizes)."""
    return np.concatenate([term.func(inputs) for term in terms], axis=1, dtype=np.float32)


def noise_scale(terms: Iterable[ObservationTerm], randomization: Any) -> np.ndarray:
    """Per-entry noise std (float64) of the observation: each term's `noise` field read
    from `randomization`, 0 for a term without noise."""
    return np.concatenate(
        [
            np.full(term.size, 0.0 if term.noise is None else getattr(randomization, term.noise))
            for term in terms
        ]
    )


def default_weights(terms: Iterable[RewardTerm]) -> dict[str, float]:
    """The default `reward_weights` of a config (per second), in the terms' order."""
    return {term.name: term.weight for term in terms if term.weight is not None}


def check_weights(weights: Mapping[str, float], terms: Iterable[RewardTerm]) -> None:
    """Refuse weights of terms the task does not define, naming them and the known ones."""
    known = [term.name for term in terms]
    unknown = [name for name in weights if name not in known]
    if unknown:
        raise ValueError(f"reward_weights: unknown terms {unknown}; known: {known}")


def step_weights(weights: Mapping[str, float], control_dt: float) -> dict[str, float]:
    """Weights per control step: each per-second weight times the control period."""
    return {name: weight * control_dt for name, weight in weights.items()}


WEIGHTS_UNIT = "per_second"
"""The unit of every config's `reward_weights`, saved with the config (`reward_weights_unit`)."""


def check_unit(unit: str) -> None:
    if unit != WEIGHTS_UNIT:
        raise ValueError(f"reward_weights_unit: {unit!r}; weights are {WEIGHTS_UNIT!r}")
