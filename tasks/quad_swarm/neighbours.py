"""Where the other drones of a simulation are, seen from each drone: the one pairwise
computation that the collision test, the neighbour tokens and the expert's drone push
share, so that they cannot disagree on what "the other drones" means."""

from __future__ import annotations

import numpy as np


def other_drones(pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pos (S, N, 3) -> rel (S, N, N, 3), rel[s, i, j] = pos[s, j] - pos[s, i] (drone j
    as seen from drone i), and dist (S, N, N) its length, infinite for i == j so that
    a drone is never its own nearest neighbour."""
    n = pos.shape[1]
    rel = pos[:, None, :, :] - pos[:, :, None, :]
    dist = np.linalg.norm(rel, axis=-1)
    dist[:, np.arange(n), np.arange(n)] = np.inf
    return rel, dist
