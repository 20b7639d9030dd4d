"""Actor-critic networks, including the decoupled-body actor.

The decoupled actor gives every action group (for a humanoid: lower body, waist,
upper body) its own MLP and its own action std; every group sees the whole
observation, and their outputs are scattered into the group's action slots. One
loss trains all of them together. The coupled actor is the one-group special case.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.distributions import Normal

from simreal.policies.attention import EntityAttention
from simreal.policies.config import ModelConfig
from simreal.policies.embedding import TokenEmbedding, raw_columns
from simreal.policies.normalizer import EmpiricalNormalization

ACTIVATIONS = {"elu": nn.ELU, "tanh": nn.Tanh, "relu": nn.ReLU}


def body(n_in: int, hidden: tuple[int, ...], n_out: int, cfg: ModelConfig, structure: dict | None):
    """An MLP, behind an entity-attention encoder when the observation has a structure
    (or behind a token embedding when the structure declares caption tokens)."""
    if structure is not None and "embedding" in structure:
        embed = TokenEmbedding(structure, n_in)
        return nn.Sequential(embed, mlp(embed.out_size, hidden, n_out, cfg.activation))
    if structure is None or cfg.encoder == "mlp":
        return mlp(n_in, hidden, n_out, cfg.activation)
    encoder = EntityAttention(structure, cfg.attention_dim, ACTIVATIONS[cfg.activation])
    if encoder.in_size != n_in:
        raise ValueError(
            f"observation structure covers {encoder.in_size} values, observation has {n_in}"
        )
    return nn.Sequential(encoder, mlp(encoder.out_size, hidden, n_out, cfg.activation))


def mlp(n_in: int, hidden: tuple[int, ...], n_out: int, activation: str) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(n_in, width), ACTIVATIONS[activation]()]
        n_in = width
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


def orthogonal_init(net: nn.Module, output_gain: float) -> None:
    """Orthogonal weights (gain sqrt(2) for hidden layers, `output_gain` for the last) and
    zero biases on every linear layer of `net`: the initialization the reference PPO
    implementations use on the MuJoCo benchmarks, where it keeps early updates small."""
    linears = [m for m in net.modules() if isinstance(m, nn.Linear)]
    for i, layer in enumerate(linears):
        nn.init.orthogonal_(layer.weight, gain=output_gain if i == len(linears) - 1 else 2**0.5)
        nn.init.zeros_(layer.bias)


def _plain_mlp(net: nn.Module) -> bool:
    """An `mlp()`: linear layers with one activation between each (no encoder in front)."""
    return isinstance(net, nn.Sequential) and isinstance(net[0], nn.Linear)


def stacked_mlp(nets: list[nn.Sequential], x: torch.Tensor) -> torch.Tensor:
    """(B, G, max_out) outputs of G same-shaped `mlp()`s on one input x (B, n): each layer
    of all of them as one batched matrix product over stacked weights (outputs narrower
    than the widest are padded with zero rows), so the G actors cost one call per layer
    instead of G. The weights stay the MLPs' own parameters (stacked per call, with
    gradients), so checkpoints, optimizers and the ONNX export see the same modules.

    A decoupled actor does G times the hidden-layer arithmetic of a coupled one; this
    removes the per-group call overhead, not that arithmetic."""
    h = x.unsqueeze(0)  # (1, B, n): broadcast over the G groups in the first product
    for same in zip(*nets, strict=True):
        if isinstance(same[0], nn.Linear):
            rows = max(layer.out_features for layer in same)
            weight = torch.stack([_pad_rows(layer.weight, rows) for layer in same])
            bias = torch.stack([_pad_rows(layer.bias, rows) for layer in same])
            h = torch.baddbmm(bias.unsqueeze(1), h.expand(len(same), -1, -1), weight.mT)
        else:
            h = same[0](h)  # the activation (the same module type in every group)
    return h.transpose(0, 1)


def _pad_rows(t: torch.Tensor, rows: int) -> torch.Tensor:
    return t if t.shape[0] == rows else torch.cat([t, t.new_zeros(rows - t.shape[0], *t.shape[1:])])


class GroupedActor(nn.Module):
    """One MLP and one log-std vector per action group; outputs land in the group's slots."""

    def __init__(
        self,
        n_obs: int,
        groups: dict[str, tuple[int, ...]],
        cfg: ModelConfig,
        structure: dict | None = None,
    ):
        super().__init__()
        self.group_names = list(groups)
        self.nets = nn.ModuleDict(
            {
                name: body(n_obs, cfg.actor_hidden, len(idx), cfg, structure)
                for name, idx in groups.items()
            }
        )
        self.log_std = nn.ParameterDict(
            {
                name: nn.Parameter(
                    torch.full((len(idx),), float(torch.log(torch.tensor(cfg.init_std))))
                )
                for name, idx in groups.items()
            }
        )
        order = [i for idx in groups.values() for i in idx]
        if sorted(order) != list(range(len(order))):
            raise ValueError(f"action groups must cover 0..{len(order) - 1} exactly once: {groups}")
        self.register_buffer("slot_of", torch.argsort(torch.tensor(order)))
        self.max_log_std = math.log(cfg.max_std) if cfg.max_std is not None else math.inf
        for net in self.nets.values():
            last = [m for m in net.modules() if isinstance(m, nn.Linear)][-1]
            nn.init.orthogonal_(last.weight, gain=0.01)
            nn.init.zeros_(last.bias)

        self.can_stack = len(groups) > 1 and all(_plain_mlp(n) for n in self.nets.values())
        """The groups' MLPs can run as one batched computation (`stacked_mlp`): not for one
        group, nor for bodies behind an encoder (attention, token embedding)."""
        self.stack = False
        """Run them stacked (opt-in). Measured with bench/decoupled_update.py, stacking
        does not pay: on a CPU the update is bound by the arithmetic, which stacking does
        not reduce (2.15x coupled against 1.73x per group, 32k samples, 2 threads; 1.86x the
        multiply-adds), and on an H200 the padded batched products cost more than the
        per-group kernels they replace (1.43x against 1.17x at 131k samples, 1.22x both at
        32k; results/bench/gpu/log.txt)."""
        widths = [len(idx) for idx in groups.values()]
        pad = max(widths)
        self.register_buffer(
            "stacked_slots",
            torch.tensor([g * pad + k for g, w in enumerate(widths) for k in range(w)])[
                self.slot_of
            ],
            persistent=False,
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Mean action (B, n_actions) in the environment's action order."""
        exporting = torch.jit.is_tracing() or torch.onnx.is_in_onnx_export()
        if self.can_stack and self.stack and not exporting:
            nets = [self.nets[name] for name in self.group_names]
            return stacked_mlp(nets, obs).flatten(1).index_select(1, self.stacked_slots)
        stacked = torch.cat([self.nets[name](obs) for name in self.group_names], dim=1)
        return stacked.index_select(1, self.slot_of)

    def std(self) -> torch.Tensor:
        stacked = torch.cat([self.log_std[name] for name in self.group_names])
        return stacked.index_select(0, self.slot_of).clamp(max=self.max_log_std).exp()


class ActorCritic(nn.Module):
    """Gaussian policy over normalized observations, with an asymmetric critic."""

    def __init__(
        self,
        n_obs: int,
        n_critic_obs: int,
        action_groups: dict[str, tuple[int, ...]],
        cfg: ModelConfig,
        structure: dict | None = None,
        estimate_columns: Sequence[int] = (),
    ):
        """`structure` (optional) splits the observation into self and token sets for the
        actor's entity-attention encoder. The critic stays an MLP: it serves only in
        training, where the number of tokens is fixed, and attention would triple the
        cost of every update on a CPU.

        `estimate_columns` (optional): columns of the critic's observation (privileged
        quantities the robot does not measure, e.g. the external force on the torso) that
        a state estimator infers from the actor's observation; the actor reads the
        observation followed by the estimate. The estimator is trained by regression on
        the true values (`estimation_loss`), concurrently with the policy, and is part of
        the exported policy, whose input stays the observation alone."""
        super().__init__()
        n_actions = sum(len(idx) for idx in action_groups.values())
        groups = action_groups if cfg.arch == "decoupled" else {"all": tuple(range(n_actions))}
        self.action_groups = {name: tuple(idx) for name, idx in groups.items()}
        self.n_obs = n_obs
        n_est = len(estimate_columns)
        if n_est and structure is not None:
            raise ValueError("a state estimator needs a plain observation (no structure)")
        n_mem = cfg.memory_size
        if n_mem and (n_est or structure is not None):
            raise ValueError(
                "model.memory_size: a recurrent actor needs a plain observation and no "
                "state estimator (its memory is what infers the unobserved state)"
            )
        self.register_buffer(
            "estimate_columns",
            torch.tensor(list(estimate_columns), dtype=torch.long),
            persistent=False,  # the checkpoint's model_spec holds them
        )
        floor = cfg.normalizer_var_floor
        # One normalizer for the observation and the estimated quantities (after it): the
        # estimate is regressed, and fed to the actor, in the true values' normalized units.
        self.obs_normalizer = EmpiricalNormalization(
            n_obs + n_est, floor, raw=raw_columns(structure)
        )
        self.critic_obs_normalizer = EmpiricalNormalization(n_critic_obs, floor)
        self.memory_size = n_mem
        self.memory = nn.GRUCell(n_obs, n_mem) if n_mem else None
        """The actor's memory (model.memory_size); its state is the caller's to carry
        (`step`, `sequence_input`), so one model serves any number of simulations."""
        self.actor = GroupedActor(n_obs + n_est + n_mem, groups, cfg, structure)
        self.critic = mlp(n_critic_obs, cfg.critic_hidden, 1, cfg.activation)
        self.estimator = mlp(n_obs, cfg.estimator_hidden, n_est, cfg.activation) if n_est else None
        self.reads_truth = False
        """The actor reads the true values of the estimated quantities where the caller
        passes them (training's warm-up, `ppo.estimator_warmup_iterations`); never in
        `act_inference`, which is what is exported and deployed."""
        if cfg.init == "orthogonal":
            for net in self.actor.nets.values():
                orthogonal_init(net, output_gain=0.01)
            orthogonal_init(self.critic, output_gain=1.0)

    def actor_input(
        self, obs: torch.Tensor, critic_obs: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The actor's input: the normalized observation, followed by the estimator's
        estimate where there is one (detached: the policy loss does not train it), or by
        the true values from `critic_obs` while `reads_truth` (the estimator's warm-up)."""
        return self._actor_input(obs, critic_obs, keep_estimate=False)[0]

    def _actor_input(
        self, obs: torch.Tensor, critic_obs: torch.Tensor | None, keep_estimate: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`actor_input` and the estimate with its graph (None without an estimator), so
        that an update runs the estimator once for both the policy and its own loss;
        while the actor reads the truth, the estimator runs only if `keep_estimate`."""
        if self.estimator is None:
            return self.obs_normalizer(obs), None
        x = self.obs_normalizer.columns(obs, 0)
        if self.reads_truth and critic_obs is not None:
            truth = critic_obs.index_select(1, self.estimate_columns)
            estimate = self.estimator(x) if keep_estimate else None
            return torch.cat([x, self.obs_normalizer.columns(truth, self.n_obs)], dim=1), estimate
        estimate = self.estimator(x)
        return torch.cat([x, estimate.detach()], dim=1), estimate

    def normalizer_input(self, obs: torch.Tensor, critic_obs: torch.Tensor) -> torch.Tensor:
        """What the observation normalizer takes in: the observation, and the true values
        of the estimated quantities after it."""
        if self.estimator is None:
            return obs
        return torch.cat([obs, critic_obs.index_select(1, self.estimate_columns)], dim=1)

    def estimation_loss(
        self, obs: torch.Tensor, critic_obs: torch.Tensor, estimate: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Mean squared error of the estimate against the true values, normalized units;
        `estimate`: the one `distribution_and_estimate` already computed for `obs`."""
        truth = critic_obs.index_select(1, self.estimate_columns)
        target = self.obs_normalizer.columns(truth, self.n_obs)
        if estimate is None:
            estimate = self.estimator(self.obs_normalizer.columns(obs, 0))
        return (estimate - target).square().mean()

    def estimate(self, obs: torch.Tensor) -> torch.Tensor:
        """The estimated quantities in their own units (e.g. N), for logs and evaluation."""
        norm = self.obs_normalizer
        n = self.n_obs
        scaled = self.estimator(norm.columns(obs, 0))
        return scaled * torch.sqrt(norm.var[n:] + norm.eps) + norm.mean[n:]

    def distribution(self, obs: torch.Tensor, critic_obs: torch.Tensor | None = None) -> Normal:
        """The policy's action distribution; `critic_obs` serves only the estimator's
        warm-up (`reads_truth`)."""
        self._feed_forward("distribution")
        return self._distribution(self.actor_input(obs, critic_obs))

    def distribution_and_estimate(
        self, obs: torch.Tensor, critic_obs: torch.Tensor | None = None
    ) -> tuple[Normal, torch.Tensor | None]:
        """`distribution` and the estimator's output with its graph (None without one),
        for `estimation_loss` in the same update step."""
        x, estimate = self._actor_input(obs, critic_obs, keep_estimate=True)
        return self._distribution(x), estimate

    def _distribution(self, actor_input: torch.Tensor) -> Normal:
        mean = self.actor(actor_input)
        # No argument validation: its checks (finite, positive) cost about 20 us per
        # call (45 against 25 us with log_prob, one row), at every rollout step and
        # minibatch; the std is positive by construction.
        return Normal(mean, self.actor.std().expand_as(mean), validate_args=False)

    def act_inference(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action: the mean, as deployed (a feed-forward actor; a recurrent
        one acts with `step`, which carries its state)."""
        self._feed_forward("act_inference")
        return self.actor(self.actor_input(obs))

    @property
    def recurrent(self) -> bool:
        return self.memory is not None

    def _feed_forward(self, what: str) -> None:
        if self.memory is not None:
            raise TypeError(
                f"{what}: this actor has memory (model.memory_size={self.memory_size}); "
                "act with step(obs, h), which carries its state"
            )

    def initial_state(self, batch: int) -> torch.Tensor:
        """The memory at an episode's start: zeros (batch, memory_size)."""
        return torch.zeros(batch, self.memory_size, device=self.obs_normalizer.mean.device)

    def _remember(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The actor's input (normalized observation, then the new memory) and the memory."""
        x = self.obs_normalizer(obs)
        h_next = self.memory(x, h)
        return torch.cat([x, h_next], dim=1), h_next

    def step(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A recurrent actor's deterministic action and its next memory (what is exported
        and deployed); `h` (batch, memory_size): the memory before this step."""
        x, h_next = self._remember(obs, h)
        return self.actor(x), h_next

    def distribution_step(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[Normal, torch.Tensor]:
        """A recurrent actor's action distribution at one step, and its next memory."""
        x, h_next = self._remember(obs, h)
        return self._distribution(x), h_next

    def sequence_input(
        self, obs: torch.Tensor, h0: torch.Tensor, dones: torch.Tensor
    ) -> torch.Tensor:
        """The actor's inputs (T * B, n) along stored trajectories, time-major, for an
        update: obs (T, B, n_obs) from the memory `h0` (B, memory_size) they started with,
        the memory zeroed after every step whose `dones` (T, B) is 1, as it was while
        acting. Gradients flow back through the whole sequence (truncated at its start)."""
        steps, batch = dones.shape
        x = self.obs_normalizer(obs.flatten(0, 1)).view(steps, batch, -1)
        h, inputs = h0, []
        for t in range(steps):
            h = self.memory(x[t], h)
            inputs.append(torch.cat([x[t], h], dim=1))
            h = h * (1.0 - dones[t]).unsqueeze(1)
        return torch.cat(inputs, dim=0)

    def sequence_distribution(
        self, obs: torch.Tensor, h0: torch.Tensor, dones: torch.Tensor
    ) -> Normal:
        """`sequence_input`'s action distributions, (T * B, n_actions)."""
        return self._distribution(self.sequence_input(obs, h0, dones))

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.critic_obs_normalizer(critic_obs)).squeeze(-1)

    def update_normalizers(self, obs: torch.Tensor, critic_obs: torch.Tensor) -> None:
        self.obs_normalizer.update(self.normalizer_input(obs, critic_obs))
        self.critic_obs_normalizer.update(critic_obs)
