"""The engine interface shared by every batched simulator.

Kept small on purpose so that PyBullet, MuJoCo Warp and Genesis can implement it:
state arrays, a step of several physics substeps, resets that write state, and
per-simulation model fields for domain randomization.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


class EngineError(RuntimeError):
    """A simulation failed in a way the caller may recover from by resetting it."""


@runtime_checkable
class Engine(Protocol):
    """N simulations of one model.

    Arrays are live (num_envs, ...) views: reading them after `step` gives the new state
    and writing them changes what the next `step` simulates.
    """

    num_envs: int
    physics_dt: float
    qpos: np.ndarray
    qvel: np.ndarray
    ctrl: np.ndarray
    act: np.ndarray
    xfrc_applied: np.ndarray
    """(num_envs, nbody, 6): external force and torque on each body's centre of mass, world frame."""
    live_model_fields: bool
    """Whether a write into a `model_field` array reaches the next `step` by itself; where
    not, it waits for `commit_model` (which also recomputes derived constants)."""

    def step(self, substeps: int = 1) -> None:
        """Advance every simulation by `substeps` physics steps at fixed controls."""

    def reset(self, ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Write a new state into simulations `ids` (no model reload); clears act and forces."""

    def model_field(self, name: str) -> np.ndarray:
        """Per-simulation copy (num_envs, ...) of a model field, writable for randomization."""

    def commit_model(self, ids: np.ndarray | None = None) -> None:
        """Recompute derived model constants after model fields were written."""

    def unstable(self) -> np.ndarray:
        """(num_envs,) bool: simulations whose state is not finite or has diverged."""


def sensor_view(engine: Engine, name: str, task: str) -> np.ndarray:
    """Live (num_envs, dim) view of MuJoCo sensor `name`, one physics step behind the state
    (as with mj_step), current from the moment it is made (the engine binds all sensor
    data at construction). Sensors are not part of the Engine interface: only mjbatch has
    MuJoCo's sensor pipeline, so a task that needs one asks for it here and other engines
    are refused with a message naming the task, the sensor and the engine."""
    own = getattr(engine, "sensor_view", None)
    if own is not None:  # an engine that computes some sensors itself (PyBullet's G1)
        return own(name, task)
    batch = getattr(engine, "batch", None)
    if batch is None or not hasattr(batch, "sensor"):
        raise ValueError(
            f"{task} reads the MuJoCo sensor {name!r}; engine {type(engine).__name__} has "
            "no MuJoCo sensors (use --engine mjbatch)"
        )
    return batch.sensor(name)


ENGINES: tuple[str, ...] = ("mjbatch", "pybullet", "warp", "genesis")

EXTRAS = {"pybullet": "pybullet", "warp": "warp", "genesis": "genesis"}
"""The `simreal[...]` extra that installs each engine that is not a core dependency
(pyproject.toml's optional-dependencies; tests/sim/test_engine_extras.py holds them equal)."""


class EngineUnavailableError(ImportError):
    """An engine whose package is not installed; the message names the extra to install."""


def missing_extra(engine: str, package: str) -> EngineUnavailableError:
    """The error for an engine whose package is not installed: it names the extra."""
    return EngineUnavailableError(
        f"the {engine} engine needs the {package!r} package: "
        f"pip install 'simreal[{EXTRAS[engine]}]'"
    )


def make_engine(name: str, mjcf: str, num_envs: int, num_threads: int = 0) -> Engine:
    """Build engine `name` for the MJCF string `mjcf`."""
    if name == "mjbatch":
        from simreal.sim.mjbatch_engine import MjBatchEngine

        return MjBatchEngine.from_xml(mjcf, num_envs, num_threads)
    if name == "pybullet":
        try:
            from simreal.sim.pybullet_articulated import PyBulletArticulatedEngine, is_articulated
            from simreal.sim.pybullet_engine import PyBulletEngine
        except ModuleNotFoundError as err:
            if err.name != "pybullet":
                raise
            raise missing_extra("pybullet", "pybullet") from err
        import mujoco

        model = mujoco.MjModel.from_xml_string(mjcf)
        if is_articulated(model):  # a robot with joints (the G1); else free bodies
            return PyBulletArticulatedEngine(model, num_envs, num_threads)
        return PyBulletEngine(model, num_envs, num_threads)
    if name == "warp":
        from simreal.sim.warp_engine import WarpEngine

        return WarpEngine.from_xml(mjcf, num_envs, num_threads)
    if name == "genesis":
        from simreal.sim.genesis_engine import GenesisEngine

        return GenesisEngine.from_xml(mjcf, num_envs, num_threads)
    raise ValueError(f"unknown engine {name!r}; available: {', '.join(ENGINES)}")


def installed_engines() -> tuple[str, ...]:
    """The engines whose packages import here, in ENGINES order."""
    from importlib.util import find_spec

    packages = {
        "mjbatch": "mjbatch",
        "pybullet": "pybullet",
        "warp": "mujoco_warp",
        "genesis": "genesis",
    }
    return tuple(name for name in ENGINES if find_spec(packages[name]) is not None)
