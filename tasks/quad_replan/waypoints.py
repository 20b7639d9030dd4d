"""Random waypoint sequences for quad-replan, drawn from a seed so that held-out sets
are reproducible: a set is (seed, count, number of waypoints)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WaypointBox:
    """Where waypoints lie (m) and how far apart consecutive ones are."""

    low: tuple[float, float, float] = (-2.0, -2.0, 0.5)
    high: tuple[float, float, float] = (2.0, 2.0, 2.0)
    min_step: float = 0.5
    max_step: float = 1.5

    def validate(self) -> None:
        if not all(lo < hi for lo, hi in zip(self.low, self.high, strict=True)):
            raise ValueError(f"waypoint box: need low < high per axis, got {self.low}, {self.high}")
        if self.low[2] < 0.3:
            raise ValueError(f"waypoint box: low z {self.low[2]} m is too close to the floor")
        if not 0 < self.min_step <= self.max_step:
            raise ValueError(
                f"waypoint box: need 0 < min_step <= max_step, got {self.min_step}, {self.max_step}"
            )


def sample(rng: np.random.Generator, count: int, points: int, box: WaypointBox) -> np.ndarray:
    """(count, points, 3) sequences: each waypoint a random step of min_step..max_step
    from the previous one, in a uniformly random direction, redrawn while it leaves the
    box (a step that fails 50 times is shortened to min_step towards the box centre)."""
    box.validate()
    low, high = np.array(box.low), np.array(box.high)
    out = np.empty((count, points, 3))
    out[:, 0] = rng.uniform(low, high, (count, 3))
    for i in range(1, points):
        todo = np.ones(count, dtype=bool)
        for _ in range(50):
            n = int(todo.sum())
            if n == 0:
                break
            direction = rng.normal(size=(n, 3))
            direction /= np.linalg.norm(direction, axis=1, keepdims=True)
            step = rng.uniform(box.min_step, box.max_step, (n, 1))
            candidate = out[todo, i - 1] + step * direction
            inside = np.all((candidate >= low) & (candidate <= high), axis=1)
            rows = np.flatnonzero(todo)[inside]
            out[rows, i] = candidate[inside]
            todo[rows] = False
        if todo.any():
            centre = 0.5 * (low + high)
            to_centre = centre - out[todo, i - 1]
            to_centre /= np.maximum(np.linalg.norm(to_centre, axis=1, keepdims=True), 1e-9)
            out[todo, i] = out[todo, i - 1] + box.min_step * to_centre
    return out
