"""The G1 in PyBullet (issue 74): loaded from simreal's URDF, driven like mjbatch, refused
where it lacks a feature, and compared with mjbatch on short open-loop trajectories.

Agreement thresholds (AGREEMENT) are the measured differences with margin, measured
2026-12-08 on this CPU (pybullet 3.2.7, mujoco 3.14.0), `python bench/g1_engines.py`:

| case | joints max / mean (rad) | base height max (m) |
|---|---|---|
| chirp, hung, 2 s | 0.035 / 0.0050 | - |
| drop from 0.3 m, 1 s | 0.146 / 0.0040 | 0.0049 |
| stand under PD, 1 s | 0.0127 / 0.0015 | 0.0021 |

The hung chirp has no contacts, so it agrees closely: what remains is rotor armature
(folded into link inertia in PyBullet, a joint-space term in MuJoCo), dry joint friction
(PyBullet's hard velocity-motor constraint against MuJoCo's soft frictionloss) and the
actuators' damping (explicit in PyBullet at 2 substeps, implicit in MuJoCo). The contact
cases differ more: PyBullet's contacts are rigid (LCP, friction pyramid), MuJoCo's soft
(the feet sink a few mm and the impact is spread over several steps), so the landing
shock reaches the ankles differently.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pybullet
import pytest

from simreal.robots.g1.joints import JOINT_NAMES
from simreal.robots.g1.mjcf import build_mjcf
from simreal.sim import g1_crosscheck
from simreal.sim.engine import Engine, make_engine, sensor_view
from simreal.sim.pybullet_articulated import PyBulletArticulatedEngine
from simreal.tasks import get_task, make_env

AGREEMENT = {
    # case: (duration s, joint max rad, joint mean rad, base height max m)
    "chirp": (2.0, 0.06, 0.01, None),
    "drop": (1.0, 0.25, 0.01, 0.02),
    "stand": (1.0, 0.03, 0.005, 0.006),
}


def test_the_g1_loads_with_mjbatch_layout_floating_and_hung():
    for mjcf in (build_mjcf(), g1_crosscheck.hung_mjcf()):
        ref = make_engine("mjbatch", mjcf, 3)
        engine = make_engine("pybullet", mjcf, 3)
        assert isinstance(engine, PyBulletArticulatedEngine)
        assert isinstance(engine, Engine)
        for name in ("qpos", "qvel", "ctrl", "act", "xfrc_applied"):
            assert getattr(engine, name).shape == getattr(ref, name).shape, name
        np.testing.assert_allclose(engine.qpos, ref.qpos, atol=1e-9)
        # PyBullet joints in MuJoCo's (hardware) order
        joints = [engine.model.joint(j).name for j in engine._hinges]
        assert joints == list(JOINT_NAMES)
        engine.close()


def test_torques_are_mujocos_position_actuators_and_default_motors_are_off():
    """Zero PD gains and no dry friction: nothing holds the hung legs, so they swing under
    gravity exactly as far as in MuJoCo's first step (PyBullet's default velocity motors
    would hold them)."""
    mjcf = g1_crosscheck.hung_mjcf().replace('frictionloss="0.3"', 'frictionloss="0"')
    engine = make_engine("pybullet", mjcf, 2)
    engine.ctrl[:] = 0.1
    tau = engine.joint_torques()
    gain = engine.model_field("actuator_gainprm")[..., 0]
    bias = engine.model_field("actuator_biasprm")
    q, qd = engine.qpos, engine.qvel
    expected = gain * 0.1 + bias[..., 1] * q + bias[..., 2] * qd - 0.11 * qd
    lo, hi = engine.model_field("actuator_forcerange").transpose(2, 0, 1)
    np.testing.assert_allclose(tau, np.clip(expected, lo, hi), atol=1e-12)
    engine.model_field("actuator_gainprm")[:] = 0.0
    engine.model_field("actuator_biasprm")[:] = 0.0
    engine.ctrl[:] = 0.0
    start = engine.qpos.copy()
    for _ in range(20):
        engine.step(1)
    moved = np.abs(engine.qpos - start).max()
    assert moved > 0.05  # free to fall: no motor holds the joints
    engine.close()


@pytest.mark.parametrize(
    ("task", "feature"),
    [("g1-walk", "height field"), ("g1-pull", "tendons")],
)
def test_a_task_needing_what_pybullet_lacks_is_refused_at_construction(task, feature):
    with pytest.raises(ValueError, match=rf"pybullet engine.*{feature}"):
        make_env(task, get_task(task).config_cls(), 2, "pybullet", seed=0)


def test_native_motors_and_unknown_robots_are_refused_naming_the_feature():
    with pytest.raises(ValueError, match=r"pybullet engine.*dcmotor actuator gain.*29 actuators"):
        make_engine("pybullet", build_mjcf(native_motors=True), 1)
    arm = """<mujoco model="arm"><worldbody><body name="a"><joint name="j" type="hinge"/>
      <geom type="capsule" size="0.02 0.1"/></body></worldbody></mujoco>"""
    with pytest.raises(ValueError, match=r"model 'arm' has no URDF for PyBullet"):
        make_engine("pybullet", arm, 1)


@pytest.mark.parametrize("case", g1_crosscheck.CASES)
def test_open_loop_trajectories_agree_with_mjbatch(case):
    duration, joint_max, joint_mean, height_max = AGREEMENT[case]
    spec = g1_crosscheck.make_case(case, duration)
    ref = g1_crosscheck.run_case(spec, "mjbatch")
    got = g1_crosscheck.run_case(spec, "pybullet")
    result = g1_crosscheck.agreement(spec, ref, got)
    assert result["motion_rad"] > 0.2  # the case really moves the joints
    assert result["joint_max_rad"] <= joint_max, result
    assert result["joint_mean_rad"] <= joint_mean, result
    if height_max is not None:
        assert result["height_max_m"] <= height_max, result


def test_g1_force_evaluation_runs_on_pybullet_with_its_model_fields():
    """The evaluation config writes the G1's model fields at their nominal values (joint
    friction and damping, link masses, foot friction): PyBullet takes them, and the robot
    stands under the policy-free default command for 0.2 s."""
    cfg = dataclasses.replace(get_task("g1-force").config_cls(), evaluation=True)
    env = make_env("g1-force", cfg, 2, "pybullet", seed=0)
    env.reset()
    for _ in range(10):
        result = env.step(np.zeros((2, env.num_actions), np.float32))
        assert not result.terminated.any()
    assert 0.6 < env.engine.qpos[:, 2].min() < 0.8


def test_fields_pybullet_cannot_change_per_copy_are_refused_when_changed():
    engine = make_engine("pybullet", build_mjcf(), 2)
    engine.model_field("body_mass")[1] *= 1.1
    engine.model_field("body_inertia")[1] *= 1.1
    engine.commit_model()  # mass with inertia scaled alike: PyBullet takes it
    torso = engine.model.body("torso_link").id
    link = next(k for k, bodies in engine._link_bodies.items() if bodies == [torso])
    mass = [
        pybullet.getDynamicsInfo(engine._ids[r], link, physicsClientId=engine._client)[0]
        for r in (0, 1)
    ]
    nominal = engine.model.body_mass[torso]
    np.testing.assert_allclose(mass, [nominal, 1.1 * nominal], rtol=1e-9)
    engine.model_field("body_ipos")[0, 16, 0] += 0.02
    with pytest.raises(ValueError, match=r"'body_ipos'.*pybullet engine"):
        engine.commit_model()
    engine.close()


def test_the_self_contact_sensor_is_computed_and_other_sensors_refused():
    """g1-walk's self-contact penalty reads MuJoCo's contact sensor; PyBullet counts its
    own robot-robot contact points. An arm swung into the torso touches it in both."""
    engine = make_engine("pybullet", build_mjcf(), 1)
    view = sensor_view(engine, "self_contact", "test")
    assert view.shape == (1, 2)
    engine.step(1)
    assert view[0, 0] == 0  # standing pose: the excluded pairs only
    q = engine.qpos.copy()
    q[0, 7 + JOINT_NAMES.index("left_shoulder_roll_joint")] = -1.5  # through the torso
    engine.reset(np.arange(1), q, np.zeros_like(engine.qvel))
    engine.step(1)
    assert view[0, 0] > 0 and view[0, 1] < 0
    with pytest.raises(ValueError, match=r"'imu_torso_gyro'.*pybullet engine computes only"):
        sensor_view(engine, "imu_torso_gyro", "test")
    engine.close()
