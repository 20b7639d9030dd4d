"""Entity attention: one network for observations made of a self part and sets of tokens.

A swarm drone sees itself plus its k nearest neighbours and nearest obstacles. Each
token set is embedded token by token with a shared MLP and pooled twice: with attention
whose query is the self embedding (what matters to this drone, in proportion) and with an
element-wise max (the extreme of each feature, e.g. the closest call, which a softmax
average would dilute). Both pools ignore token order and count, so the same weights
serve any swarm size.

`structure` describes the flat observation: {"self": n_self, "tokens": [[name, count,
size(, flag)], ...]}, sets following the self part in order. `flag`, when given, is the
index within a token of its presence flag (1 present, 0 padding): padding tokens are
left out of both pools, and the flag columns reach the network unnormalized
(`flag_columns`).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def token_sets(structure: dict) -> list[tuple[str, int, int, int | None]]:
    """(name, count, size, flag index or None) of each token set."""
    sets = []
    for entry in structure["tokens"]:
        name, count, size = entry[0], int(entry[1]), int(entry[2])
        flag = int(entry[3]) if len(entry) > 3 else None
        if flag is not None and not 0 <= flag < size:
            raise ValueError(f"token set {name!r}: flag index {flag} outside its {size} values")
        sets.append((str(name), count, size, flag))
    return sets


def flag_columns(structure: dict | None) -> tuple[int, ...]:
    """Observation columns holding presence flags (to be left unnormalized)."""
    if not structure or "tokens" not in structure:
        return ()
    columns, start = [], int(structure["self"])
    for _, count, size, flag in token_sets(structure):
        if flag is not None:
            columns += [start + i * size + flag for i in range(count)]
        start += count * size
    return tuple(columns)


class EntityAttention(nn.Module):
    def __init__(self, structure: dict, dim: int, activation: type[nn.Module]):
        super().__init__()
        self.self_size = int(structure["self"])
        self.sets = token_sets(structure)
        self.dim = dim
        self.self_net = nn.Sequential(nn.Linear(self.self_size, dim), activation())
        self.token_nets = nn.ModuleList(
            nn.Sequential(nn.Linear(size, dim), activation(), nn.Linear(dim, dim), activation())
            for _, _, size, _ in self.sets
        )
        self.queries = nn.ModuleList(nn.Linear(dim, dim) for _ in self.sets)
        self.keys = nn.ModuleList(nn.Linear(dim, dim) for _ in self.sets)
        self.values = nn.ModuleList(nn.Linear(dim, dim) for _ in self.sets)

    @property
    def in_size(self) -> int:
        return self.self_size + sum(count * size for _, count, size, _ in self.sets)

    @property
    def out_size(self) -> int:
        return self.dim * (1 + 2 * len(self.sets))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, in_size) -> (B, out_size): self embedding, then per set its attention pool
        and its max pool (zeros for a set with no token present)."""
        embedded = self.self_net(obs[:, : self.self_size])
        pooled = [embedded]
        start = self.self_size
        for i, (_, count, size, flag) in enumerate(self.sets):
            tokens = obs[:, start : start + count * size].reshape(-1, count, size)
            start += count * size
            h = self.token_nets[i](tokens)  # (B, count, dim)
            present = (
                tokens[..., flag] > 0.5
                if flag is not None
                else torch.ones(h.shape[:2], dtype=torch.bool, device=h.device)
            )
            any_present = present.any(dim=1, keepdim=True)  # (B, 1)
            query = self.queries[i](embedded).unsqueeze(1)  # (B, 1, dim)
            scores = (query * self.keys[i](h)).sum(-1) / math.sqrt(self.dim)
            scores = scores.masked_fill(~present, -1e9)
            weights = torch.softmax(scores, dim=-1).unsqueeze(-1)
            attended = (weights * self.values[i](h)).sum(1) * any_present
            # ELU outputs exceed -1, so -2 marks padding below any real embedding.
            strongest = h.masked_fill(~present.unsqueeze(-1), -2.0).amax(dim=1) * any_present
            pooled += [attended, strongest]
        return torch.cat(pooled, dim=-1)
