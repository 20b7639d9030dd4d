"""Data-parallel PPO on torch.distributed: every rank runs its own simulations, one model.

Launched by torchrun (`torchrun --nproc-per-node N -m simreal train ...`), which sets
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Without those variables the
run is a single process and every hook here is a no-op, so the trainer has one code path.

What keeps the ranks one model:
- rank 0's initial parameters are broadcast once;
- gradients are averaged (one flat all-reduce per minibatch) before clipping, so every
  rank takes the same optimizer step from the same state;
- the observation normalizers merge the statistics of every rank's batch (sums in
  float64), so they stay identical without sending observations;
- the KL that drives the adaptive learning rate is averaged over ranks;
- rank 0 decides when to stop (evaluation, budgets) and tells the others.

Backends: NCCL when CUDA is available (one rank per GPU, LOCAL_RANK picks it), else gloo.
The model itself trains on the CPU today; under NCCL the collectives stage their flat
buffers on the rank's GPU.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from simreal.policies.normalizer import EmpiricalNormalization

SEED_STRIDE = 1000
"""Rank r seeds its simulations and action noise with seed + r * SEED_STRIDE."""


@dataclass
class Distributed:
    """This process's place in the job (rank 0 of 1 when not launched by torchrun)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None

    @classmethod
    def from_env(cls) -> Distributed:
        """Join the torchrun job described by the environment (initializing once)."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size == 1:
            return cls()
        rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if not dist.is_initialized():
            if backend == "nccl":
                torch.cuda.set_device(local_rank)
            dist.init_process_group(backend=backend)
        return cls(rank, world_size, local_rank, dist.get_backend())

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
            return torch.device("cuda", self.local_rank)
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

    def average_gradients(self, module: nn.Module) -> None:
        """Replace every gradient by its mean over ranks (one flat all-reduce)."""
        if not self.enabled:
            return
        params = [p for p in module.parameters() if p.requires_grad]
        grads = [
            torch.zeros_like(p) if p.grad is None else p.grad for p in params
        ]  # every rank sends the same layout
        flat = torch.cat([g.reshape(-1) for g in grads]).to(self.device)
        dist.all_reduce(flat)
        flat /= self.world_size
        flat = flat.cpu() if flat.device != params[0].device else flat
        offset = 0
        for p, g in zip(params, grads, strict=True):
            n = g.numel()
            p.grad = flat[offset : offset + n].view_as(p).to(p.device)
            offset += n

    def mean(self, value: float) -> float:
        """The mean of a scalar over ranks."""
        if not self.enabled:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return float(t.item()) / self.world_size

    def update_normalizers(self, pairs: list[tuple[EmpiricalNormalization, torch.Tensor]]) -> None:
        """Merge every rank's batch into each normalizer (the same merge on every rank);
        one all-reduce carries the counts, sums and sums of squares of all of them."""
        if not self.enabled:
            for normalizer, x in pairs:
                normalizer.update(x)
            return
        parts = []
        for _, x in pairs:
            x64 = x.detach().to(torch.float64)
            parts += [
                torch.tensor([x.shape[0]], dtype=torch.float64),
                x64.sum(0),
                x64.square().sum(0),
            ]
        stats = torch.cat(parts).to(self.device)
        dist.all_reduce(stats)
        stats = stats.cpu()
        offset = 0
        for normalizer, x in pairs:
            d = x.shape[1]
            n = stats[offset]
            total, squares = (
                stats[offset + 1 : offset + 1 + d],
                stats[offset + 1 + d : offset + 1 + 2 * d],
            )
            offset += 1 + 2 * d
            mean = total / n
            var = (squares / n - mean.square()).clamp_min(0.0)
            normalizer.merge(int(n), mean.to(x.dtype), var.to(x.dtype))

    def decide(self, value: Any) -> Any:
        """Rank 0's `value` on every rank (a stop decision, a run directory)."""
        if not self.enabled:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self) -> None:
        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


def _flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """{"train.ppo.gamma": 0.99, ...}: dotted keys, JSON-comparable values."""
    if isinstance(config, dict):
        out: dict[str, Any] = {}
        for key, value in config.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): json.loads(json.dumps(config, default=str))}
