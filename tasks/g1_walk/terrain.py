"""Rough ground for `g1-walk`: one periodic MuJoCo height field of gentle slopes and
small steps, shared by every simulation, on which a walking robot never reaches an edge.

The heights are one square tile of side `period_m`, repeated 3 x 3 (the field spans
3 periods). The tile is periodic by construction: its slopes are a sum of a few Fourier
modes whose wavelengths divide the period, and its steps are square plates on a grid that
divides it. So the ground around a point and around that point moved by a whole period
are the same, and a robot leaving the middle tile is carried back by one period
(`HeightField.wrap`) without anything under or around it changing.

Slopes: the modes are scaled so that the steepest gradient of the smooth part is
`tan(slope_max_deg)`. Steps: every plate of `step_tile_m` is raised by a uniform draw in
[0, step_max_m], so neighbouring plates differ by at most `step_max_m`. A height field is
a triangle mesh over its grid, so a step is a ramp one grid cell wide (5 cm over 10 cm at
the defaults), not a vertical edge.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

TERRAINS = ("flat", "rough")


@dataclass
class TerrainConfig:
    """The ground: `flat` (MuJoCo's plane, as the other G1 tasks) or `rough`."""

    kind: str = "rough"
    period_m: float = 8.0
    resolution_m: float = 0.1
    slope_max_deg: float = 10.0
    step_max_m: float = 0.05
    step_tile_m: float = 1.0
    modes: int = 3
    """Fourier modes per axis of the slopes (wavelengths period/1 .. period/modes)."""
    seed: int = 0
    """The ground's own seed: every simulation and every run with this config walks the
    same ground (training and evaluation both use it)."""

    def validate(self) -> None:
        if self.kind not in TERRAINS:
            raise ValueError(f"terrain.kind must be one of {TERRAINS}, got {self.kind!r}")
        if self.resolution_m <= 0 or self.period_m <= 0:
            raise ValueError("terrain: period_m and resolution_m must be positive")
        cells = self.period_m / self.resolution_m
        if abs(cells - round(cells)) > 1e-6 or round(cells) < 4:
            raise ValueError(
                f"terrain: period_m {self.period_m} must be a whole number (>= 4) of "
                f"resolution_m {self.resolution_m}"
            )
        plates = self.period_m / self.step_tile_m
        if self.step_tile_m <= 0 or abs(plates - round(plates)) > 1e-6:
            raise ValueError(
                f"terrain: step_tile_m {self.step_tile_m} must divide period_m {self.period_m}"
            )
        if not 0.0 <= self.slope_max_deg < 45.0:
            raise ValueError(f"terrain.slope_max_deg must be in [0, 45), got {self.slope_max_deg}")
        if self.step_max_m < 0 or self.modes < 1:
            raise ValueError("terrain: step_max_m must be >= 0 and modes >= 1")


def periodic_tile(cfg: TerrainConfig) -> np.ndarray:
    """(n, n) heights (m) of one period, rows along y and columns along x, n = period /
    resolution; zero mean; wraps around seamlessly in both directions."""
    n = round(cfg.period_m / cfg.resolution_m)
    rng = np.random.default_rng(cfg.seed)
    coords = np.arange(n) * cfg.resolution_m
    x, y = np.meshgrid(coords, coords)  # x along columns, y along rows
    smooth = np.zeros((n, n))
    gx = np.zeros((n, n))
    gy = np.zeros((n, n))
    for kx in range(-cfg.modes, cfg.modes + 1):
        for ky in range(0, cfg.modes + 1):
            if ky == 0 and kx <= 0:
                continue  # the constant and each mode's mirror image
            amplitude = rng.normal() / np.hypot(kx, ky)  # long waves carry the slope
            phase = rng.uniform(0.0, 2.0 * np.pi)
            wx, wy = 2.0 * np.pi * kx / cfg.period_m, 2.0 * np.pi * ky / cfg.period_m
            angle = wx * x + wy * y + phase
            smooth += amplitude * np.cos(angle)
            gx -= amplitude * wx * np.sin(angle)
            gy -= amplitude * wy * np.sin(angle)
    steepest = np.sqrt(gx**2 + gy**2).max()
    smooth *= np.tan(np.radians(cfg.slope_max_deg)) / steepest
    per_plate = round(cfg.step_tile_m / cfg.resolution_m)
    plates = n // per_plate
    raised = rng.uniform(0.0, cfg.step_max_m, (plates, plates))
    steps = np.kron(raised, np.ones((per_plate, per_plate)))
    tile = smooth + steps
    return tile - tile.mean()


@dataclass
class HeightField:
    """The ground of a `rough` terrain: 3 x 3 periods of `periodic_tile`, centred on the
    world origin."""

    cfg: TerrainConfig

    @cached_property
    def tile(self) -> np.ndarray:
        return periodic_tile(self.cfg)

    @cached_property
    def heights(self) -> np.ndarray:
        """(m, m) grid heights, m = 3 n + 1 (the last row and column close the field)."""
        tiled = np.tile(self.tile, (3, 3))
        return np.pad(tiled, ((0, 1), (0, 1)), mode="wrap")

    @property
    def half_extent_m(self) -> float:
        return 1.5 * self.cfg.period_m

    def mjcf_asset(self, name: str = "terrain") -> str:
        """The MJCF `<hfield>` element. MuJoCo rescales elevation data to [0, 1] and reads
        its first row as the far (+y) edge: the rows go in reversed, already in [0, 1],
        with the span as the field's height (and the geom lowered by the lowest point,
        `mjcf_geom_pos`)."""
        h = self.heights
        low, span = h.min(), max(h.max() - h.min(), 1e-6)
        rows, cols = h.shape
        values = " ".join(f"{v:.5f}" for v in np.flipud((h - low) / span).ravel())
        r = self.half_extent_m
        return (
            f'<hfield name="{name}" nrow="{rows}" ncol="{cols}" '
            f'size="{r:.6g} {r:.6g} {span:.6g} 0.1" elevation="{values}"/>'
        )

    def mjcf_geom_pos(self) -> str:
        return f"0 0 {self.heights.min():.6g}"

    def height_at(self, xy: np.ndarray) -> np.ndarray:
        """Ground height (...,) under points xy (..., 2), interpolated on MuJoCo's own
        triangles (each grid cell split along the diagonal from its (x0, y0) corner to
        its (x1, y1) corner), so it matches what the robot stands on."""
        res = self.cfg.resolution_m
        n = self.tile.shape[0]
        # Periodic: look up in one tile (the field is that tile repeated).
        u = np.mod(xy[..., 0] + self.half_extent_m, self.cfg.period_m) / res
        v = np.mod(xy[..., 1] + self.half_extent_m, self.cfg.period_m) / res
        i0, j0 = np.floor(v).astype(int) % n, np.floor(u).astype(int) % n
        fu, fv = u - np.floor(u), v - np.floor(v)
        i1, j1 = (i0 + 1) % n, (j0 + 1) % n
        t = self.tile
        h00, h01, h10, h11 = t[i0, j0], t[i0, j1], t[i1, j0], t[i1, j1]
        lower = fu >= fv  # below the diagonal: triangle (00, 01, 11)
        return np.where(
            lower,
            h00 + fu * (h01 - h00) + fv * (h11 - h01),
            h00 + fv * (h10 - h00) + fu * (h11 - h10),
        )

    def wrap(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) whole-period shifts that bring xy back into the middle tile
        ([-period/2, period/2) on each axis); zero for points already there."""
        p = self.cfg.period_m
        return -p * np.floor((xy + p / 2) / p)
