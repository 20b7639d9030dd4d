"""The mjbatch engine: N simulations that behave exactly like N separate MuJoCo datas."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from simreal.robots.crazyflie import CrazyflieParams, build_mjcf
from simreal.sim import Engine, make_engine
from simreal.sim.mjbatch_engine import DIVERGED_QVEL, MjBatchEngine
from simreal.tasks.rotations import quat_from_roll_pitch_yaw

N = 8
PARAMS = CrazyflieParams()
MJCF = build_mjcf(PARAMS)
BASE = 1
HOVER = PARAMS.weight / 4


@pytest.fixture(autouse=True)
def _work_in_tmp(tmp_path, monkeypatch):
    """MuJoCo appends its warnings to MUJOCO_LOG.TXT in the working directory: keep it here."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def engine() -> MjBatchEngine:
    return MjBatchEngine.from_xml(MJCF, N, num_threads=2)


def varied_states(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct states and controls; the first two simulations rest on the floor (contacts)."""
    rng = np.random.default_rng(seed)
    qpos = np.zeros((n, 7))
    qpos[:, 0:2] = rng.uniform(-0.5, 0.5, (n, 2))
    qpos[:, 2] = rng.uniform(0.3, 1.5, n)
    qpos[:2, 2] = PARAMS.collision_height / 2
    tilt = rng.uniform(-0.3, 0.3, (n, 2))
    tilt[:2] = 0.0
    qpos[:, 3:7] = quat_from_roll_pitch_yaw(tilt[:, 0], tilt[:, 1], rng.uniform(-3, 3, n))
    qvel = rng.uniform(-0.5, 0.5, (n, 6))
    qvel[:2] = 0.0
    ctrl = rng.uniform(0.5, 1.5, (n, 4)) * HOVER
    return qpos, qvel, ctrl


def in_the_air(engine: MjBatchEngine) -> None:
    """Every simulation level at 1 m, at rest, with hover thrust."""
    qpos = np.tile([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], (engine.num_envs, 1))
    engine.reset(np.arange(engine.num_envs), qpos, np.zeros((engine.num_envs, 6)))
    engine.ctrl[:] = HOVER


def step_alone(model, qpos, qvel, ctrl, nstep):
    """The same simulation in a plain MjData."""
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = qpos, qvel, ctrl
    for _ in range(nstep):
        mujoco.mj_step(model, data)
    return data


def test_engine_satisfies_the_protocol_and_make_engine_builds_it():
    engine = make_engine("mjbatch", MJCF, 3, num_threads=1)
    assert isinstance(engine, Engine)
    assert engine.num_envs == 3
    assert engine.physics_dt == pytest.approx(1.0 / 240.0)
    with pytest.raises(ValueError, match="mjbatch"):
        make_engine("no-such-engine", MJCF, 3)


def test_arrays_are_live_num_envs_first_views(engine):
    nbody = engine.model.nbody
    assert engine.qpos.shape == (N, 7)
    assert engine.qvel.shape == (N, 6)
    assert engine.ctrl.shape == (N, 4)
    assert engine.act.shape == (N, 4)
    assert engine.xfrc_applied.shape == (N, nbody, 6)
    qpos = engine.qpos
    in_the_air(engine)
    engine.qpos[3, 2] = 1.5  # a write through the view is what the next step simulates
    engine.ctrl[3] = 0.0
    engine.step(1)
    assert qpos is engine.qpos
    dt = engine.physics_dt
    assert qpos[3, 2] == pytest.approx(1.5 - 9.81 * dt**2, rel=1e-9)
    assert engine.qvel[3, 2] == pytest.approx(-9.81 * dt, rel=1e-9)
    np.testing.assert_allclose(qpos[np.arange(N) != 3, 2], 1.0, atol=1e-9)
    np.testing.assert_allclose(engine.act[np.arange(N) != 3], HOVER, rtol=1e-9)


def test_reset_writes_only_the_given_simulations(engine):
    qpos, qvel, ctrl = varied_states(N, seed=1)
    engine.reset(np.arange(N), qpos, qvel)
    engine.ctrl[:] = ctrl
    engine.xfrc_applied[:, BASE, 2] = 0.01
    engine.step(4)
    before = {
        name: getattr(engine, name).copy() for name in ("qpos", "qvel", "act", "xfrc_applied")
    }
    ids = np.array([2, 5])
    new_qpos, new_qvel, _ = varied_states(2, seed=2)
    engine.reset(ids, new_qpos, new_qvel)
    np.testing.assert_array_equal(engine.qpos[ids], new_qpos)
    np.testing.assert_array_equal(engine.qvel[ids], new_qvel)
    np.testing.assert_array_equal(engine.act[ids], 0.0)
    np.testing.assert_array_equal(engine.xfrc_applied[ids], 0.0)
    others = np.setdiff1d(np.arange(N), ids)
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(engine, name)[others], value[others], err_msg=name)
    # The next step simulates the written state.
    engine.step(3)
    alone = step_alone(engine.model, new_qpos[0], new_qvel[0], ctrl[2], 3)
    np.testing.assert_allclose(engine.qpos[2], alone.qpos, rtol=0, atol=1e-9)


def test_stepping_the_batch_equals_stepping_each_simulation_alone(engine):
    qpos, qvel, ctrl = varied_states(N, seed=3)
    engine.reset(np.arange(N), qpos, qvel)
    engine.ctrl[:] = ctrl
    for _ in range(5):
        engine.step(4)
    assert np.ptp(engine.qpos[:, 2]) > 0.1  # the simulations really differ
    for i in range(N):
        alone = step_alone(engine.model, qpos[i], qvel[i], ctrl[i], 20)
        np.testing.assert_allclose(engine.qpos[i], alone.qpos, rtol=0, atol=1e-9)
        np.testing.assert_allclose(engine.qvel[i], alone.qvel, rtol=0, atol=1e-9)
        np.testing.assert_allclose(engine.act[i], alone.act, rtol=0, atol=1e-9)


def test_model_field_changes_one_simulations_dynamics_only(engine):
    mass = engine.model_field("body_mass")
    assert mass.shape == (N, engine.model.nbody)
    assert engine.model_field("body_mass") is mass
    mass[2, BASE] *= 1.5
    mass[5, BASE] *= 0.7
    engine.commit_model(np.array([2, 5]))
    in_the_air(engine)
    engine.step(24)
    z = engine.qpos[:, 2]
    assert z[2] < 1.0 - 1e-3  # heavier than the thrust carries: falls
    assert z[5] > 1.0 + 1e-3  # lighter: rises
    nominal = np.setdiff1d(np.arange(N), [2, 5])
    np.testing.assert_allclose(z[nominal], 1.0, atol=1e-6)
    assert engine.model.body_mass[BASE] == pytest.approx(PARAMS.mass)  # template untouched
    heavy = mujoco.MjModel.from_xml_string(MJCF)
    heavy.body_mass[BASE] *= 1.5
    mujoco.mj_setConst(heavy, mujoco.MjData(heavy))
    alone = step_alone(heavy, [0, 0, 1, 1, 0, 0, 0], np.zeros(6), [HOVER] * 4, 24)
    np.testing.assert_allclose(engine.qpos[2], alone.qpos, rtol=0, atol=1e-9)


@pytest.mark.parametrize("bad", [np.nan, 1e30], ids=["nan", "huge"])
def test_unstable_flags_the_simulation_mujoco_reset_and_only_it(engine, bad):
    in_the_air(engine)
    engine.step(8)
    assert not engine.unstable().any()
    engine.qvel[3] = bad
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
