"""Entity attention: one network for observations made of a self part and sets of tokens.

A swarm drone sees itself plus its k nearest neighbours and nearest obstacles. Each
token set is embedded token by token with a shared MLP and pooled with attention whose
query is the self embedding, so the output size does not depend on how many tokens
there are and the same weights serve any swarm size.

`structure` describes the flat observation: {"self": n_self, "tokens": [[name, count,
size], ...]}, sets following the self part in order.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class EntityAttention(nn.Module):
    def __init__(self, structure: dict, dim: int, activation: type[nn.Module]):
        super().__init__()
        self.self_size = int(structure["self"])
        self.sets = [
            (str(name), int(count), int(size)) for name, count, size in structure["tokens"]
        ]
        self.dim = dim
        self.self_net = nn.Sequential(nn.Linear(self.self_size, dim), activation())
        self.token_nets = nn.ModuleList(
            nn.Sequential(nn.Linear(size, dim), activation(), nn.Linear(dim, dim), activation())
            for _, _, size in self.sets
        )
        self.queries = nn.ModuleList(nn.Linear(dim, dim) for _ in self.sets)
        self.keys = nn.ModuleList(nn.Linear(dim, dim) for _ in self.sets)
        self.values = nn.ModuleList(nn.Linear(dim, dim) for _ in self.sets)

    @property
    def in_size(self) -> int:
        return self.self_size + sum(count * size for _, count, size in self.sets)

    @property
    def out_size(self) -> int:
        return self.dim * (1 + len(self.sets))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, in_size) -> (B, out_size): self embedding and one pooled vector per set."""
        embedded = self.self_net(obs[:, : self.self_size])
        pooled = [embedded]
        start = self.self_size
        for i, (_, count, size) in enumerate(self.sets):
            tokens = obs[:, start : start + count * size].reshape(-1, count, size)
            start += count * size
            h = self.token_nets[i](tokens)  # (B, count, dim)
            query = self.queries[i](embedded).unsqueeze(1)  # (B, 1, dim)
            scores = (query * self.keys[i](h)).sum(-1) / math.sqrt(self.dim)
            weights = torch.softmax(scores, dim=-1).unsqueeze(-1)
            pooled.append((weights * self.values[i](h)).sum(1))
        return torch.cat(pooled, dim=-1)
