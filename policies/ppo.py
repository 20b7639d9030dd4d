"""Proximal policy optimization with an adaptive-KL learning rate."""

from __future__ import annotations

import numpy as np
import torch
from torch.distributions import Normal

from simreal.policies.config import PPOConfig
from simreal.policies.distributed import Distributed
from simreal.policies.models import ActorCritic
from simreal.policies.normalizer import ReturnScaler
from simreal.policies.storage import Batch, RolloutStorage
from simreal.policies.vecenv import StepResult

LR_BOUNDS = (1e-5, 1e-2)


class PPO:
    def __init__(
        self,
        model: ActorCritic,
        cfg: PPOConfig,
        storage: RolloutStorage,
        seed: int,
        distributed: Distributed | None = None,
    ):
        """`distributed` (torchrun ranks) averages gradients, normalizer statistics and the
        KL over ranks; `seed` should already differ per rank."""
        self.model = model
        self.distributed = distributed or Distributed()
        self.cfg = cfg
        self.storage = storage
        self.learning_rate = cfg.learning_rate
        critic_lr = cfg.critic_learning_rate or cfg.learning_rate
        actor_params = [
            p
            for name, p in model.named_parameters()
            if not name.startswith(("critic.", "estimator."))
        ]
        groups = [
            {"params": actor_params, "lr": cfg.learning_rate},
            {"params": list(model.critic.parameters()), "lr": critic_lr},
        ]
        if model.estimator is not None:  # a third group, so a model without keeps two
            estimator_lr = cfg.estimator_learning_rate or cfg.learning_rate
            groups.append({"params": list(model.estimator.parameters()), "lr": estimator_lr})
        self.optimizer = torch.optim.Adam(groups)
        self.generator = torch.Generator().manual_seed(seed)
        if cfg.normalize_returns:
            # A submodule of the model, so checkpoints carry its statistics; only where
            # enabled, so the tasks' checkpoints keep their keys.
            model.return_scaler = ReturnScaler(storage.num_envs, cfg.gamma, cfg.return_clip).to(
                storage.device
            )
        self.memory = model.initial_state(storage.num_envs) if model.recurrent else None
        """A recurrent actor's memory of every simulation while acting (zeroed where an
        episode ends; not checkpointed: training restarts its simulations on resume)."""
        if self.memory is not None:  # the memory each rollout starts from, for its update
            storage.h0 = torch.zeros_like(self.memory)
        self.group_of_action = self._group_membership(cfg, model.action_groups)
        if self.group_of_action is not None:
            self.group_of_action = self.group_of_action.to(storage.device)

    @property
    def steps_per_iteration(self) -> int:
        return self.cfg.num_steps_per_env

    @property
    def wants_expert(self) -> bool:
        """Whether act() needs the expert's actions (the imitation term is on)."""
        return self.cfg.imitation_coef > 0

    def begin_iteration(self, iteration: int, progress: float = 0.0) -> None:
        """Under the linear schedule, the rate for this iteration from the fraction of the
        budget already spent (`progress`, 0..1), and whether the actor still reads the true
        values of what its estimator estimates (`estimator_warmup_iterations`)."""
        if self.cfg.schedule == "linear":
            self.set_learning_rate(self.cfg.learning_rate * max(1.0 - progress, 0.0))
        self.model.reads_truth = iteration < self.cfg.estimator_warmup_iterations

    @torch.no_grad()
    def act(
        self, obs: torch.Tensor, critic_obs: torch.Tensor, expert: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Sample actions for a rollout step and record what the update will need
        (`expert`: the expert's actions in these states, for the imitation term)."""
        actions, self._pending = self._sample(obs, critic_obs, slice(None), self.storage.step)
        if expert is not None:  # else the storage's expert rows stay zero, unused
            self._pending["expert"] = expert
        return actions

    @torch.no_grad()
    def act_rows(
        self, step: int, rows: slice, obs: torch.Tensor, critic_obs: torch.Tensor
    ) -> torch.Tensor:
        """`act` for the simulations `rows` alone, written straight into rollout step
        `step` (a group of `OverlappedEnv` acts as soon as its own step has ended)."""
        actions, pending = self._sample(obs, critic_obs, rows, step)
        self.storage.write(step, rows, **pending)
        return actions

    def _sample(
        self, obs: torch.Tensor, critic_obs: torch.Tensor, rows: slice, step: int
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Actions for the simulations `rows` at rollout step `step`."""
        if self.cfg.normalizer_update == "step":
            self.distributed.update_normalizers(
                [
                    (self.model.obs_normalizer, self.model.normalizer_input(obs, critic_obs)),
                    (self.model.critic_obs_normalizer, critic_obs),
                ]
            )
        if self.memory is None:
            dist = self.model.distribution(obs, critic_obs)
        else:
            if step == 0:  # the update replays the memory from here
                self.storage.h0[rows] = self.memory[rows]
            dist, self.memory[rows] = self.model.distribution_step(obs, self.memory[rows])
        # Drawn on the CPU generator whatever the device: the same noise on CPU and GPU.
        noise = torch.randn(dist.mean.shape, generator=self.generator).to(obs.device)
        actions = dist.mean + dist.stddev * noise
        return actions, {
            "obs": obs,
            "critic_obs": critic_obs,
            "actions": actions,
            "log_prob": dist.log_prob(actions).sum(-1),
            "mean": dist.mean,
            "std": dist.stddev,
            "values": self.model.value(critic_obs),
        }

    @torch.no_grad()
    def record(self, step: StepResult) -> None:
        """Store the environment's answer; bootstrap the value where a time limit cut in."""
        rewards, dones = self._targets(step, slice(None))
        self.storage.add(rewards=rewards, dones=dones, **self._pending)
        if self.memory is not None:  # a new episode starts with an empty memory
            self.memory *= (1.0 - dones).unsqueeze(1)

    @torch.no_grad()
    def record_rows(self, step_index: int, rows: slice, step: StepResult) -> None:
        """`record` for the simulations `rows` alone (their group's StepResult)."""
        rewards, dones = self._targets(step, rows)
        self.storage.write(step_index, rows, rewards=rewards, dones=dones)
        if self.memory is not None:
            self.memory[rows] *= (1.0 - dones).unsqueeze(1)

    def _targets(self, step: StepResult, rows: slice) -> tuple[torch.Tensor, torch.Tensor]:
        """The step's rewards (scaled, bootstrapped where a time limit cut in) and dones."""
        device = self.storage.device
        rewards = torch.from_numpy(np.asarray(step.reward, dtype=np.float32)).to(device)
        truncated = np.asarray(step.truncated)
        done = (np.asarray(step.terminated) | truncated).astype(np.float32)
        dones = torch.from_numpy(done).to(device)
        scaler = getattr(self.model, "return_scaler", None)
        if scaler is not None:  # before the bootstrap, which is in scaled units already
            rewards = scaler(rewards, dones, rows)
        if truncated.any():
            cut = np.flatnonzero(truncated)
            ids = torch.from_numpy(cut).to(device)
            final = torch.from_numpy(np.asarray(step.final_critic_obs, dtype=np.float32)[cut]).to(
                device
            )
            rewards = rewards.clone()
            rewards[ids] += self.cfg.gamma * self.model.value(final)
        return rewards, dones

    @torch.no_grad()
    def finish_rollout(self, critic_obs: torch.Tensor) -> None:
        self.distributed.sync_normalizers()
        last_values = self.model.value(critic_obs)
        self.storage.compute_returns(last_values, self.cfg.gamma, self.cfg.lam)

    def update(self, imitation: float | None = None) -> dict[str, float]:
        """PPO epochs over the stored rollout; `imitation` (default: the config's
        imitation_coef) weights the DAgger term (the squared distance of the mean action
        from the stored expert actions)."""
        cfg = self.cfg
        imitation = cfg.imitation_coef if imitation is None else imitation
        totals = {"value_loss": 0.0, "surrogate_loss": 0.0, "entropy": 0.0, "kl": 0.0}
        if imitation > 0:
            totals["imitation_loss"] = 0.0
        estimates = self.model.estimator is not None
        if estimates:
            totals["estimation_loss"] = 0.0
        n = 0
        batches = (
            b
            for _ in range(cfg.num_epochs)
            for b in self.storage.minibatches(cfg.num_minibatches, self.generator)
        )
        for b in batches:
            if b.h0 is None:
                dist, estimate = self.model.distribution_and_estimate(b.obs, b.critic_obs)
            else:
                dist, estimate = self.model.sequence_distribution(*b.sequences()), None
            values = self.model.value(b.critic_obs)
            entropy = dist.entropy().sum(-1).mean()
            kl = self._kl(b.old_mean, b.old_std, dist.mean, dist.stddev)
            surrogate = self._surrogate(dist, b)
            if cfg.clip_value_loss:
                clipped = b.old_values + (values - b.old_values).clamp(-cfg.clip, cfg.clip)
                value_loss = torch.max(
                    (values - b.returns).square(), (clipped - b.returns).square()
                ).mean()
            else:
                value_loss = (values - b.returns).square().mean()
            loss = surrogate + cfg.value_coef * value_loss - cfg.entropy_coef * entropy
            if imitation > 0:
                imitation_loss = (dist.mean - b.expert).square().sum(-1).mean()
                loss = loss + imitation * imitation_loss
            if estimates:
                estimation_loss = self.model.estimation_loss(b.obs, b.critic_obs, estimate)
                loss = loss + cfg.estimation_coef * estimation_loss
            self.optimizer.zero_grad()
            loss.backward()
            # The learning rate only acts in step(): adapting it after backward lets the
            # ranks' mean KL travel with their gradients.
            (kl,) = self.distributed.average_gradients(self.model, (kl,))
            if cfg.max_kl is not None and n > 0 and kl > cfg.max_kl:
                break  # every rank sees the same mean KL: all stop here
            if cfg.schedule == "adaptive":
                self._adapt_learning_rate(kl)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
            self.optimizer.step()
            totals["value_loss"] += value_loss.item()
            totals["surrogate_loss"] += surrogate.item()
            totals["entropy"] += entropy.item()
            totals["kl"] += kl
            if imitation > 0:
                totals["imitation_loss"] += imitation_loss.item()
            if estimates:
                totals["estimation_loss"] += estimation_loss.item()
            n += 1
        if cfg.normalizer_update == "rollout":
            self._take_in_rollout_observations()
        out = {k: v / n for k, v in totals.items()}
        out["learning_rate"] = self.learning_rate
        out["action_std"] = float(self.model.actor.std().detach().mean())
        return out

    @torch.no_grad()
    def _take_in_rollout_observations(self) -> None:
        """`normalizer_update=rollout`: merge the rollout's observations into the
        normalizers once its update is done (every rank's, as at the step-wise sync)."""
        storage = self.storage
        self.distributed.update_normalizers(
            [
                (
                    self.model.obs_normalizer,
                    self.model.normalizer_input(
                        storage.obs.flatten(0, 1), storage.critic_obs.flatten(0, 1)
                    ),
                ),
                (self.model.critic_obs_normalizer, storage.critic_obs.flatten(0, 1)),
            ]
        )
        self.distributed.sync_normalizers()

    @staticmethod
    def _group_membership(
        cfg: PPOConfig, action_groups: dict[str, tuple[int, ...]]
    ) -> torch.Tensor | None:
        """(actions, groups) 0/1 matrix that sums per-action log-ratios into each group's
        under `ratio=per_group`; None where the ratio is the joint one (also the coupled
        actor's single group)."""
        if cfg.ratio == "joint" or len(action_groups) == 1:
            return None
        n_actions = sum(len(idx) for idx in action_groups.values())
        membership = torch.zeros(n_actions, len(action_groups))
        for column, idx in enumerate(action_groups.values()):
            membership[list(idx), column] = 1.0
        return membership

    def _surrogate(self, dist: Normal, b: Batch) -> torch.Tensor:
        """The clipped surrogate loss: over the joint ratio, or summed over the action
        groups' own ratios (`ppo.ratio`)."""
        per_action = dist.log_prob(b.actions)
        if self.group_of_action is None:
            log_ratio = (per_action.sum(-1) - b.old_log_prob).unsqueeze(-1)
        else:
            old = Normal(b.old_mean, b.old_std, validate_args=False).log_prob(b.actions)
            log_ratio = (per_action - old) @ self.group_of_action
        ratio = torch.exp(log_ratio)
        advantages = b.advantages.unsqueeze(-1)
        clip = self.cfg.clip
        return (
            torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip, 1 + clip))
            .sum(-1)
            .mean()
        )

    @staticmethod
    def _kl(old_mean, old_std, mean, std) -> float:
        with torch.no_grad():
            kl = (
                torch.log(std / old_std)
                + (old_std.square() + (old_mean - mean).square()) / (2.0 * std.square())
                - 0.5
            ).sum(-1)
            return float(kl.mean())

    def _adapt_learning_rate(self, kl: float) -> None:
        if kl > 2.0 * self.cfg.desired_kl:
            self.learning_rate = max(LR_BOUNDS[0], self.learning_rate / 1.5)
        elif 0.0 < kl < 0.5 * self.cfg.desired_kl:
            self.learning_rate = min(LR_BOUNDS[1], self.learning_rate * 1.5)
        self.set_learning_rate(self.learning_rate)

    def set_learning_rate(self, learning_rate: float) -> None:
        """The actor's rate; the critic's too unless it has a fixed one of its own."""
        self.learning_rate = learning_rate
        actor, critic = self.optimizer.param_groups[:2]
        actor["lr"] = learning_rate
        if self.cfg.critic_learning_rate is None:
            critic["lr"] = learning_rate
