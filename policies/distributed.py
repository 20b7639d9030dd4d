"""Data-parallel PPO on torch.distributed: every rank runs its own simulations, one model.

Launched by torchrun (`torchrun --nproc-per-node N -m simreal train ...`), which sets
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Without those variables the
run is a single process and every hook here is a no-op, so the trainer has one code path.

What keeps the ranks one model:
- rank 0's initial parameters are broadcast once;
- gradients are averaged before clipping, so every rank takes the same optimizer step
  from the same state; the minibatch KL that drives the adaptive learning rate rides in
  the same all-reduce (one per minibatch), so every rank sets the same rate;
- the observation normalizers merge the statistics of every rank's batch (sums in
  float64) once per rollout, step by step, so they stay identical without sending
  observations (within a rollout they hold still: under torchrun they lag a single
  process's by at most one rollout);
- every synchronization is one collective, few per iteration (a rollout's normalizer
  statistics, one per minibatch, one stop decision): each waits for the slowest rank.
- rank 0 decides when to stop (evaluation, budgets) and tells the others.

Backend and device follow where each rank's learner runs (`rank_placement`), not merely
whether CUDA exists: a CPU learner joins with gloo and never touches CUDA; GPU learners
share the node's GPUs round-robin, and use NCCL only when every rank on the node has a
GPU of its own (NCCL refuses two ranks on one GPU), gloo otherwise. Under NCCL the
collectives stage their flat buffers on the rank's GPU, under gloo on the CPU. Where the
learner runs is `train.device` (`learner_kind`: auto takes the GPU when there is one).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from simreal.policies.normalizer import EmpiricalNormalization

SEED_STRIDE = 1000
"""Rank r seeds its simulations and action noise with seed + r * SEED_STRIDE."""

LEARNER_DEVICES = ("cpu", "cuda")
DEVICE_CHOICES = ("auto", *LEARNER_DEVICES)


def learner_kind(device: str, cuda_available: bool) -> str:
    """ "cpu" or "cuda" for `train.device` (auto: the GPU when there is one); a pure
    function, so the choice is testable without CUDA."""
    if device not in DEVICE_CHOICES:
        raise ValueError(f"train.device must be one of {list(DEVICE_CHOICES)}, got {device!r}")
    if device == "cuda" and not cuda_available:
        raise ValueError("train.device=cuda, but torch sees no CUDA device (use auto or cpu)")
    if device == "auto":
        return "cuda" if cuda_available else "cpu"
    return device


@dataclass(frozen=True)
class RankPlacement:
    """Where one rank's learner runs and which backend its collectives use."""

    backend: str
    """"gloo" or "nccl"."""
    device: str
    """The learner's torch device: "cpu" or "cuda:<index>"."""


def rank_placement(
    local_rank: int, local_world_size: int, learner: str, num_gpus: int
) -> RankPlacement:
    """The backend and device of rank `local_rank` of `local_world_size` on one node.

    A pure function of its arguments (no CUDA call), so every mix is testable anywhere:
    CPU learners take gloo whatever GPUs exist; GPU learners take GPU local_rank mod
    num_gpus, and NCCL only when there are at least as many GPUs as ranks on the node.
    """
    if learner not in LEARNER_DEVICES:
        raise ValueError(f"learner device must be one of {list(LEARNER_DEVICES)}, got {learner!r}")
    if not 0 <= local_rank < local_world_size:
        raise ValueError(f"local rank {local_rank} outside 0..{local_world_size - 1}")
    if learner == "cpu":
        return RankPlacement("gloo", "cpu")
    if num_gpus < 1:
        raise ValueError("the learner is asked to run on cuda, but this machine has no GPU")
    backend = "nccl" if local_world_size <= num_gpus else "gloo"
    return RankPlacement(backend, f"cuda:{local_rank % num_gpus}")


@dataclass
class Distributed:
    """This process's place in the job (rank 0 of 1 when not launched by torchrun)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None
    learner_device: str = "cpu"
    """Where this rank's model and update run (`rank_placement`)."""
    _pending_stats: list[torch.Tensor] = field(default_factory=list, repr=False)
    _pending_normalizers: list[EmpiricalNormalization] = field(default_factory=list, repr=False)

    @classmethod
    def from_env(cls, learner: str = "cpu") -> Distributed:
        """Join the torchrun job described by the environment (initializing once), with
        this rank's learner on `learner` ("cpu" or "cuda")."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size == 1:
            return cls(learner_device="cuda:0" if learner == "cuda" else "cpu")
        rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
        local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", str(world_size)))
        num_gpus = torch.cuda.device_count() if learner == "cuda" else 0
        place = rank_placement(local_rank, local_world_size, learner, num_gpus)
        if not dist.is_initialized():
            if place.device != "cpu":
                torch.cuda.set_device(torch.device(place.device))
            dist.init_process_group(backend=place.backend)
        return cls(rank, world_size, local_rank, dist.get_backend(), place.device)

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> torch.device:
        """Where collective buffers live: the rank's GPU under NCCL, else the CPU."""
        if self.backend == "nccl":
            return torch.device(self.learner_device)
        return torch.device("cpu")

    def seed(self, seed: int) -> int:
        """This rank's seed: different simulations and noise on every rank."""
        return seed + self.rank * SEED_STRIDE

    def check_same_config(self, config: dict[str, Any]) -> None:
        """Refuse to start when ranks disagree on the run config, naming what differs."""
        if not self.enabled:
            return
        mine = _flatten(config)
        everyone: list[dict[str, Any] | None] = [None] * self.world_size
        dist.all_gather_object(everyone, mine)
        reference = everyone[0]
        for rank, other in enumerate(everyone):
            diff = sorted(
                key
                for key in set(reference) | set(other)
                if reference.get(key, "<absent>") != other.get(key, "<absent>")
            )
            if diff:
                details = "; ".join(
                    f"{k}: rank 0 has {reference.get(k, '<absent>')!r}, "
                    f"rank {rank} has {other.get(k, '<absent>')!r}"
                    for k in diff
                )
                raise ValueError(f"torchrun ranks disagree on the run config: {details}")

    def broadcast_parameters(self, module: nn.Module) -> None:
        """Give every rank rank 0's parameters and buffers."""
        if not self.enabled:
            return
        with torch.no_grad():
            for tensor in [*module.parameters(), *module.buffers()]:
                buffer = tensor.detach().to(self.device)
                dist.broadcast(buffer, src=0)
                tensor.copy_(buffer)

    def average_gradients(self, module: nn.Module, scalars: tuple[float, ...] = ()) -> tuple:
        """Replace every gradient by its mean over ranks, and return the means of
        `scalars` (e.g. the minibatch KL): one flat all-reduce carries both."""
        if not self.enabled:
            return scalars
        params = [p for p in module.parameters() if p.requires_grad]
        grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in params]
        flat = torch.cat(
            [*(g.reshape(-1) for g in grads), torch.tensor(scalars, dtype=grads[0].dtype)]
        ).to(self.device)
        dist.all_reduce(flat)
        flat = (flat / self.world_size).to(params[0].device)
        offset = 0
        for p, g in zip(params, grads, strict=True):
            n = g.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n
        return tuple(float(v) for v in flat[offset:])

    def update_normalizers(self, pairs: list[tuple[EmpiricalNormalization, torch.Tensor]]) -> None:
        """One rollout step's observations. A single process merges them at once; ranks
        keep their batch statistics (count, sum, sum of squares, float64) and merge
        everyone's at `sync_normalizers`, so the normalizers change only between
        rollouts and one all-reduce per rollout keeps them identical."""
        if not self.enabled:
            for normalizer, x in pairs:
                normalizer.update(x)
            return
        parts = []
        for _, x in pairs:
            x64 = x.detach().to(torch.float64)
            parts += [x64.new_tensor([x.shape[0]]), x64.sum(0), x64.square().sum(0)]
        self._pending_stats.append(torch.cat(parts))
        self._pending_normalizers = [normalizer for normalizer, _ in pairs]

    def sync_normalizers(self) -> None:
        """Merge every rank's pending statistics, step by step as one process would."""
        if not self.enabled or not self._pending_stats:
            return
        stats = torch.stack(self._pending_stats).to(self.device)
        dist.all_reduce(stats)
        stats = stats.cpu()
        for row in stats:
            offset = 0
            for normalizer in self._pending_normalizers:
                d = normalizer.mean.shape[0]
                n = row[offset]
                total = row[offset + 1 : offset + 1 + d]
                squares = row[offset + 1 + d : offset + 1 + 2 * d]
                offset += 1 + 2 * d
                mean = total / n
                var = (squares / n - mean.square()).clamp_min(0.0)
                like = normalizer.mean
                normalizer.merge(int(n), mean.to(like), var.to(like))
        self._pending_stats = []

    def decide(self, value: Any) -> Any:
        """Rank 0's `value` on every rank (a stop decision, a run directory)."""
        if not self.enabled:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def stop_together(self, reason: str | None) -> str | None:
        """Rank 0's stop decision on every rank (one small broadcast per iteration); other
        ranks learn that it stopped, its reason is rank 0's to log."""
        if not self.enabled:
            return reason
        flag = torch.tensor([reason is not None], dtype=torch.int32, device=self.device)
        dist.broadcast(flag, src=0)
        if self.is_main or not flag.item():
            return reason if self.is_main else None
        return "rank 0 stopped"

    def close(self, clean: bool = True) -> None:
        """Leave the job. After a clean run every rank first waits at a barrier, so none
        tears its process group down while another still works (rank 0 saves and plots
        after the last iteration): a gloo rank that destroyed its group and exited early
        could abort in teardown ("terminate called without an active exception"). After
        an error there is no barrier: the other ranks may never reach it."""
        if not (self.enabled and dist.is_initialized()):
            return
        if clean:
            dist.barrier()
        dist.destroy_process_group()


def _flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """{"train.ppo.gamma": 0.99, ...}: dotted keys, JSON-comparable values."""
    if isinstance(config, dict):
        out: dict[str, Any] = {}
        for key, value in config.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): json.loads(json.dumps(config, default=str))}
