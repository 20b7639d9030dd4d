"""A fall-rate curriculum: one difficulty level that rises while the robot rarely falls and
falls back when it falls often. g1-force raises its force cap with it, g1-pull the load's
resistance."""

from __future__ import annotations

import numpy as np


class FallRateCurriculum:
    """`level` moves by `step` within [start, maximum] once a window of episode outcomes is
    in: up when their fall rate is below `raise_below`, down when above `lower_above`
    (then the window starts afresh); between the two it keeps collecting."""

    def __init__(
        self, start: float, maximum: float, step: float, raise_below: float, lower_above: float
    ):
        self.start, self.maximum, self.step = start, maximum, step
        self.raise_below, self.lower_above = raise_below, lower_above
        self.level = start
        self._outcomes: list[float] = []

    def restore(self, level: float) -> None:
        """Resume at `level` (from a checkpoint), within [start, maximum], window empty."""
        self.level = float(np.clip(level, self.start, self.maximum))
        self._outcomes.clear()

    def record(self, fell: np.ndarray, window: int) -> None:
        """Episodes ended with outcomes `fell` (bool per episode); `window` of the latest
        decide (one per simulation is a natural size)."""
        self._outcomes.extend(np.asarray(fell, dtype=float).tolist())
        if len(self._outcomes) < window:
            return
        rate = float(np.mean(self._outcomes[-window:]))
        if rate < self.raise_below:
            self.level = min(self.level + self.step, self.maximum)
        elif rate > self.lower_above:
            self.level = max(self.level - self.step, self.start)
        else:
            return
        self._outcomes.clear()
