"""The pybullet engine: the mjbatch interface on PyBullet, with the Crazyflie physics of MuJoCo.

Everything here runs real PyBullet next to real MuJoCo (mjbatch or a plain MjData).
"""

from __future__ import annotations

import time

import numpy as np
import pybullet as p
import pytest
from _crazyflie import HOVER, MJCF, PARAMS, blow_up, in_the_air

from simreal.sim import Engine, make_engine
from simreal.sim.mjbatch_engine import MjBatchEngine
from simreal.sim.pybullet_engine import (
    AGREEMENT_ATTITUDE_DEG,
    AGREEMENT_POSITION_M,
    DIVERGED_QVEL,
    PyBulletEngine,
)
from simreal.tasks import make_env
from simreal.tasks.quad_hover import QuadHoverConfig
from simreal.tasks.quad_track import QuadTrackConfig
from simreal.tasks.quadrotor import QuadPhysics, QuadRandomization
from simreal.tasks.rotations import quat_from_roll_pitch_yaw, roll_pitch

N = 6
BASE = 1
REST_Z = PARAMS.collision_height / 2

BRICK = """<mujoco>
  <option timestep="{dt}" gravity="0.3 -0.2 -0.5"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="brick" pos="0.2 0.1 2" quat="0.9 0.1 0.3 -0.2">
      <freejoint/>
      <inertial pos="{ipos}" quat="0.8 0.2 -0.3 0.1" mass="0.7" diaginertia="0.004 0.006 0.009"/>
      <geom type="box" size="0.1 0.05 0.03" mass="0"/>
      <geom type="capsule" size="0.02 0.05" pos="0 0.1 0" mass="0"/>
      <site name="a" pos="0.1 0.05 -0.02" quat="0.7 0.3 -0.4 0.2"/>
      <site name="b" pos="-0.1 0 0.02"/>
    </body>
  </worldbody>
  <actuator>
    <general site="a" gear="0.2 0.3 1 0.01 -0.02 0.05" dyntype="filter" dynprm="0.05"/>
    <general site="b" gear="0 0 1 0 0 -0.03" gainprm="2" ctrllimited="true" ctrlrange="0 0.3"/>
  </actuator>
</mujoco>
"""
"""A free body unlike the Crazyflie in every supported way: rotated inertial frame, two geom
kinds, tilted site, force and torque gear, Euler filter without actearly, gain, control
range, sideways gravity."""


pytestmark = pytest.mark.usefixtures("work_in_tmp")


@pytest.fixture
def engine():
    engine = PyBulletEngine.from_xml(MJCF, N)
    yield engine
    engine.close()


def attitude_error_deg(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Rotation angle (degrees) between (n, 4) quaternions, accurate near zero."""
    w = np.sum(q1 * q2, axis=1)
    v = q1[:, [0]] * q2[:, 1:] - q2[:, [0]] * q1[:, 1:] - np.cross(q1[:, 1:], q2[:, 1:])
    return np.degrees(2 * np.arctan2(np.linalg.norm(v, axis=1), np.abs(w)))


def manoeuvre() -> np.ndarray:
    """(60, 4) per-motor thrust (N) at 30 Hz for 2 s: climb, roll, pitch, yaw, hover.

    Motors: 0 front-right, 1 back-right, 2 back-left, 3 front-left; 1 and 3 yaw +z.
    """
    d = 0.025 * HOVER
    roll, pitch, yaw = np.array([-1, -1, 1, 1]), np.array([-1, 1, 1, -1]), np.array([-1, 1, -1, 1])
    phases = [
        (15, 1.2 * HOVER * np.ones(4)),
        (3, HOVER + d * roll),
        (3, HOVER - d * roll),
        (3, HOVER + d * pitch),
        (3, HOVER - d * pitch),
        (6, HOVER + 2 * d * yaw),
        (6, HOVER - 2 * d * yaw),
        (21, HOVER * np.ones(4)),
    ]
    return np.concatenate([np.tile(thrust, (steps, 1)) for steps, thrust in phases])


def test_crazyflie_flight_matches_mjbatch():
    """The same open-loop thrust schedule (2 s at 240 Hz, 8 substeps per 30 Hz command:
    climb, roll, pitch and yaw by differential thrust, hover) from the same tilted, moving
    start in the air gives the same trajectory in both engines, for a copy without motor
    lag and one with a 30 ms lag.

    Measured: 2e-14 m and 1e-12 degrees at most (tilt up to 12 degrees, 1 to 2.6 m high),
    which is rounding error: both integrate with semi-implicit Euler, the same gyroscopic
    term and the same exact quaternion update. Tolerance, with a margin for other builds
    and platforms: AGREEMENT_POSITION_M (1e-9 m) and AGREEMENT_ATTITUDE_DEG (1e-6 degrees).
    """
    engines = [MjBatchEngine.from_xml(MJCF, 2, num_threads=1), PyBulletEngine.from_xml(MJCF, 2)]
    qpos = np.tile([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], (2, 1))
    roll, pitch, yaw = np.array([0.05, -0.03]), np.array([-0.04, 0.02]), np.array([0.3, -1.0])
    qpos[:, 3:] = quat_from_roll_pitch_yaw(roll, pitch, yaw)
    qvel = np.array([[0.1, -0.2, 0.05, 0.05, -0.03, 0.5], [-0.1, 0.1, 0.0, -0.04, 0.02, -0.3]])
    for engine in engines:
        engine.model_field("actuator_dynprm")[1, :, 0] = 0.03
        engine.commit_model(np.array([1]))
        engine.reset(np.arange(2), qpos, qvel)
    mj, pb = engines
    position_error, attitude_error, tilt, height = 0.0, 0.0, 0.0, []
    for thrust in manoeuvre():
        for engine in engines:
            engine.ctrl[:] = thrust
            engine.step(8)
        position_error = max(position_error, np.abs(mj.qpos[:, :3] - pb.qpos[:, :3]).max())
        attitude_error = max(
            attitude_error, attitude_error_deg(mj.qpos[:, 3:], pb.qpos[:, 3:]).max()
        )
        tilt = max(tilt, np.abs(np.concatenate(roll_pitch(mj.qpos[:, 3:]))).max())
        height.append(mj.qpos[:, 2].copy())
    pb.close()
    assert position_error < AGREEMENT_POSITION_M
    assert attitude_error < AGREEMENT_ATTITUDE_DEG
    np.testing.assert_allclose(pb.qvel, mj.qvel, rtol=0, atol=1e-9)
    np.testing.assert_allclose(pb.act, mj.act, rtol=0, atol=1e-12)
    assert np.degrees(tilt) > 5  # the manoeuvre really rolls and pitches,
    assert np.min(height) > 0.5  # far from the floor,
    assert np.ptp(np.array(height)[:, 0] - np.array(height)[:, 1]) > 1e-3  # and lag matters


@pytest.mark.parametrize("dt", [0.005, 1e-5], ids=["5ms", "10us"])
def test_general_free_body_matches_mujoco(dt):
    """A body unlike the Crazyflie (BRICK) in the air for 25 random controls, one copy
    also pushed by a world-frame xfrc_applied wrench.

    With the centre of mass at the body origin the engines agree to rounding error
    (measured 4e-15). With it 5 cm off, MuJoCo integrates the velocity of the body origin
    and PyBullet that of the centre of mass: both semi-implicit Euler, with one-step
    errors that differ by O(dt^2 |omega|^2 r). Measured over 0.5 s at a 5 ms step:
    4e-4 in qpos, 6e-3 in qvel; over 1 ms at a 10 us step: 5e-10 and 6e-9, which checks
    the frame conversions (an error in them would show at 1e-2 and above).
    """
    offset_tolerance = {0.005: (1e-3, 2e-2), 1e-5: (1e-8, 1e-7)}[dt]
    for ipos, (qpos_atol, qvel_atol) in (
        ("0 0 0", (1e-12, 1e-12)),
        ("0.05 -0.02 0.03", offset_tolerance),
    ):
        mjcf = BRICK.format(dt=dt, ipos=ipos)
        engines = [MjBatchEngine.from_xml(mjcf, 2, num_threads=1), PyBulletEngine.from_xml(mjcf, 2)]
        rng = np.random.default_rng(0)
        qvel = rng.uniform(-1, 1, (2, 6))
        for engine in engines:
            engine.reset(np.arange(2), engine.qpos.copy(), qvel)
        for _ in range(25):
            ctrl, wrench = rng.uniform(0, 0.5, 2), rng.uniform(-0.05, 0.05, 6)
            for engine in engines:
                engine.ctrl[:] = ctrl
                engine.xfrc_applied[1, 1] = wrench
                engine.step(round(0.02 / max(dt, 0.005)))
        mj, pb = engines
        pb.close()
        assert mj.qpos[:, 2].min() > 1.0  # in the air
        np.testing.assert_allclose(pb.qpos, mj.qpos, rtol=0, atol=qpos_atol, err_msg=ipos)
        np.testing.assert_allclose(pb.qvel, mj.qvel, rtol=0, atol=qvel_atol, err_msg=ipos)
        np.testing.assert_allclose(pb.act, mj.act, rtol=0, atol=1e-12)


def test_crazyflie_resting_on_the_floor_stays_at_rest_in_both_engines():
    """No thrust and half the hover thrust, 2 s on the floor: both engines keep the drone
    where it lies (contacts differ: PyBullet's are rigid, MuJoCo's sink 0.1 mm)."""
    start = np.tile([0.0, 0.0, REST_Z, 1.0, 0.0, 0.0, 0.0], (2, 1))
    start[1, :2] = [0.3, -0.2]
    for engine in (
        MjBatchEngine.from_xml(MJCF, 2, num_threads=1),
        PyBulletEngine.from_xml(MJCF, 2),
    ):
        engine.reset(np.arange(2), start, np.zeros((2, 6)))
        engine.ctrl[1] = HOVER / 2
        for _ in range(60):
            engine.step(8)
        name = type(engine).__name__
        np.testing.assert_allclose(engine.qpos[:, 2], REST_Z, atol=5e-4, err_msg=name)
        np.testing.assert_allclose(engine.qpos[:, :2], start[:, :2], atol=1e-4, err_msg=name)
        assert attitude_error_deg(engine.qpos[:, 3:], start[:, 3:]).max() < 0.05, name
        assert np.abs(engine.qvel).max() < 1e-3, name
        assert not engine.unstable().any(), name


def test_pybullet_applies_base_torques_and_forces_in_the_frame_asked_for():
    """Old PyBullet swapped LINK_FRAME and WORLD_FRAME in applyExternalTorque on a base
    (bullet3 #1949); this engine relies on both flags meaning what they say."""
    client = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, 0, physicsClientId=client)
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=0.1, physicsClientId=client)
        body_z_is_world_minus_y = p.getQuaternionFromEuler([np.pi / 2, 0, 0])
        results = {}
        for flag in (p.WORLD_FRAME, p.LINK_FRAME):
            for kind in ("force", "torque"):
                body = p.createMultiBody(
                    1.0, shape, -1, [0, 0, 0], body_z_is_world_minus_y, physicsClientId=client
                )
                p.changeDynamics(body, -1, localInertiaDiagonal=[1, 1, 1], physicsClientId=client)
                if kind == "force":
                    p.applyExternalForce(
                        body, -1, [0, 0, 1], [0, 0, 0], flag, physicsClientId=client
                    )
                else:
                    p.applyExternalTorque(body, -1, [0, 0, 1], flag, physicsClientId=client)
                p.stepSimulation(physicsClientId=client)
                lin, ang = p.getBaseVelocity(body, physicsClientId=client)
                results[flag, kind] = np.sign(np.round(lin if kind == "force" else ang, 9))
                p.removeBody(body, physicsClientId=client)
    finally:
        p.disconnect(physicsClientId=client)
    for kind in ("force", "torque"):
        np.testing.assert_array_equal(results[p.WORLD_FRAME, kind], [0, 0, 1], err_msg=kind)
        np.testing.assert_array_equal(results[p.LINK_FRAME, kind], [0, -1, 0], err_msg=kind)


def test_model_field_refuses_what_pybullet_cannot_vary(engine):
    """The per-copy fields it does vary are checked by tests/test_engine_contract.py."""
    assert engine.model_field("actuator_dynprm").shape == (N, 4, 10)
    with pytest.raises(ValueError, match=r"geom_friction.*body_mass"):
        engine.model_field("geom_friction")


@pytest.mark.parametrize("bad", [np.nan, 1e30], ids=["nan", "huge"])
def test_bad_state_or_control_restarts_that_copy_and_is_reported_once(engine, bad):
    blow_up(engine, bad)
    engine.ctrl[4, 0] = np.nan
    engine.step(8)
    # Like MuJoCo, the engine restarted copies 3 and 4 from the model's initial state.
    assert np.isfinite(engine.qpos).all() and np.isfinite(engine.qvel).all()
    np.testing.assert_array_equal(engine.unstable(), np.isin(np.arange(N), [3, 4]))
    engine.step(1)
    assert not engine.unstable().any()
    in_the_air(engine)
    engine.step(1)
    assert not engine.unstable().any()
    engine.qvel[1, 4] = 2 * DIVERGED_QVEL
    np.testing.assert_array_equal(engine.unstable(), np.arange(N) == 1)


def test_make_engine_builds_it_and_rejects_unsupported_models():
    engine = make_engine("pybullet", MJCF, 3)
    assert isinstance(engine, Engine)
    assert (engine.num_envs, engine.num_threads) == (3, 1)
    assert engine.physics_dt == pytest.approx(1.0 / 240.0)
    engine.close()
    hinge = """<mujoco><worldbody><body name="arm"><joint name="elbow" type="hinge"/>
      <geom type="capsule" size="0.02 0.1"/></body></worldbody>
      <actuator><motor joint="elbow"/></actuator></mujoco>"""
    # an articulated model goes to the articulated engine, which needs the robot's URDF
    with pytest.raises(ValueError, match=r"model 'MuJoCo Model' has no URDF for PyBullet"):
        make_engine("pybullet", hinge, 2)
    mesh = """<mujoco><asset><mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>
      <worldbody><geom type="box" size="1 1 0.1"/><body><freejoint/><geom type="mesh" mesh="m"/>
      </body></worldbody></mujoco>"""
    with pytest.raises(ValueError, match=r"only planes.*mesh"):
        make_engine("pybullet", mesh, 2)


@pytest.mark.parametrize(
    ("task", "cfg"),
    [
        ("quad-hover", QuadHoverConfig()),
        (
            "quad-track",
            QuadTrackConfig(
                physics=QuadPhysics(ground_effect=True, drag=True),
                randomization=QuadRandomization(mass_scale=(0.8, 1.2), motor_lag_s=(0.0, 0.05)),
            ),
        ),
    ],
    ids=["quad-hover", "quad-track-randomized-aero"],
)
def test_quad_tasks_run_on_pybullet(task, cfg):
    env = make_env(task, cfg, 4, engine="pybullet")
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(50):
        result = env.step(rng.uniform(-1, 1, (4, env.num_actions)).astype(np.float32))
        assert np.isfinite(result.obs).all() and np.isfinite(result.reward).all()
    assert obs.shape == (4, env.num_obs)
    assert env.unstable_resets == 0
    env.engine.close()


def test_quad_hover_steps_per_second_side_by_side():
    """Printed, not asserted: PyBullet steps each copy from Python, mjbatch in C++."""
    rates = {}
    actions = np.random.default_rng(0).uniform(-1, 1, (40, 64, 4)).astype(np.float32)
    for name in ("mjbatch", "pybullet"):
        env = make_env("quad-hover", QuadHoverConfig(), 64, engine=name)
        env.reset()
        env.step(actions[0])
        start = time.perf_counter()
        for action in actions:
            env.step(action)
        rates[name] = actions.shape[0] * 64 / (time.perf_counter() - start)
    print(
        f"\nquad-hover, 64 envs: mjbatch {rates['mjbatch']:,.0f} env-steps/s, "
        f"pybullet {rates['pybullet']:,.0f} env-steps/s "
        f"({rates['mjbatch'] / rates['pybullet']:.1f}x)"
    )
