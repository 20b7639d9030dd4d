"""MuJoCo Warp (`mujoco-warp`): MuJoCo's own physics as Warp kernels, N worlds per launch.

The same MuJoCo model as mjbatch, so the same tasks run on it unchanged; the worlds live
in Warp arrays of shape (num_envs, ...) on one device (a CUDA GPU when there is one,
else the CPU, where Warp runs each kernel on one thread: correct but slow).

On the CPU the engine's numpy arrays *are* the Warp arrays (`wp.array.numpy()` of host
memory is a view), so tasks read and write device state without a copy. On a GPU they
are host mirrors, uploaded before and downloaded after every `step`; code that wants to
stay on the GPU reads `tensors()` (PyTorch views of the same device memory through
Warp/PyTorch interop, no copy) instead.

Per-simulation model fields: MuJoCo Warp model arrays whose leading dimension is `*`
are shared (size 1) or per world (size num_envs). `model_field` widens a field to
num_envs rows the first time it is asked for and hands out a view; `commit_model` runs
MuJoCo Warp's `set_const` (subtree masses, inverse weights) as mjbatch's does.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from simreal.sim.engine import EngineError, missing_extra

try:
    import mujoco_warp as mjw
    import warp as wp
except ImportError as err:  # pragma: no cover - depends on the installation
    raise missing_extra("warp", "mujoco-warp") from err

wp.config.log_level = wp.LOG_WARNING

DIVERGED_QVEL = 1e4
"""A generalized velocity above this (m/s or rad/s) means the simulation blew up (as in mjbatch)."""

STATE_FIELDS = ("qpos", "qvel", "ctrl", "act", "xfrc_applied")


def _batched_fields() -> frozenset[str]:
    """Model fields MuJoCo Warp can hold per world (array spec leading with `*`)."""
    names = set()
    for f in dataclasses.fields(mjw.Model):
        shape = getattr(f.type, "shape", ())
        if shape and shape[0] == "*":
            names.add(f.name)
    return frozenset(names)


class WarpEngine:
    """N worlds of one MuJoCo model in MuJoCo Warp."""

    def __init__(
        self,
        model: mujoco.MjModel,
        num_envs: int,
        num_threads: int = 0,
        device: str | None = None,
    ) -> None:
        """num_threads is accepted for the common signature; Warp schedules its own kernels."""
        wp.init()
        self.device = wp.get_device(device or ("cuda:0" if wp.is_cuda_available() else "cpu"))
        self.model = model
        self.num_envs = num_envs
        self.num_threads = 1
        self.physics_dt = float(model.opt.timestep)
        self._batched = _batched_fields()
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        with wp.ScopedDevice(self.device):
            try:
                self._m = mjw.put_model(model)
                # Hitting the line-search iteration cap is a speed hint, printed every step.
                self._m.opt.warn_overflow = int(self._m.opt.warn_overflow) & ~int(
                    mjw.OverflowType.LS_ITERATIONS
                )
                # Constraint rows per world: MuJoCo Warp sizes them from the initial state
                # (64 here), too few once every joint has dry friction (one row per dof)
                # and its limits and contacts come on: rows past the cap are dropped.
                njmax = max(64, data.nefc) + 4 * model.nv
                self._d = mjw.put_data(model, data, nworld=num_envs, njmax=njmax)
            except NotImplementedError as err:
                raise ValueError(f"MuJoCo Warp cannot simulate this model: {err}") from err
        self._host = self.device.is_cpu
        for name in STATE_FIELDS:
            setattr(self, name, self._view(getattr(self._d, name)))
        self._fields: dict[str, np.ndarray] = {}

    @classmethod
    def from_xml(cls, mjcf: str, num_envs: int, num_threads: int = 0) -> WarpEngine:
        return cls(mujoco.MjModel.from_xml_string(mjcf), num_envs, num_threads)

    def _view(self, array: wp.array) -> np.ndarray:
        """A (num_envs, ...) numpy array: the Warp memory itself on CPU, a mirror on GPU."""
        return array.numpy()

    def step(self, substeps: int = 1) -> None:
        if not self._host:
            self._upload(STATE_FIELDS)
        try:
            with wp.ScopedDevice(self.device):
                for _ in range(substeps):
                    mjw.step(self._m, self._d)
        except RuntimeError as err:  # pragma: no cover - kernel failures
            raise EngineError(str(err)) from err
        if not self._host:
            self._download(STATE_FIELDS)

    def reset(self, ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Also clears the rest of those worlds' data (warm starts, contacts) with MuJoCo
        Warp's masked reset, so a world that held NaN starts clean; controls are kept."""
        rows = np.arange(self.num_envs)[ids]
        mask = np.zeros(self.num_envs, dtype=bool)
        mask[rows] = True
        ctrl = self.ctrl[rows].copy()
        with wp.ScopedDevice(self.device):
            mjw.reset_data(self._m, self._d, reset=wp.array(mask, dtype=bool))
        self.ctrl[rows] = ctrl
        self.qpos[ids] = qpos
        self.qvel[ids] = qvel
        self.act[ids] = 0.0
        self.xfrc_applied[ids] = 0.0

    def model_field(self, name: str) -> np.ndarray:
        if name in self._fields:
            return self._fields[name]
        if name not in self._batched:
            raise ValueError(
                f"model field {name!r} cannot vary per simulation in MuJoCo Warp; "
                f"it can: {', '.join(sorted(self._batched))}"
            )
        shared = getattr(self._m, name)
        values = np.repeat(shared.numpy()[:1], self.num_envs, axis=0)
        wide = wp.array(values, dtype=shared.dtype, device=self.device)
        setattr(self._m, name, wide)
        self._fields[name] = self._view(wide)
        return self._fields[name]

    @property
    def live_model_fields(self) -> bool:
        """On the CPU, `model_field` arrays are the device arrays themselves (zero-copy), so
        a write reaches the next step directly; on a GPU it waits for `commit_model`."""
        return self._host

    def commit_model(self, ids: np.ndarray | None = None) -> None:
        """Recompute derived constants of every world (MuJoCo Warp's set_const is batched)."""
        if not self._host:
            for name, values in self._fields.items():
                getattr(self._m, name).assign(values)
        with wp.ScopedDevice(self.device):
            saved = {name: getattr(self, name).copy() for name in ("qpos", "qvel")}
            mjw.set_const(self._m, self._d)
            if not self._host:
                self._download(("qpos", "qvel"))
            for name, values in saved.items():
                getattr(self, name)[:] = values

    def unstable(self) -> np.ndarray:
        """Non-finite or diverged state (MuJoCo Warp does not reset bad worlds itself)."""
        finite = np.isfinite(self.qpos).all(axis=1) & np.isfinite(self.qvel).all(axis=1)
        with np.errstate(invalid="ignore"):
            return ~finite | (np.abs(self.qvel).max(axis=1) > DIVERGED_QVEL)

    def tensors(self) -> dict:
        """PyTorch views (no copy) of the device state arrays, for code that stays on the device."""
        return {name: wp.to_torch(getattr(self._d, name)) for name in STATE_FIELDS}

    def _upload(self, names: tuple[str, ...]) -> None:
        for name in names:
            getattr(self._d, name).assign(getattr(self, name))

    def _download(self, names: tuple[str, ...]) -> None:
        for name in names:
            getattr(self, name)[:] = getattr(self._d, name).numpy()
