"""DAgger: the policy learns the environment's expert actions on the states it visits.

Why: where a task has a privileged expert (quad-swarm's teacher reads the whole column
layout, which no drone observes), supervised learning on the expert's actions needs far
fewer samples than PPO on the reward, and visiting the student's own states (Ross,
Gordon and Bagnell 2011) teaches it to recover from its own mistakes instead of only
copying clean demonstrations. Each iteration: roll out a mixture (the expert's action
with probability beta, which falls linearly from 1 to 0 over `expert_iterations`, else
the policy's mean, plus Gaussian `action_noise` for coverage), label every visited state
with the expert's action, keep the latest `buffer_rows` labelled states, and take
`gradient_steps` Adam steps on the squared action error over random batches. The critic
is left alone; the actor's mean is what evaluation, export and deploy run.
"""

from __future__ import annotations

import numpy as np
import torch

from simreal.policies.config import DAggerConfig
from simreal.policies.distributed import Distributed
from simreal.policies.models import ActorCritic


class DAgger:
    def __init__(
        self,
        model: ActorCritic,
        cfg: DAggerConfig,
        optimizer: torch.optim.Optimizer,
        n_obs: int,
        n_actions: int,
        seed: int,
        distributed: Distributed | None = None,
    ):
        """`optimizer`: the run's Adam, whose first parameter group is the actor's (the
        checkpoint then holds its state as it does for PPO)."""
        self.model, self.cfg, self.optimizer = model, cfg, optimizer
        self.distributed = distributed or Distributed()
        self.obs = torch.zeros(cfg.buffer_rows, n_obs)
        self.expert = torch.zeros(cfg.buffer_rows, n_actions)
        self.size = 0
        self.head = 0
        self.expert_share = 1.0
        self.generator = torch.Generator().manual_seed(seed)
        self.set_learning_rate(cfg.learning_rate)

    @property
    def learning_rate(self) -> float:
        return self.optimizer.param_groups[0]["lr"]

    def set_learning_rate(self, learning_rate: float) -> None:
        self.optimizer.param_groups[0]["lr"] = learning_rate

    def beta(self, iteration: int) -> float:
        """Probability that the expert's action is executed in this iteration's rollout."""
        if self.cfg.expert_iterations == 0:
            return 0.0
        return max(0.0, 1.0 - iteration / self.cfg.expert_iterations)

    # The rollout interface the runner drives, shared with PPO.
    @property
    def steps_per_iteration(self) -> int:
        return self.cfg.steps_per_iteration

    wants_expert = True

    def begin_iteration(self, iteration: int, progress: float = 0.0) -> None:
        self.expert_share = self.beta(iteration)

    @torch.no_grad()
    def act(
        self, obs: torch.Tensor, critic_obs: torch.Tensor, expert: torch.Tensor
    ) -> torch.Tensor:
        """The action to execute (the expert's with probability `expert_share`), and the
        (state, expert action) pair stored. The critic's observation is not used."""
        self.distributed.update_normalizers([(self.model.obs_normalizer, obs)])
        self._store(obs, expert)
        mean = self.model.act_inference(obs)
        take_expert = torch.rand(obs.shape[0], 1, generator=self.generator) < self.expert_share
        action = torch.where(take_expert, expert, mean)
        return action + self.cfg.action_noise * torch.randn(action.shape, generator=self.generator)

    def record(self, step) -> None:
        """Rewards are not learned from: act() already stored the labelled state."""

    def finish_rollout(self, critic_obs: torch.Tensor) -> None:
        """No returns to compute."""

    def _store(self, obs: torch.Tensor, expert: torch.Tensor) -> None:
        rows = torch.arange(self.head, self.head + obs.shape[0]) % self.cfg.buffer_rows
        self.obs[rows] = obs
        self.expert[rows] = expert
        self.head = int(rows[-1] + 1) % self.cfg.buffer_rows
        self.size = min(self.size + obs.shape[0], self.cfg.buffer_rows)

    def update(self) -> dict[str, float]:
        """Gradient steps on the labelled states so far; the mean squared action error
        (summed over action dimensions) of the last quarter of them."""
        cfg = self.cfg
        losses = []
        for _ in range(cfg.gradient_steps):
            idx = torch.randint(
                0, self.size, (min(cfg.batch_size, self.size),), generator=self.generator
            )
            error = self.model.act_inference(self.obs[idx]) - self.expert[idx]
            loss = error.square().sum(-1).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.distributed.average_gradients(self.model, ())
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
            self.optimizer.step()
            losses.append(loss.item())
        return {
            "imitation_loss": float(np.mean(losses[-max(1, len(losses) // 4) :])),
            "learning_rate": self.learning_rate,
            "action_std": float(self.model.actor.std().detach().mean()),
        }
