"""Rollout storage: (num_steps, num_envs, ...) tensors and GAE."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass
class Batch:
    obs: torch.Tensor
    critic_obs: torch.Tensor
    actions: torch.Tensor
    old_log_prob: torch.Tensor
    old_mean: torch.Tensor
    old_std: torch.Tensor
    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    expert: torch.Tensor
    """The expert's actions (zeros unless PPO imitates one)."""
    h0: torch.Tensor | None = None
    """A recurrent actor's memory at the start of these trajectories (B, memory_size);
    with it, every per-step field above is (T * B, ...), time-major, B whole trajectories
    of the rollout's T steps."""
    dones: torch.Tensor | None = None
    """(T, B): where each trajectory's episode ended (its memory was zeroed after)."""

    def sequences(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(obs (T, B, n_obs), h0, dones): what `ActorCritic.sequence_input` unrolls."""
        steps, batch = self.dones.shape
        return self.obs.view(steps, batch, -1), self.h0, self.dones


class RolloutStorage:
    def __init__(
        self,
        num_steps: int,
        num_envs: int,
        n_obs: int,
        n_critic_obs: int,
        n_actions: int,
        device: torch.device | str = "cpu",
    ):
        t, n = num_steps, num_envs
        self.num_steps, self.num_envs = t, n
        self.device = torch.device(device)

        def zeros(*shape: int) -> torch.Tensor:
            return torch.zeros(*shape, device=self.device)

        self.obs = zeros(t, n, n_obs)
        self.critic_obs = zeros(t, n, n_critic_obs)
        self.actions = zeros(t, n, n_actions)
        self.log_prob = zeros(t, n)
        self.mean = zeros(t, n, n_actions)
        self.std = zeros(t, n, n_actions)
        self.expert = zeros(t, n, n_actions)
        self.values = zeros(t, n)
        self.rewards = zeros(t, n)
        self.dones = zeros(t, n)
        self.advantages = zeros(t, n)
        self.returns = zeros(t, n)
        self.h0: torch.Tensor | None = None
        """A recurrent actor's memory at the rollout's first step (set by the algorithm)."""
        self.step = 0

    def add(self, **fields: torch.Tensor) -> None:
        for name, value in fields.items():
            getattr(self, name)[self.step].copy_(value)
        self.step += 1

    def write(self, step: int, rows: slice, **fields: torch.Tensor) -> None:
        """Fields of rollout step `step` for the simulations `rows` only (a group of them
        acting or recording on its own); `filled` marks the rollout complete after."""
        for name, value in fields.items():
            getattr(self, name)[step, rows].copy_(value)

    def filled(self) -> None:
        """Every step was written with `write`: the rollout is complete."""
        self.step = self.num_steps

    def compute_returns(self, last_values: torch.Tensor, gamma: float, lam: float) -> None:
        """Generalized advantage estimation; returns = advantages + values.

        Time-limit truncations were already folded into the rewards by bootstrapping,
        so `dones` here cuts the trace for both kinds of episode end.
        """
        gae = torch.zeros(self.num_envs, device=self.device)
        for t in reversed(range(self.num_steps)):
            next_values = last_values if t == self.num_steps - 1 else self.values[t + 1]
            not_done = 1.0 - self.dones[t]
            delta = self.rewards[t] + gamma * next_values * not_done - self.values[t]
            gae = delta + gamma * lam * not_done * gae
            self.advantages[t] = gae
        self.returns = self.advantages + self.values
        adv = self.advantages
        self.advantages = (adv - adv.mean()) / (adv.std() + 1e-8)
        self.step = 0

    def minibatches(self, num_minibatches: int, generator: torch.Generator) -> Iterator[Batch]:
        """Shuffled single steps; whole trajectories per simulation where the rollout
        holds a recurrent actor's memory (`h0`), since its updates replay the memory."""
        if self.h0 is not None:
            yield from self._trajectory_minibatches(num_minibatches, generator)
            return
        total = self.num_steps * self.num_envs
        size = total // num_minibatches
        order = torch.randperm(total, generator=generator).to(self.device)
        flat = {name: value.flatten(0, 1) for name, value in self._per_step().items()}
        for i in range(num_minibatches):
            idx = order[i * size : (i + 1) * size]
            yield Batch(**{name: value[idx] for name, value in flat.items()})

    def _per_step(self) -> dict[str, torch.Tensor]:
        """Batch's per-step fields, (num_steps, num_envs, ...) each."""
        return {
            "obs": self.obs,
            "critic_obs": self.critic_obs,
            "actions": self.actions,
            "old_log_prob": self.log_prob,
            "old_mean": self.mean,
            "old_std": self.std,
            "old_values": self.values,
            "advantages": self.advantages,
            "returns": self.returns,
            "expert": self.expert,
        }

    def _trajectory_minibatches(
        self, num_minibatches: int, generator: torch.Generator
    ) -> Iterator[Batch]:
        """Minibatches of whole simulations' trajectories (all T steps of num_envs /
        num_minibatches simulations), with their starting memory and episode ends."""
        if num_minibatches > self.num_envs:
            raise ValueError(
                f"ppo.num_minibatches={num_minibatches}: a recurrent actor's minibatches "
                f"are whole simulations' trajectories, and there are {self.num_envs}"
            )
        size = self.num_envs // num_minibatches
        order = torch.randperm(self.num_envs, generator=generator).to(self.device)
        per_step = self._per_step()
        for i in range(num_minibatches):
            envs = order[i * size : (i + 1) * size]
            fields = {name: v[:, envs].flatten(0, 1) for name, v in per_step.items()}
            yield Batch(**fields, h0=self.h0[envs], dones=self.dones[:, envs])
