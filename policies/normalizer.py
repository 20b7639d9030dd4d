"""Empirical observation normalization, kept inside the model so export carries it."""

from __future__ import annotations

import torch
from torch import nn

NORMALIZER_EPS = 1e-2
NORMALIZER_CLIP = 10.0
"""The observation normalizer's variance floor and output clip (the defaults)."""


class EmpiricalNormalization(nn.Module):
    """Normalizes with the running mean and variance of every observation seen in training."""

    def __init__(
        self,
        size: int,
        eps: float = NORMALIZER_EPS,
        clip: float = NORMALIZER_CLIP,
        raw: tuple[int, ...] = (),
    ):
        """`raw`: columns passed through unchanged (categorical ids such as caption tokens)."""
        super().__init__()
        self.eps = eps
        self.clip = clip
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.has_raw = bool(raw)
        keep = torch.zeros(size, dtype=torch.bool)
        keep[list(raw)] = True
        self.register_buffer("raw", keep, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = ((x - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)
        return torch.where(self.raw, x, y) if self.has_raw else y

    def columns(self, x: torch.Tensor, start: int) -> torch.Tensor:
        """x (B, w) normalized as the columns start..start+w of what the statistics cover
        (an actor with a state estimator keeps the statistics of its observation and of
        the estimated quantities, after it, in one normalizer)."""
        stop = start + x.shape[-1]
        mean, var = self.mean[start:stop], self.var[start:stop]
        y = ((x - mean) / torch.sqrt(var + self.eps)).clamp(-self.clip, self.clip)
        return torch.where(self.raw[start:stop], x, y) if self.has_raw else y

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge a batch (B, size) into the running statistics (Chan's parallel formula)."""
        self.merge(x.shape[0], x.mean(dim=0), x.var(dim=0, unbiased=False))

    @torch.no_grad()
    def merge(self, n: int, batch_mean: torch.Tensor, batch_var: torch.Tensor) -> None:
        """Merge the statistics of n samples (population variance) into the running ones;
        distributed training merges the statistics of every rank's batch this way."""
        # The count as a Python float: the same double arithmetic as on the float64
        # buffer, without a tensor op per step (this runs at every rollout step).
        total = float(self.count) + n
        mean, var = self.mean, self.var
        delta = batch_mean - mean
        w = n / total
        mean.add_(w * delta)
        var.copy_((1 - w) * var + w * batch_var + w * (1 - w) * delta.square())
        self.count.fill_(total)


class ReturnScaler(nn.Module):
    """Rewards divided by the running std of the discounted return of each simulation.

    Why the return and not the reward: the value targets are discounted sums, so their
    scale is the return's; dividing by its std keeps them near unit size whatever the
    task's reward units or episode length. The mean is not subtracted (that would change
    which behaviour is rewarded). Statistics persist in checkpoints; the per-simulation
    running return does not (a resumed run starts it from zero, as at an episode start).
    """

    def __init__(self, num_envs: int, gamma: float, clip: float = 10.0, eps: float = 1e-8):
        super().__init__()
        self.gamma, self.clip, self.eps = gamma, clip, eps
        self.stats = EmpiricalNormalization(1, eps=eps, clip=float("inf"))
        self.register_buffer(
            "running", torch.zeros(num_envs, dtype=torch.float64), persistent=False
        )

    @torch.no_grad()
    def forward(
        self, rewards: torch.Tensor, dones: torch.Tensor, rows: slice = slice(None)
    ) -> torch.Tensor:
        """Scaled rewards for one step of the simulations `rows` (every one by default);
        `dones` ends their returns."""
        running = self.running[rows]
        running.mul_(self.gamma).add_(rewards.to(torch.float64))
        self.stats.update(running.to(torch.float32).unsqueeze(-1))
        scale = torch.sqrt(self.stats.var[0] + self.eps)
        running.masked_fill_(dones.to(torch.bool), 0.0)
        return (rewards / scale).clamp(-self.clip, self.clip)
