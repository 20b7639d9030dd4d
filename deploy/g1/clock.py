"""A deadline clock for fixed-rate loops, and the jitter it measured.

Each wait sleeps until the next deadline, `period` after the previous one, so the time a
loop body takes never adds to the period (as `sleep(dt)` after the work would). A body
that overruns a whole period is counted, and the schedule restarts from now rather than
bursting through the missed ticks to catch up.
"""

from __future__ import annotations

import time

import numpy as np


class DeadlineClock:
    def __init__(self, period_s: float, max_samples: int = 1_000_000):
        self.period_s = period_s
        self.deadline: float | None = None
        self.last_wake: float | None = None
        self.overruns = 0
        self.periods: list[float] = []
        self.max_samples = max_samples

    def wait(self) -> float:
        """Sleep until the next deadline; return the wake time (time.monotonic)."""
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now
        elif now > self.deadline + self.period_s:
            self.overruns += 1
            self.deadline = now
        else:
            time.sleep(max(0.0, self.deadline - now))
            now = time.monotonic()
        self.deadline += self.period_s
        if self.last_wake is not None and len(self.periods) < self.max_samples:
            self.periods.append(now - self.last_wake)
        self.last_wake = now
        return now

    @property
    def last_period_s(self) -> float:
        return self.periods[-1] if self.periods else self.period_s

    def jitter_stats(self) -> dict[str, float]:
        """Jitter (actual period minus nominal) p50/p99/max in ms, and the overrun count."""
        if not self.periods:
            return {"ticks": 0, "overruns": self.overruns}
        jitter_ms = (np.array(self.periods) - self.period_s) * 1e3
        return {
            "ticks": len(self.periods) + 1,
            "jitter_p50_ms": round(float(np.percentile(jitter_ms, 50)), 3),
            "jitter_p99_ms": round(float(np.percentile(jitter_ms, 99)), 3),
            "jitter_max_ms": round(float(jitter_ms.max()), 3),
            "overruns": self.overruns,
        }
