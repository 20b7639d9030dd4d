"""Distances to each drone's goal around the columns (geodesic), for the path-progress
reward of `quad-swarm`.

The straight-line progress reward pays a drone for closing on its goal through a column
as much as for going round it; a drone whose straight line is blocked learns to stall in
front of the column (docs/quad-swarm.md). The geodesic distance pays only for progress
along a collision-free path. It is a reward term: it reads the room's column layout, which
the policy never sees (the policy still observes only its nearest columns and drones).

Method: the room's floor plan as a grid of `cell` metre squares; a square is blocked when
its centre lies within `clearance` of a present column's axis. Dijkstra (SciPy's
csgraph) over the 8-connected free squares from each goal's square gives a distance map
per goal; blocked squares take the value of the nearest free square plus the straight
distance to it, so a drone grazing a column still has a finite, sensible distance.
Columns span floor to ceiling, so the path is planar and the height difference enters
as sqrt(planar^2 + dz^2).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

_STEPS = ((1, 0), (0, 1), (1, 1), (1, -1))
"""Half of the 8-neighbourhood; the graph is undirected."""


class FloorGrid:
    """The room's floor plan [-h, h]^2 in square cells and its neighbour edges."""

    def __init__(self, half_size: float, cell: float):
        self.half_size, self.cell = half_size, cell
        self.n = int(np.ceil(2.0 * half_size / cell))
        centres = -half_size + cell * (np.arange(self.n) + 0.5)
        self.xy = np.stack(np.meshgrid(centres, centres, indexing="ij"), axis=-1)
        idx = np.arange(self.n * self.n).reshape(self.n, self.n)
        heads, tails, lengths = [], [], []
        for di, dj in _STEPS:
            a = idx[max(0, -di) : self.n - max(0, di), max(0, -dj) : self.n - max(0, dj)]
            b = idx[max(0, di) : self.n + min(0, di), max(0, dj) : self.n + min(0, dj)]
            heads.append(a.ravel())
            tails.append(b.ravel())
            lengths.append(np.full(a.size, cell * np.hypot(di, dj)))
        self.heads = np.concatenate(heads)
        self.tails = np.concatenate(tails)
        self.lengths = np.concatenate(lengths)

    def index(self, xy: np.ndarray) -> np.ndarray:
        """Flat cell index of points xy (..., 2), clipped into the room."""
        ij = np.floor((xy + self.half_size) / self.cell).astype(int)
        ij = np.clip(ij, 0, self.n - 1)
        return ij[..., 0] * self.n + ij[..., 1]

    def blocked(self, columns_xy: np.ndarray, present: np.ndarray, clearance: float) -> np.ndarray:
        """(n, n) bool: cells whose centre is within `clearance` of a present column."""
        cols = columns_xy[present]
        if cols.size == 0:
            return np.zeros((self.n, self.n), dtype=bool)
        d2 = np.sum(np.square(self.xy[:, :, None, :] - cols[None, None]), axis=-1)
        return d2.min(axis=-1) < clearance**2

    def distance_maps(self, blocked: np.ndarray, goals_xy: np.ndarray) -> np.ndarray:
        """(k, n * n) geodesic distance (m) from each goal (k, 2) to every cell."""
        free = ~blocked.ravel()
        keep = free[self.heads] & free[self.tails]
        size = self.n * self.n
        graph = csr_matrix(
            (self.lengths[keep], (self.heads[keep], self.tails[keep])), shape=(size, size)
        )
        sources = self.index(goals_xy)
        maps = dijkstra(graph, directed=False, indices=sources)
        if blocked.any():
            # Blocked cells: the nearest free cell's distance plus the way to it.
            gap, (ni, nj) = ndimage.distance_transform_edt(blocked, return_indices=True)
            nearest = (ni * self.n + nj).ravel()
            maps = np.where(free, maps, maps[:, nearest] + gap.ravel() * self.cell)
        unreachable = ~np.isfinite(maps)
        if unreachable.any():
            # Cells walled off from a goal: fall back to the straight distance.
            straight = np.linalg.norm(self.xy.reshape(1, -1, 2) - goals_xy[:, None, :], axis=-1)
            maps = np.where(unreachable, straight, maps)
        return maps.astype(np.float32)


def path_distance(
    maps: np.ndarray, grid: FloorGrid, pos: np.ndarray, goal: np.ndarray
) -> np.ndarray:
    """(...,) distance along the free path from each drone's position pos (..., 3) to its
    goal (..., 3), maps (..., n * n) being each drone's goal map; bilinear between cell
    centres, so progress accrues smoothly rather than a cell at a time."""
    f = (pos[..., :2] + grid.half_size) / grid.cell - 0.5
    f = np.clip(f, 0.0, grid.n - 1.0)
    lo = np.minimum(np.floor(f).astype(int), grid.n - 2)
    t = f - lo
    planar = 0.0
    for di in (0, 1):
        for dj in (0, 1):
            w = (t[..., 0] if di else 1 - t[..., 0]) * (t[..., 1] if dj else 1 - t[..., 1])
            cell = (lo[..., 0] + di) * grid.n + lo[..., 1] + dj
            planar = planar + w * np.take_along_axis(maps, cell[..., None], axis=-1)[..., 0]
    return np.sqrt(np.square(planar) + np.square(pos[..., 2] - goal[..., 2]))
