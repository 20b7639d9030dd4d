"""g1-force's balance arithmetic: the FAT2 lean target and torso lean, the quasi-static
centre of pressure under loads, and the COP-support reward."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from simreal.config import apply_overrides
from simreal.tasks import make_env
from simreal.tasks.g1 import fat2_target_tilt, torso_lean
from simreal.tasks.g1.fat2 import GRAVITY
from simreal.tasks.g1_force import G1ForceConfig, G1ForceEnv


def make(num_envs: int = 4, **fields) -> G1ForceEnv:
    return make_env("g1-force", G1ForceConfig(**fields), num_envs=num_envs, seed=0)


def test_fat2_target_is_zero_without_force_and_leans_into_a_push():
    points = np.array([[0.0, 0.0, 1.0], [0.2, 0.2, 0.7], [0.2, -0.2, 0.7]])
    com = np.array([0.0, 0.0, 0.7])
    mass, big = 33.0, 10.0
    none = fat2_target_tilt(np.zeros((1, 3, 3)), points, com, mass, big)
    np.testing.assert_allclose(none, 0.0, atol=1e-12)
    forces = np.zeros((2, 3, 3))
    forces[0, 0, 0] = -100.0  # pushed backward at the torso, 1 m up
    forces[1, 0, 1] = 100.0  # pushed to the left
    lean = fat2_target_tilt(forces, points, com, mass, big)
    expected = math.atan(100.0 * 1.0 / (mass * GRAVITY * 0.7))
    np.testing.assert_allclose(lean[0], [expected, 0.0], atol=1e-12)  # forward, into it
    np.testing.assert_allclose(lean[1], [0.0, -expected], atol=1e-12)  # to the right
    clipped = fat2_target_tilt(forces, points, com, mass, 0.2)
    np.testing.assert_allclose(clipped[0], [0.2, 0.0])
    load = np.zeros((1, 3, 3))
    load[0, 1:, 2] = -50.0  # both forward-held hands pulled down
    assert fat2_target_tilt(load, points, com, mass, big)[0, 0] < 0.0  # lean back


def test_torso_lean_measures_tilt_towards_heading_axes():
    a = 0.3
    up = np.array([[math.sin(a), 0.0, math.cos(a)], [0.0, -math.sin(a), math.cos(a)]])
    np.testing.assert_allclose(torso_lean(up), [[a, 0.0], [0.0, -a]], atol=1e-12)


def test_env_fat2_reference_is_the_standing_robot():
    env = make(1)
    env.reset()
    assert env.mass == pytest.approx(33.34, abs=0.01)
    np.testing.assert_allclose(env.fat2_com[:2], 0.0, atol=1e-12)
    assert env.fat2_points[0, 2] > env.fat2_com[2] > 0.5  # torso above the CoM
    np.testing.assert_allclose(env.torso_lean(), 0.0, atol=0.05)  # upright at reset


def test_quasi_static_cop_balances_gravity_against_the_loads_moments():
    from simreal.tasks.g1_force.rewards import quasi_static_cop

    com = np.array([[0.1, -0.2, 0.7]] * 4)
    mass, weight = 30.0, 30.0 * GRAVITY
    points = np.zeros((4, 2, 3))
    points[:, 0] = [0.0, 0.0, 1.0]  # torso, 1 m above a floor at z = 0.05
    points[:, 1] = [0.3, 0.1, 0.8]  # a hand held forward
    forces = np.zeros((4, 2, 3))
    forces[1, 0] = [-100.0, 0.0, 0.0]  # torso pushed backward
    forces[2, 0] = [0.0, 50.0, 0.0]  # and to the left
    forces[3, 1] = [0.0, 0.0, -60.0]  # the hand carries a load down
    cop = quasi_static_cop(com, mass, forces, points, np.full(4, 0.05))
    np.testing.assert_allclose(cop[0], [0.1, -0.2])  # unloaded: under the CoM
    np.testing.assert_allclose(cop[1], [0.1 - 100.0 * 0.95 / weight, -0.2])
    np.testing.assert_allclose(cop[2], [0.1, -0.2 + 50.0 * 0.95 / weight])
    # the hand's load pulls the CoP towards the hand, weighted by the total vertical load
    expected = (weight * np.array([0.1, -0.2]) + 60.0 * np.array([0.3, 0.1])) / (weight + 60.0)
    np.testing.assert_allclose(cop[3], expected)
    # a load that would lift the robot keeps the CoP finite
    forces[0, 0] = [10.0, 0.0, 2.0 * weight]
    assert np.isfinite(quasi_static_cop(com, mass, forces, points, np.zeros(4))).all()


def test_cop_support_pays_a_posture_whose_load_keeps_the_cop_mid_stance():
    from simreal.tasks.g1_force import rewards

    assert G1ForceConfig().reward_weights["cop_support"] == 0.0  # named, off by default
    env = make_env(
        "g1-force",
        apply_overrides(G1ForceConfig(randomize=False), ["reward_weights.cop_support=1.0"]),
        num_envs=3,
    )
    env.reset()
    for _ in range(5):
        env.step(np.zeros((3, 29)))
    # the sensors are MuJoCo's (one physics step behind): the robot's CoM, the loaded links'
    data = mujoco.MjData(env.engine.model)
    data.qpos[:] = env.engine.qpos[0]
    mujoco.mj_forward(env.engine.model, data)
    pelvis = env.engine.model.body("pelvis").id
    np.testing.assert_allclose(env.robot_com()[0], data.subtree_com[pelvis], atol=0.01)
    np.testing.assert_allclose(env.load_points()[0], data.xipos[env.force_body_ids], atol=0.01)
    standing = rewards.cop_support_term(env)
    assert (standing > 0.5).all()  # unloaded, the CoP sits near mid-stance
    env.external_force[:] = 0.0
    env.external_force[1, 0] = [-100.0, 0.0, 0.0]  # the same posture under a 100 N push
    loaded = rewards.cop_support_term(env)
    assert loaded[1] < 0.01 and loaded[0] == pytest.approx(standing[0])
    env.foot_pos[2, 0, 2] += 0.1  # a foot in the air: stepping earns nothing
    assert rewards.cop_support_term(env)[2] == 0.0
    with pytest.raises(ValueError, match=r"cop_sigma_m .* 0\.0"):
        G1ForceConfig(cop_sigma_m=0.0).validate()
