"""Token embedding: one network for observations that end in categorical token ids.

A caption (the lane-keeping task's semantic channel) reaches the policy as integer
token ids inside the flat float observation. The encoder looks each id up in a learned
embedding table and puts the embeddings, in token order, beside the other (numeric)
observations for the MLP that follows. The ids must bypass observation normalization:
`raw_columns` names them for the normalizer.

`structure["embedding"]` is [start, count, vocab, dim]: token ids occupy columns
start..start+count of the observation, take values 0..vocab-1, and embed into dim.
"""

from __future__ import annotations

import torch
from torch import nn

from simreal.policies.attention import flag_columns


def raw_columns(structure: dict | None) -> tuple[int, ...]:
    """Observation columns that hold token ids or presence flags (left unnormalized)."""
    if not structure or "embedding" not in structure:
        return flag_columns(structure)
    start, count = int(structure["embedding"][0]), int(structure["embedding"][1])
    return tuple(range(start, start + count))


class TokenEmbedding(nn.Module):
    def __init__(self, structure: dict, n_in: int):
        super().__init__()
        start, count, vocab, dim = (int(v) for v in structure["embedding"])
        if start + count > n_in:
            raise ValueError(f"embedding columns {start}..{start + count} exceed {n_in} values")
        self.start, self.count, self.vocab, self.dim = start, count, vocab, dim
        self.table = nn.Embedding(vocab, dim)
        self.n_in = n_in

    @property
    def out_size(self) -> int:
        return self.n_in - self.count + self.count * self.dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, n_in) -> (B, out_size): numeric columns, then the token embeddings."""
        end = self.start + self.count
        ids = obs[:, self.start : end].round().clamp(0, self.vocab - 1).long()
        numeric = torch.cat([obs[:, : self.start], obs[:, end:]], dim=1)
        return torch.cat([numeric, self.table(ids).flatten(1)], dim=1)
