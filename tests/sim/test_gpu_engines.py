"""What only MuJoCo Warp and Genesis do (their shared contract: test_engine_contract.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from simreal.robots.crazyflie import CrazyflieParams, build_mjcf
from simreal.sim import make_engine

# MuJoCo Warp and Genesis run here on the CPU, where their kernels and scenes compile for
# tens of seconds: the slow tier.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("work_in_tmp")]

MJCF = build_mjcf(CrazyflieParams())
TENDON = """<mujoco><worldbody>
  <body name="arm"><joint name="a" type="hinge"/><geom type="capsule" size="0.02 0.1"/>
    <site name="s1"/></body>
  <site name="s0" pos="0 0 1"/></worldbody>
  <tendon><spatial name="t"><site site="s0"/><site site="s1"/></spatial></tendon>
  <actuator><motor tendon="t"/></actuator></mujoco>"""


def test_warp_state_is_one_memory_for_numpy_and_torch():
    """On the CPU the numpy arrays are the Warp arrays, and tensors() are PyTorch views of
    the same memory: a write through either is what the next step simulates."""
    engine = make_engine("warp", MJCF, 4)
    tensors = engine.tensors()
    assert set(tensors) == {"qpos", "qvel", "ctrl", "act", "xfrc_applied"}
    assert isinstance(tensors["qpos"], torch.Tensor)
    assert tuple(tensors["qpos"].shape) == engine.qpos.shape
    tensors["qpos"][1, 2] = 2.5
    assert engine.qpos[1, 2] == 2.5
    engine.qvel[2, 2] = 1.0
    assert float(tensors["qvel"][2, 2]) == 1.0
    engine.step(1)
    assert float(tensors["qpos"][2, 2]) == pytest.approx(engine.qpos[2, 2])
    assert engine.qpos[1, 2] < 2.5  # falling from where torch put it


def test_warp_varies_only_fields_mujoco_warp_batches():
    engine = make_engine("warp", MJCF, 3)
    friction = engine.model_field("geom_friction")
    assert friction.shape == (3, engine.model.ngeom, 3)
    with pytest.raises(ValueError, match=r"'body_parentid' cannot vary per simulation"):
        engine.model_field("body_parentid")


def test_genesis_refuses_what_it_cannot_simulate_naming_it():
    with pytest.raises(ValueError, match=r"genesis engine cannot simulate: tendons \(1\)"):
        make_engine("genesis", TENDON, 2)


def test_genesis_names_the_model_fields_it_cannot_vary():
    engine = make_engine("genesis", MJCF, 2)
    with pytest.raises(ValueError, match=r"'geom_pos' is not supported by the genesis engine"):
        engine.model_field("geom_pos")


def test_genesis_restarts_an_environment_whose_forces_turn_nan_and_flags_it():
    engine = make_engine("genesis", MJCF, 3)
    qpos = np.tile([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], (3, 1))
    engine.reset(np.arange(3), qpos, np.zeros((3, 6)))
    engine.ctrl[:] = 0.07
    engine.ctrl[1, 0] = np.nan
    engine.step(24)  # Genesis checks for NaN every few substeps and raises for the batch
    flagged = engine.unstable()
    assert flagged[1] and not flagged[[0, 2]].any()
    assert np.isfinite(engine.qpos[[0, 2]]).all()
