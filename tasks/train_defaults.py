"""Typed training defaults per task: the settings of the generic training config
(`simreal.policies.config.TrainConfig`) that suit a task better, declared next to the
task's config. None keeps the generic value; the user's --set and flags still win (they
are applied after these)."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

_SECTION = {
    "actor_hidden": "model",
    "critic_hidden": "model",
    "init_std": "model",
    "attention_dim": "model",
    "num_steps_per_env": "ppo",
    "num_epochs": "ppo",
    "entropy_coef": "ppo",
    "schedule": "ppo",
    "learning_rate": "ppo",
    "critic_learning_rate": "ppo",
    "gamma": "ppo",
}
"""Where a field sits in TrainConfig: its model or ppo section, else the top level."""


@dataclass(frozen=True)
class TrainDefaults:
    num_envs: int | None = None
    eval_interval: int | None = None
    eval_episodes: int | None = None
    torch_threads: int | None = None
    actor_hidden: tuple[int, ...] | None = None
    critic_hidden: tuple[int, ...] | None = None
    init_std: float | None = None
    attention_dim: int | None = None
    num_steps_per_env: int | None = None
    num_epochs: int | None = None
    entropy_coef: float | None = None
    schedule: str | None = None
    learning_rate: float | None = None
    critic_learning_rate: float | None = None
    gamma: float | None = None

    def overrides(self) -> tuple[str, ...]:
        """The set fields as `train.` overrides (KEY=VALUE, values in YAML), the form the
        training config's other overrides take."""
        items = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            key = f"{_SECTION[f.name]}.{f.name}" if f.name in _SECTION else f.name
            items.append(f"{key}={json.dumps(list(value) if isinstance(value, tuple) else value)}")
        return tuple(items)
