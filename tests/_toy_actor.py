"""The toy actor-critic the policy tests share: six actions in three groups (lower body,
waist, upper body) over ten observations, small enough to train in milliseconds."""

from __future__ import annotations

import numpy as np
import torch

from simreal.policies.config import ModelConfig

GROUPS = {"lower": (0, 1, 2), "waist": (3,), "upper": (4, 5)}
N_OBS = 10
SMALL = ModelConfig(actor_hidden=(16, 16), critic_hidden=(16,))


def observations(n: int, seed: int = 0) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(n, N_OBS)).astype(np.float32))
