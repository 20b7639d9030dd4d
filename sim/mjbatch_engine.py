"""CPU MuJoCo through mjbatch: N simulations on a C++ thread pool, GIL released."""

from __future__ import annotations

import os

import mjbatch
import mujoco
import numpy as np

from simreal.sim.engine import EngineError

DIVERGED_QVEL = 1e4
"""A generalized velocity above this (m/s or rad/s) means the simulation blew up."""

_BAD_STATE_WARNINGS = [
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
]


class MjBatchEngine:
    """The default engine: one template model, N integration states."""

    live_model_fields = True
    """A write into `model_field`'s array reaches the simulations' next step directly
    (mjbatch expands the field in place); `commit_model` is only needed for fields that
    derived constants depend on (masses, inertias). Per-step writes (a motor's
    torque-speed envelope) rely on it."""

    def __init__(self, model: mujoco.MjModel, num_envs: int, num_threads: int = 0) -> None:
        threads = num_threads or min(usable_cpus(), num_envs)
        self.model = model
        self.batch = mjbatch.Batch(model, num_envs, num_threads=threads)
        self.num_envs = num_envs
        self.num_threads = self.batch.num_threads
        self.physics_dt = float(model.opt.timestep)
        self.qpos = self.batch.bind("qpos")
        self.qvel = self.batch.bind("qvel")
        self.ctrl = self.batch.bind("ctrl")
        self.act = self.batch.bind("act")
        self.xfrc_applied = self.batch.bind("xfrc_applied")
        self._warning = self.batch.bind("warning")
        # Bound before the first reset, so every sensor view a task makes later shares
        # this buffer and is current at once (a field mjbatch binds only after a step
        # reads zeros until the next one).
        self.sensordata = self.batch.bind("sensordata")
        self._expanded: dict[str, np.ndarray] = {}
        self._history: np.ndarray | None = None
        self.batch.reset()

    @classmethod
    def from_xml(cls, mjcf: str, num_envs: int, num_threads: int = 0) -> MjBatchEngine:
        return cls(mujoco.MjModel.from_xml_string(mjcf), num_envs, num_threads)

    def step(self, substeps: int = 1) -> None:
        try:
            self.batch.step(nstep=substeps)
        except RuntimeError as err:
            raise EngineError(str(err)) from err

    def reset(self, ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        self.qpos[ids] = qpos
        self.qvel[ids] = qvel
        self.act[ids] = 0.0
        self.xfrc_applied[ids] = 0.0

    def model_field(self, name: str) -> np.ndarray:
        if name not in self._expanded:
            self._expanded[name] = self.batch.expand(name)
        return self._expanded[name]

    @property
    def expanded_fields(self) -> tuple[str, ...]:
        """The model fields made per-simulation so far (`model_field`), in first-use order."""
        return tuple(self._expanded)

    def ctrl_history(self) -> np.ndarray:
        """Live (N, nhistory) view of the actuators' ctrl histories (MuJoCo's `history`,
        part of each simulation's state), for actuators with a native delay; bound on
        first use."""
        if self._history is None:
            self._history = self.batch.bind("history")
        return self._history

    def commit_model(self, ids: np.ndarray | None = None) -> None:
        self.batch.set_const(ids)

    def unstable(self) -> np.ndarray:
        """Non-finite or diverged state, or a MuJoCo instability warning since the last call.

        MuJoCo resets a simulation itself when its state goes bad and counts a warning
        (entry [lastinfo, number]); the count is how such a silent reset is noticed. It is
        zeroed after reading so that every later blow-up counts again.
        """
        counts = self._warning[:, _BAD_STATE_WARNINGS, 1]
        warned = (counts > 0).any(axis=1)
        if warned.any():
            counts[warned] = 0
            self._warning[:, _BAD_STATE_WARNINGS, 1] = counts
        finite = np.isfinite(self.qpos).all(axis=1) & np.isfinite(self.qvel).all(axis=1)
        return warned | ~finite | (np.abs(self.qvel).max(axis=1) > DIVERGED_QVEL)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. under taskset), not the machine's,
    shared with the other ranks torchrun started on this node (LOCAL_WORLD_SIZE) unless
    they were pinned apart: two unpinned ranks on 2 cores would otherwise run 2 physics
    threads each, 4 on 2 cores."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity else os.cpu_count() or 1
    return max(1, cpus // int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
