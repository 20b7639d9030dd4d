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

A recurrent actor (model.memory_size) learns on whole rollouts instead of single states:
the buffer keeps the latest rollouts as (T, num_envs) trajectories with the memory each
simulation started them with and where its episodes ended, and each gradient step
replays the memory along randomly chosen simulations' trajectories, so the loss reaches
back through up to T steps of what the actor remembered.
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
        num_envs: int = 0,
    ):
        """`optimizer`: the run's Adam, whose first parameter group is the actor's (the
        checkpoint then holds its state as it does for PPO); `num_envs`: the simulations
        acting (a recurrent actor's trajectories are stored per simulation)."""
        self.model, self.cfg, self.optimizer = model, cfg, optimizer
        self.distributed = distributed or Distributed()
        self.recurrent = model.recurrent
        if self.recurrent:
            self._trajectories = _Trajectories(
                cfg.steps_per_iteration, num_envs, n_obs, n_actions, model, cfg.buffer_rows
            )
        else:
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
        if self.recurrent:
            mean = self._trajectories.act(obs, expert)
        else:
            self._store(obs, expert)
            mean = self.model.act_inference(obs)
        take_expert = torch.rand(obs.shape[0], 1, generator=self.generator) < self.expert_share
        action = torch.where(take_expert, expert, mean)
        return action + self.cfg.action_noise * torch.randn(action.shape, generator=self.generator)

    def record(self, step) -> None:
        """Rewards are not learned from: act() already stored the labelled state; a
        recurrent actor's trajectories take the episode ends."""
        if self.recurrent:
            self._trajectories.record(np.asarray(step.terminated) | np.asarray(step.truncated))

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
            if self.recurrent:
                mean, expert = self._trajectories.sample(cfg.batch_size, self.generator)
            else:
                idx = torch.randint(
                    0, self.size, (min(cfg.batch_size, self.size),), generator=self.generator
                )
                mean, expert = self.model.act_inference(self.obs[idx]), self.expert[idx]
            loss = (mean - expert).square().sum(-1).mean()
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


class _Trajectories:
    """A recurrent actor's DAgger buffer: the latest rollouts, (T, num_envs) each, with
    the memory every simulation began them with and its episode ends, and the memory the
    actor carries while acting."""

    def __init__(
        self,
        steps: int,
        num_envs: int,
        n_obs: int,
        n_actions: int,
        model: ActorCritic,
        buffer_rows: int,
    ):
        if num_envs < 1:
            raise ValueError("a recurrent DAgger learner needs the number of simulations")
        self.model = model
        slots = max(1, buffer_rows // (steps * num_envs))
        self.obs = torch.zeros(slots, steps, num_envs, n_obs)
        self.expert = torch.zeros(slots, steps, num_envs, n_actions)
        self.dones = torch.zeros(slots, steps, num_envs)
        self.h0 = torch.zeros(slots, num_envs, model.memory_size)
        self.memory = model.initial_state(num_envs)
        self.slot, self.t, self.filled = 0, 0, 0

    def act(self, obs: torch.Tensor, expert: torch.Tensor) -> torch.Tensor:
        """The actor's mean for this step (its memory moves on), the labelled step stored."""
        if self.t == 0:
            self.h0[self.slot] = self.memory
        self.obs[self.slot, self.t] = obs
        self.expert[self.slot, self.t] = expert
        mean, self.memory = self.model.step(obs, self.memory)
        return mean

    def record(self, done: np.ndarray) -> None:
        ended = torch.from_numpy(done.astype(np.float32))
        self.dones[self.slot, self.t] = ended
        self.memory = self.memory * (1.0 - ended).unsqueeze(1)
        self.t += 1
        if self.t == self.obs.shape[1]:  # the rollout is complete: the next one goes on
            self.t = 0
            self.filled = min(self.filled + 1, self.obs.shape[0])
            self.slot = (self.slot + 1) % self.obs.shape[0]

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The actor's means along a random rollout's trajectories of about
        batch_size / T simulations (its memory replayed from the stored start), and the
        expert's actions there, both (T * B, n_actions)."""
        steps, num_envs = self.obs.shape[1], self.obs.shape[2]
        slot = int(torch.randint(0, max(self.filled, 1), (1,), generator=generator))
        width = min(num_envs, max(1, batch_size // steps))
        envs = torch.randperm(num_envs, generator=generator)[:width]
        x = self.model.sequence_input(
            self.obs[slot][:, envs], self.h0[slot, envs], self.dones[slot][:, envs]
        )
        return self.model.actor(x), self.expert[slot][:, envs].flatten(0, 1)
