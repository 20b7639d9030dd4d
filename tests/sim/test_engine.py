"""The mjbatch engine: what only mjbatch does (MuJoCo's own resets of bad simulations and
their warning counters). The contract every engine meets is tests/test_engine_contract.py."""

from __future__ import annotations

import os

import numpy as np
import pytest
from _crazyflie import MJCF, blow_up, in_the_air

from simreal.sim import Engine, make_engine
from simreal.sim.mjbatch_engine import DIVERGED_QVEL, MjBatchEngine

N = 8
BASE = 1


pytestmark = pytest.mark.usefixtures("work_in_tmp")


@pytest.fixture
def engine() -> MjBatchEngine:
    return MjBatchEngine.from_xml(MJCF, N, num_threads=2)


def test_engine_satisfies_the_protocol_and_make_engine_builds_it():
    engine = make_engine("mjbatch", MJCF, 3, num_threads=1)
    assert isinstance(engine, Engine)
    assert engine.num_envs == 3
    assert engine.physics_dt == pytest.approx(1.0 / 240.0)
    with pytest.raises(ValueError, match="mjbatch"):
        make_engine("no-such-engine", MJCF, 3)


def test_a_sensor_view_made_after_steps_reads_the_current_state_at_once():
    """A task that looks a sensor up on first use (mid-episode) must not read zeros for a
    step: the engine binds the sensor data before the first reset."""
    from simreal.sim.engine import sensor_view

    falling = """<mujoco><worldbody><body name="ball" pos="0 0 2"><freejoint/>
      <geom size="0.1"/></body></worldbody>
      <sensor><framepos name="ball_pos" objtype="body" objname="ball"/></sensor></mujoco>"""
    engine = MjBatchEngine.from_xml(falling, 2, num_threads=1)
    assert (sensor_view(engine, "ball_pos", "test")[:, 2] == 2.0).all()  # after the reset
    engine.step(10)
    late = sensor_view(engine, "ball_pos", "test")
    height = late[:, 2].copy()
    assert (height < 2.0).all() and (height > 1.9).all()  # fell, and not a zero
    engine.step(10)
    assert (late[:, 2] < height).all()  # live: the view follows the next steps


@pytest.mark.parametrize("bad", [np.nan, 1e30], ids=["nan", "huge"])
def test_unstable_flags_the_simulation_mujoco_reset_and_only_it(engine, bad):
    blow_up(engine, bad)
    engine.step(8)
    # MuJoCo reset simulation 3 itself during the step: its state is finite again and
    # only the warning counters tell what happened.
    assert np.isfinite(engine.qpos).all() and np.isfinite(engine.qvel).all()
    np.testing.assert_array_equal(engine.unstable(), np.arange(N) == 3)
    engine.step(1)
    assert not engine.unstable().any()


def test_unstable_flags_every_blow_up_of_the_same_simulation(engine):
    in_the_air(engine)
    for attempt in range(3):
        engine.qvel[6, 2] = np.nan
        engine.step(8)
        np.testing.assert_array_equal(
            engine.unstable(), np.arange(N) == 6, err_msg=f"blow-up {attempt + 1}"
        )
        in_the_air(engine)


def test_unstable_flags_non_finite_or_diverged_state_written_directly(engine):
    in_the_air(engine)
    engine.step(1)
    engine.unstable()
    engine.qpos[1, 0] = np.nan
    np.testing.assert_array_equal(engine.unstable(), np.arange(N) == 1)
    in_the_air(engine)
    engine.qvel[4, 3] = 2 * DIVERGED_QVEL
    np.testing.assert_array_equal(engine.unstable(), np.arange(N) == 4)


def test_torchrun_ranks_on_one_node_share_its_cpus(monkeypatch):
    """Unpinned ranks split the process's CPUs; pinned ones (one CPU each) keep one."""
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    shared = MjBatchEngine.from_xml(MJCF, 8)
    assert shared.num_threads == max(1, cpus // 2)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(4 * cpus))
    assert MjBatchEngine.from_xml(MJCF, 8).num_threads == 1
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert MjBatchEngine.from_xml(MJCF, 8).num_threads == min(cpus, 8)
