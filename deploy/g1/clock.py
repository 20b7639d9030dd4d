"""A deadline clock for fixed-rate loops, the jitter it measured, and process settings
that keep a Python control loop on time.

Each wait sleeps until the next deadline, `period` after the previous one, so the time a
loop body takes never adds to the period (as `sleep(dt)` after the work would). A body
that overruns a whole period is counted, and the schedule restarts from now rather than
bursting through the missed ticks to catch up.

Why sleep-then-spin: `time.sleep` wakes late by the kernel's timer slack (50 us by
default) plus scheduling latency, which on a loaded machine is often a few hundred
microseconds and sometimes more. So the clock sleeps only until `spin_s` before the
deadline and then polls the clock until the deadline passes. The poll calls
`time.sleep(0)`, which yields the CPU and the GIL (a log-writer thread keeps running),
so the wake-up error becomes that of one poll instead of one sleep, for `spin_s` of CPU
per tick (10 % of a core at 500 Hz with the default 0.2 ms).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time

import numpy as np

SPIN_S = 0.0002
SWITCH_INTERVAL_S = 0.0001


class DeadlineClock:
    def __init__(self, period_s: float, max_samples: int = 1_000_000, spin_s: float = SPIN_S):
        self.period_s = period_s
        self.spin_s = min(spin_s, period_s / 2)
        self.deadline: float | None = None
        self.tick_s = 0.0
        """The scheduled time of the current tick (its deadline), on the loop's regular grid."""
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
            coarse = self.deadline - self.spin_s - now
            if coarse > 0:
                time.sleep(coarse)
            now = time.monotonic()
            while now < self.deadline:
                time.sleep(0)
                now = time.monotonic()
        self.tick_s = self.deadline
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


def realtime_process(priority: int | None = None) -> str:
    """Settings for a process that runs a control loop (call once, before the loop, from
    the loop's thread); returns what was set, for the log.

    - The GIL switch interval goes from 5 ms to 0.1 ms: a thread that wants the GIL
      waits up to one interval before the holder is made to drop it, so with a log
      writer thread busy, the loop would otherwise wake up to 5 ms late.
    - The objects made so far (models, ONNX session, modules, the simulator) are moved
      out of the garbage collector's reach (`gc.freeze`): a full collection that walks
      them takes milliseconds at an unpredictable tick, while the young objects a tick
      makes are collected in microseconds. The collector itself stays on.
    - With `priority` (1-99), the calling thread runs SCHED_FIFO at that priority, as
      control loops on robots do: on a machine busy with other work it runs whenever it
      wakes instead of waiting for a time slice. The process's other threads so far
      (CycloneDDS's receive threads, which deliver the robot's state; the log writer,
      which may hold the GIL the loop needs) run SCHED_FIFO one below it: left at normal
      priority they would be starved on a busy machine and hold up the loop anyway.
      Needs root or CAP_SYS_NICE; without it the loop runs at normal priority and says so.
    """
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    gc.collect()
    gc.freeze()
    if priority is None:
        return "normal scheduling"
    me = threading.get_native_id()
    try:
        for tid in sorted(int(t) for t in os.listdir("/proc/self/task")):
            if tid != me:
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(max(1, priority - 1)))
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except PermissionError:
        return f"SCHED_FIFO {priority} refused (needs root or CAP_SYS_NICE): normal scheduling"
    return f"SCHED_FIFO priority {priority}"
