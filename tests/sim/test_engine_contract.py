"""The engine contract (simreal.sim.Engine), checked the same way on every installed engine.

Each engine must: expose live (num_envs, ...) arrays whose writes the next step simulates;
reset by writing state into the given simulations only; step every simulation like a
plain MuJoCo MjData would; vary model fields per simulation; and report simulations that
blew up. Engine-specific behaviour stays in its own file (test_engine.py for mjbatch,
test_pybullet_engine.py, ...). An engine that is not installed is reported, not skipped
silently: `test_every_engine_is_installed_here` names it.
"""

from __future__ import annotations

import subprocess
import sys

import mujoco
import numpy as np
import pytest
from _crazyflie import HOVER, MJCF, blow_up, in_the_air, step_alone

from simreal.sim import ENGINES, Engine, installed_engines, make_engine
from simreal.tasks.rotations import quat_from_roll_pitch_yaw

N = 8
MODEL = mujoco.MjModel.from_xml_string(MJCF)
BASE = 1
INSTALLED = installed_engines()

TOLERANCE = {"mjbatch": 1e-9, "pybullet": 1e-9, "warp": 2e-6, "genesis": 2e-6}
"""Largest state difference (m, rad, m/s) from MuJoCo alone over these few contact-free
steps: mjbatch and PyBullet integrate in float64, MuJoCo Warp and Genesis in float32."""
ACT_RTOL = {"mjbatch": 1e-12, "pybullet": 1e-12, "warp": 1e-5, "genesis": 1e-5}
"""Relative error of actuator activations (float64 vs float32 engines)."""


pytestmark = pytest.mark.usefixtures("work_in_tmp")


_BUILT: dict[str, Engine] = {}


GPU_ENGINES = ("warp", "genesis")
"""Run here on the CPU, where compiling their kernels and scenes takes minutes: slow tier."""


@pytest.fixture(
    params=[pytest.param(e, marks=pytest.mark.slow) if e in GPU_ENGINES else e for e in INSTALLED]
)
def engine(request) -> Engine:
    """One engine per name for the whole module (Genesis compiles its scene for seconds);
    every test starts by writing the state it needs, and restores fields it changes."""
    name = request.param
    if name not in _BUILT:
        _BUILT[name] = make_engine(name, MJCF, N, num_threads=2)
    engine = _BUILT[name]
    engine.name = name
    return engine


def flying_states(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct states and controls, all well clear of the floor."""
    rng = np.random.default_rng(seed)
    qpos = np.zeros((n, 7))
    qpos[:, 0:2] = rng.uniform(-0.5, 0.5, (n, 2))
    qpos[:, 2] = rng.uniform(1.0, 1.5, n)
    tilt = rng.uniform(-0.3, 0.3, (n, 2))
    qpos[:, 3:7] = quat_from_roll_pitch_yaw(tilt[:, 0], tilt[:, 1], rng.uniform(-3, 3, n))
    qvel = rng.uniform(-0.5, 0.5, (n, 6))
    ctrl = rng.uniform(0.5, 1.5, (n, 4)) * HOVER
    return qpos, qvel, ctrl


def test_every_engine_is_installed_here():
    """The contract runs on every engine; one missing here would go unchecked."""
    assert INSTALLED == ENGINES, f"not installed: {set(ENGINES) - set(INSTALLED)}"


def test_engine_satisfies_the_protocol(engine):
    assert isinstance(engine, Engine)
    assert engine.num_envs == N
    assert engine.physics_dt == pytest.approx(1.0 / 240.0)
    assert engine.qpos.shape == (N, 7)
    assert engine.qvel.shape == (N, 6)
    assert engine.ctrl.shape == (N, 4)
    assert engine.act.shape == (N, 4)
    assert engine.xfrc_applied.shape == (N, MODEL.nbody, 6)


def test_arrays_are_live_and_writes_are_simulated(engine):
    tol = TOLERANCE[engine.name]
    qpos = engine.qpos
    in_the_air(engine)
    engine.qpos[3, 2] = 1.5  # a write through the array is what the next step simulates
    engine.ctrl[3] = 0.0
    engine.step(1)
    assert qpos is engine.qpos
    dt = engine.physics_dt
    assert qpos[3, 2] == pytest.approx(1.5 - 9.81 * dt**2, abs=tol)
    assert engine.qvel[3, 2] == pytest.approx(-9.81 * dt, abs=tol)
    np.testing.assert_allclose(qpos[np.arange(N) != 3, 2], 1.0, atol=tol)
    np.testing.assert_allclose(engine.act[np.arange(N) != 3], HOVER, rtol=1e-6)
    engine.qvel[5, 2] = 1.0  # velocities written in place too
    engine.step(1)
    assert engine.qpos[5, 2] == pytest.approx(1.0 + dt, abs=1e-5)


def test_reset_writes_only_the_given_simulations(engine):
    tol = TOLERANCE[engine.name]
    qpos, qvel, ctrl = flying_states(N, seed=1)
    engine.reset(np.arange(N), qpos, qvel)
    engine.ctrl[:] = ctrl
    engine.xfrc_applied[:, BASE, 2] = 0.01
    engine.step(4)
    before = {
        name: getattr(engine, name).copy() for name in ("qpos", "qvel", "act", "xfrc_applied")
    }
    ids = np.array([2, 5])
    new_qpos, new_qvel, _ = flying_states(2, seed=2)
    engine.reset(ids, new_qpos, new_qvel)
    np.testing.assert_allclose(engine.qpos[ids], new_qpos, rtol=0, atol=1e-7)
    np.testing.assert_allclose(engine.qvel[ids], new_qvel, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(engine.act[ids], 0.0)
    np.testing.assert_array_equal(engine.xfrc_applied[ids], 0.0)
    others = np.setdiff1d(np.arange(N), ids)
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(engine, name)[others], value[others], err_msg=name)
    # The next steps simulate the written state (angular velocity in the body frame).
    engine.step(3)
    for i, row in enumerate(ids):
        alone = step_alone(MODEL, new_qpos[i], new_qvel[i], ctrl[row], 3)
        np.testing.assert_allclose(engine.qpos[row], alone.qpos, rtol=0, atol=tol)
        np.testing.assert_allclose(engine.qvel[row], alone.qvel, rtol=0, atol=tol)


def test_stepping_the_batch_equals_stepping_each_simulation_alone(engine):
    tol = TOLERANCE[engine.name]
    qpos, qvel, ctrl = flying_states(N, seed=3)
    engine.reset(np.arange(N), qpos, qvel)
    engine.ctrl[:] = ctrl
    for _ in range(5):
        engine.step(4)
    assert np.ptp(engine.qpos[:, 2]) > 0.1  # the simulations really differ
    for i in range(N):
        alone = step_alone(MODEL, qpos[i], qvel[i], ctrl[i], 20)
        np.testing.assert_allclose(engine.qpos[i], alone.qpos, rtol=0, atol=10 * tol)
        np.testing.assert_allclose(engine.qvel[i], alone.qvel, rtol=0, atol=10 * tol)
        np.testing.assert_allclose(engine.act[i], alone.act, rtol=1e-6)


def test_model_field_changes_one_simulations_dynamics_only(engine):
    tol = TOLERANCE[engine.name]
    mass = engine.model_field("body_mass")
    assert mass.shape == (N, MODEL.nbody)
    assert engine.model_field("body_mass") is mass
    assert engine.model_field("body_inertia").shape == (N, MODEL.nbody, 3)
    assert engine.model_field("actuator_gear").shape == (N, MODEL.nu, 6)
    try:
        mass[2, BASE] *= 1.5
        mass[5, BASE] *= 0.7
        engine.commit_model(np.array([2, 5]))
        in_the_air(engine)
        engine.step(24)
        z = engine.qpos[:, 2]
        assert z[2] < 1.0 - 1e-3  # heavier than the thrust carries: falls
        assert z[5] > 1.0 + 1e-3  # lighter: rises
        np.testing.assert_allclose(z[np.setdiff1d(np.arange(N), [2, 5])], 1.0, atol=10 * tol)
        heavy = mujoco.MjModel.from_xml_string(MJCF)
        heavy.body_mass[BASE] *= 1.5
        mujoco.mj_setConst(heavy, mujoco.MjData(heavy))
        alone = step_alone(heavy, [0, 0, 1, 1, 0, 0, 0], np.zeros(6), [HOVER] * 4, 24)
        np.testing.assert_allclose(engine.qpos[2], alone.qpos, rtol=0, atol=10 * tol)
    finally:
        mass[:] = MODEL.body_mass
        engine.commit_model()


def test_motor_lag_slows_thrust_build_up(engine):
    lag_s = 0.1
    dynprm = engine.model_field("actuator_dynprm")
    try:
        dynprm[1, :, 0] = lag_s
        engine.commit_model(np.array([1]))
        in_the_air(engine)
        engine.ctrl[:] = 2 * HOVER
        steps = 24
        engine.step(steps)
        expected = 2 * HOVER * -np.expm1(-steps * engine.physics_dt / lag_s)
        rtol = ACT_RTOL[engine.name]
        np.testing.assert_allclose(engine.act[1], expected, rtol=rtol)
        np.testing.assert_allclose(engine.act[0], 2 * HOVER, rtol=rtol)
        z = engine.qpos[:, 2]  # reset zeroed act: the lagging motors start from no thrust
        assert z[1] < z[0] - 1e-3
    finally:
        dynprm[:] = MODEL.actuator_dynprm
        engine.commit_model()


@pytest.mark.parametrize("bad", [np.nan, 1e30], ids=["nan", "huge"])
def test_a_blown_up_simulation_is_flagged_alone_and_recovers_by_reset(engine, bad):
    blow_up(engine, bad)
    engine.step(8)
    np.testing.assert_array_equal(engine.unstable(), np.arange(N) == 3)
    others = np.arange(N) != 3
    assert np.isfinite(engine.qpos[others]).all() and np.isfinite(engine.qvel[others]).all()
    in_the_air(engine)  # what a task does with a flagged simulation: write a fresh state
    engine.step(8)
    assert not engine.unstable().any()
    np.testing.assert_allclose(engine.qpos[:, 2], 1.0, atol=1e-4)
    engine.qvel[1, 4] = 2e4  # a diverged state written directly is flagged too
    np.testing.assert_array_equal(engine.unstable(), np.arange(N) == 1)
    in_the_air(engine)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("engine_name", "package"),
    [("pybullet", "pybullet"), ("warp", "mujoco_warp"), ("genesis", "genesis")],
)
def test_an_engine_that_is_not_installed_names_its_extra(engine_name, package, tmp_path):
    """Hide the package from a fresh interpreter, then ask for the engine, as the CLI does."""
    code = (
        f"import sys; sys.modules[{package!r}] = None\n"
        "from simreal.cli import main\n"
        f"raise SystemExit(main(['train', 'quad-hover', '--engine', {engine_name!r}, "
        f"'--steps', '1', '--out', {str(tmp_path)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert f"pip install 'simreal[{engine_name}]'" in proc.stderr
    assert "Traceback" not in proc.stderr
