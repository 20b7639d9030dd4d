"""The Crazyflie model and start states the engine tests share (test_engine.py for
mjbatch, test_engine_contract.py for every engine, test_pybullet_engine.py): one model,
one hover thrust and one way to start or blow up a simulation, so that the engines are
checked from the same states."""

from __future__ import annotations

import mujoco
import numpy as np

from simreal.robots.crazyflie import CrazyflieParams, build_mjcf
from simreal.sim import Engine

PARAMS = CrazyflieParams()
MJCF = build_mjcf(PARAMS)
HOVER = PARAMS.weight / 4
"""Per-motor thrust (N) that carries the weight."""


def in_the_air(engine: Engine) -> None:
    """Every simulation level at 1 m, at rest, with hover thrust."""
    qpos = np.tile([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], (engine.num_envs, 1))
    engine.reset(np.arange(engine.num_envs), qpos, np.zeros((engine.num_envs, 6)))
    engine.ctrl[:] = HOVER


def blow_up(engine: Engine, bad: float, index: int = 3) -> None:
    """Every simulation in the air and stepped (none flagged yet), then the velocity of
    simulation `index` set to `bad` (NaN or huge): the next step blows it up."""
    in_the_air(engine)
    engine.step(8)
    assert not engine.unstable().any()
    engine.qvel[index] = bad


def step_alone(model, qpos, qvel, ctrl, nstep: int) -> mujoco.MjData:
    """The same simulation in a plain MjData."""
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = qpos, qvel, ctrl
    for _ in range(nstep):
        mujoco.mj_step(model, data)
    return data
