"""Allegro-like hand: model facts, joint order and limits, servos holding a pose."""

from __future__ import annotations

import mujoco
import numpy as np

from simreal.robots.allegro import (
    FINGER_JOINT_NAMES,
    FINGERTIP_SITES,
    JOINT_NAMES,
    build_mjcf,
    describe,
    hand_mass,
    joint_limits,
)


def _model() -> tuple[mujoco.MjModel, mujoco.MjData]:
    model = mujoco.MjModel.from_xml_string(build_mjcf())
    return model, mujoco.MjData(model)


def test_model_compiles_with_22_joints_and_actuators_in_action_order():
    model, _ = _model()
    assert model.njnt == model.nu == 22 == len(JOINT_NAMES)
    assert [model.joint(i).name for i in range(22)] == list(JOINT_NAMES)
    assert [model.actuator(i).name for i in range(22)] == list(JOINT_NAMES)
    assert FINGER_JOINT_NAMES[:4] == ("ffj0", "ffj1", "ffj2", "ffj3")
    assert FINGER_JOINT_NAMES[12:] == ("thj0", "thj1", "thj2", "thj3")
    # Three slides, then three hinges, then 16 finger hinges.
    assert list(model.jnt_type[:3]) == [mujoco.mjtJoint.mjJNT_SLIDE] * 3
    assert list(model.jnt_type[3:]) == [mujoco.mjtJoint.mjJNT_HINGE] * 19


def test_joint_limits_follow_the_public_allegro_ranges():
    model, _ = _model()
    lower, upper = joint_limits()
    np.testing.assert_allclose(model.jnt_range[:, 0], lower)
    np.testing.assert_allclose(model.jnt_range[:, 1], upper)
    np.testing.assert_allclose(model.actuator_ctrlrange, model.jnt_range)
    i = JOINT_NAMES.index
    assert (lower[i("ffj0")], upper[i("ffj0")]) == (-0.47, 0.47)
    assert (lower[i("thj0")], upper[i("thj0")]) == (0.263, 1.396)
    assert (lower[i("thj3")], upper[i("thj3")]) == (-0.162, 1.719)


def test_mass_and_fingertip_sensing():
    model, data = _model()
    assert 0.9 < hand_mass() < 1.1
    hand_bodies = [model.body(n).id for n in ("palm", "ff_base", "th_distal")]
    np.testing.assert_allclose(model.body_gravcomp[hand_bodies], 1.0)
    sensors = [model.sensor(i).name for i in range(model.nsensor)]
    assert sensors == [f"{s}_touch" for s in FINGERTIP_SITES] + [
        f"{s}_pos" for s in FINGERTIP_SITES
    ]
    mujoco.mj_forward(model, data)
    # Fingers point along +x at zero angles: the middle tip 13 cm beyond the knuckles,
    # which sit 9.5 cm ahead of the wrist (the base of the palm).
    np.testing.assert_allclose(data.site("mf_tip").xpos, [0.095 + 0.1285, 0.0, 0.2], atol=1e-3)


def test_flexion_curls_fingers_down_towards_the_palm_side():
    model, data = _model()
    data.qpos[JOINT_NAMES.index("mfj1")] = 1.0
    mujoco.mj_forward(model, data)
    assert data.site("mf_tip").xpos[2] < 0.2 - 0.05


def test_servos_hold_a_pose():
    model, data = _model()
    lower, upper = (np.array(x) for x in joint_limits())
    target = lower + 0.3 * (upper - lower)
    target[:3] = [0.05, -0.03, 0.1]
    data.ctrl[:] = target
    for _ in range(400):  # 2 s
        mujoco.mj_step(model, data)
    np.testing.assert_allclose(data.qpos[:3], target[:3], atol=2e-3)
    np.testing.assert_allclose(data.qpos[3:], target[3:], atol=0.02)
    assert np.abs(data.qvel).max() < 1e-2


def test_describe_lists_every_joint():
    text = describe()
    assert all(name in text for name in JOINT_NAMES)
