"""The vectorized-environment protocol PPO trains on, and the step every environment
returns (the tasks' and the Gymnasium wrapper's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


@dataclass
class StepResult:
    """One control step of every environment; arrays lead with num_envs."""

    obs: np.ndarray
    critic_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_critic_obs: np.ndarray
    """Critic observation where an episode was cut by a time limit, for bootstrapping."""
    info: dict[str, Any] = field(default_factory=dict)
    """May hold "episode": {"return": (k,), "length": (k,), ...} for the k episodes ended
    now, in the order of np.flatnonzero(terminated | truncated)."""


class VecEnv(Protocol):
    num_envs: int
    num_obs: int
    num_critic_obs: int
    num_actions: int
    action_groups: dict[str, tuple[int, ...]]
    """Named groups of action indices; each group gets its own actor when decoupled."""

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Policy and critic observations of fresh episodes."""

    def step(self, action: np.ndarray) -> StepResult: ...
