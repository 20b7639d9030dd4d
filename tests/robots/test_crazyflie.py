"""The Crazyflie: nominal parameters, its MuJoCo model, and the rotor physics terms."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from simreal.robots.crazyflie import (
    MOTOR_NAMES,
    CrazyflieParams,
    build_mjcf,
    downwash_force,
    drag_force,
    ground_effect_thrust,
)
from simreal.robots.crazyflie.params import MOTOR_DIRECTIONS

PARAMS = CrazyflieParams()
PHYSICS_HZ = 240


pytestmark = pytest.mark.usefixtures("work_in_tmp")


def drone_in_air(height: float = 1.0) -> tuple[mujoco.MjModel, mujoco.MjData]:
    model = mujoco.MjModel.from_xml_string(build_mjcf(PARAMS, physics_dt=1.0 / PHYSICS_HZ))
    data = mujoco.MjData(model)
    data.qpos[:] = [0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0]
    mujoco.mj_forward(model, data)
    return model, data


def test_rotor_speeds_match_gym_pybullet_drones_cf2x():
    # gym-pybullet-drones (g = 9.8) quotes hover 14,468 RPM and max 21,703 RPM for the CF2X.
    assert PARAMS.hover_rpm == pytest.approx(14_468, rel=5e-3)
    assert PARAMS.max_rpm == pytest.approx(21_703, rel=5e-3)
    assert PARAMS.thrust_to_weight == 2.25
    assert 4 * PARAMS.max_thrust / PARAMS.weight == pytest.approx(2.25, rel=1e-12)
    assert 4 * PARAMS.kf * PARAMS.hover_rpm**2 == pytest.approx(PARAMS.weight, rel=1e-12)


def test_rotor_layout_is_an_x_with_the_arm_length():
    offsets = np.asarray(PARAMS.rotor_offsets)
    assert offsets.shape == (4, 3)
    np.testing.assert_allclose(np.linalg.norm(offsets, axis=1), PARAMS.arm, rtol=1e-12)
    # Motor 0 front-right (+x, -y), 1 back-right, 2 back-left, 3 front-left.
    np.testing.assert_array_equal(np.sign(offsets[:, :2]), [[1, -1], [-1, -1], [-1, 1], [1, 1]])
    assert sum(MOTOR_DIRECTIONS) == 0.0


def test_mjcf_compiles_with_the_crazyflie_mass_and_inertia():
    model = mujoco.MjModel.from_xml_string(build_mjcf(PARAMS))
    base = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "base")
    assert model.body_mass[base] == pytest.approx(0.027, rel=1e-9)
    np.testing.assert_allclose(model.body_inertia[base], [1.4e-5, 1.4e-5, 2.17e-5], rtol=1e-9)
    assert model.nq == 7 and model.nv == 6
    assert [model.actuator(i).name for i in range(model.nu)] == list(MOTOR_NAMES)
    # Thrust is bounded by the task's rotor-speed clip, not by the actuator.
    assert not model.actuator_ctrllimited.any()
    assert model.opt.timestep == pytest.approx(1.0 / PHYSICS_HZ)


def test_hover_thrust_holds_the_drone_within_a_millimetre_for_a_second():
    model, data = drone_in_air(1.0)
    data.ctrl[:] = PARAMS.weight / 4
    z = []
    for _ in range(PHYSICS_HZ):
        mujoco.mj_step(model, data)
        z.append(data.qpos[2])
    assert np.max(np.abs(np.asarray(z) - 1.0)) < 1e-3
    np.testing.assert_allclose(data.qpos[3:7], [1.0, 0.0, 0.0, 0.0], atol=1e-6)


def test_without_thrust_the_drone_falls_freely():
    model, data = drone_in_air(1.0)
    n, dt = PHYSICS_HZ // 4, 1.0 / PHYSICS_HZ
    for _ in range(n):
        mujoco.mj_step(model, data)
    assert data.qvel[2] == pytest.approx(-9.81 * n * dt, rel=1e-9)
    # Semi-implicit Euler: each step moves by the velocity at its end.
    assert data.qpos[2] == pytest.approx(1.0 - 9.81 * dt**2 * n * (n + 1) / 2, rel=1e-9)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_yaw_torque_follows_the_motor_directions(sign):
    """Raising motors 1 and 3 and lowering 0 and 2 by the same thrust yaws positively."""
    model, data = drone_in_air(1.0)
    delta = sign * 0.1 * PARAMS.weight / 4
    thrust = PARAMS.weight / 4 + delta * np.asarray(MOTOR_DIRECTIONS)
    data.ctrl[:] = thrust
    steps = PHYSICS_HZ // 10
    for _ in range(steps):
        mujoco.mj_step(model, data)
    yaw_torque = 4 * delta * PARAMS.km / PARAMS.kf
    expected_rate = yaw_torque / PARAMS.inertia[2] * steps / PHYSICS_HZ
    assert np.sign(data.qvel[5]) == sign
    assert data.qvel[5] == pytest.approx(expected_rate, rel=0.02)
    # Equal total thrust, symmetric layout: no roll, no pitch, no climb.
    np.testing.assert_allclose(data.qvel[3:5], 0.0, atol=1e-6)
    assert abs(data.qpos[2] - 1.0) < 1e-4


def test_ground_effect_grows_closer_to_the_ground():
    rpm = np.full((1, 4), PARAMS.hover_rpm)
    heights = np.array([0.1, 0.2, 0.5, 1.0])
    extra = ground_effect_thrust(rpm, heights[None, :], PARAMS.kf, PARAMS)
    assert np.all(np.diff(extra[0]) < 0)
    assert np.all(extra > 0)
    # (prop_radius / 4h)^2 scaling, checked by hand at 0.2 m.
    by_hand = (
        PARAMS.kf
        * PARAMS.hover_rpm**2
        * PARAMS.ground_effect_coeff
        * (PARAMS.prop_radius / (4 * 0.2)) ** 2
    )
    assert extra[0, 1] == pytest.approx(by_hand, rel=1e-12)


def test_ground_effect_is_clipped_below_the_clip_height():
    clip = PARAMS.ground_effect_clip_height
    rpm = np.full((1, 4), PARAMS.hover_rpm)
    heights = np.array([[0.0, -0.01, 0.5 * clip, clip]])
    extra = ground_effect_thrust(rpm, heights, PARAMS.kf, PARAMS)
    assert np.all(np.isfinite(extra))
    np.testing.assert_allclose(extra[0], extra[0, 3], rtol=1e-12)
    above = ground_effect_thrust(rpm, np.array([[1.5 * clip] * 4]), PARAMS.kf, PARAMS)
    assert np.all(above < extra)


def test_ground_effect_clip_height_matches_gym_pybullet_drones():
    """BaseAviary: GND_EFF_H_CLIP = 0.25 R sqrt(15 MAX_RPM^2 KF COEFF / MAX_THRUST), where
    MAX_THRUST = 4 KF MAX_RPM^2 is the thrust of all four motors."""
    total_max_thrust = 4 * PARAMS.kf * PARAMS.max_rpm**2
    expected = (
        0.25
        * PARAMS.prop_radius
        * math.sqrt(
            15 * PARAMS.max_rpm**2 * PARAMS.kf * PARAMS.ground_effect_coeff / total_max_thrust
        )
    )
    assert PARAMS.ground_effect_clip_height == pytest.approx(expected, rel=1e-9)


def test_ground_effect_is_proportional_to_thrust():
    heights = np.full((2, 4), 0.1)
    rpm = np.stack([np.full(4, PARAMS.hover_rpm), np.full(4, 2 * PARAMS.hover_rpm)])
    extra = ground_effect_thrust(rpm, heights, PARAMS.kf, PARAMS)
    np.testing.assert_allclose(extra[1], 4 * extra[0], rtol=1e-12)
    assert np.all(ground_effect_thrust(np.zeros((1, 4)), heights[:1], PARAMS.kf, PARAMS) == 0)


def _rotation_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _rotation_x(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def test_drag_opposes_velocity():
    rng = np.random.default_rng(0)
    n = 16
    rpm = np.full((n, 4), PARAMS.hover_rpm)
    vel = rng.normal(size=(n, 3))
    rot = np.stack([_rotation_z(a) @ _rotation_x(b) for a, b in rng.uniform(-1, 1, (n, 2))])
    force = drag_force(rpm, vel, rot, PARAMS)
    assert force.shape == (n, 3)
    assert np.all(np.einsum("ni,ni->n", force, vel) < 0)
    # Level drone: force = -[cxy, cxy, cz] * (sum of rotor speeds in rad/s) * v.
    level = drag_force(rpm[:1], vel[:1], np.eye(3)[None], PARAMS)
    omega = 4 * PARAMS.hover_rpm * 2 * math.pi / 60
    coeff = np.array([PARAMS.drag_coeff_xy, PARAMS.drag_coeff_xy, PARAMS.drag_coeff_z])
    np.testing.assert_allclose(level[0], -coeff * omega * vel[0], rtol=1e-12)
    # Twice as fast, twice the drag; at rest, none.
    np.testing.assert_allclose(drag_force(rpm, 2 * vel, rot, PARAMS), 2 * force, rtol=1e-12)
    np.testing.assert_array_equal(drag_force(rpm, np.zeros((n, 3)), rot, PARAMS), 0.0)


def test_downwash_pushes_down_only_the_lower_drone():
    positions = np.array([[[0.0, 0.0, 0.5], [0.05, 0.0, 1.0]]])
    force = downwash_force(positions, PARAMS)
    assert force.shape == (1, 2)
    assert force[0, 0] < 0.0
    assert force[0, 1] == 0.0
    c1, c2, c3 = PARAMS.downwash_coeffs
    alpha = c1 * (PARAMS.prop_radius / (4 * 0.5)) ** 2
    beta = c2 * 0.5 + c3
    assert force[0, 0] == pytest.approx(-alpha * math.exp(-0.5 * (0.05 / beta) ** 2), rel=1e-12)


def test_downwash_ignores_drones_level_or_far_away():
    positions = np.array(
        [
            [[0.0, 0.0, 1.0], [0.3, 0.0, 1.0]],  # same height
            [[0.0, 0.0, 0.5], [11.0, 0.0, 1.0]],  # more than 10 m apart horizontally
        ]
    )
    np.testing.assert_array_equal(downwash_force(positions, PARAMS), 0.0)


def test_downwash_sums_over_the_drones_above():
    positions = np.array([[[0.0, 0.0, 0.2], [0.0, 0.0, 0.6], [0.0, 0.0, 1.0]]])
    force = downwash_force(positions, PARAMS)[0]
    assert force[2] == 0.0
    assert force[0] < force[1] < 0.0
    alone = downwash_force(positions[:, [0, 1]], PARAMS)[0, 0]
    other = downwash_force(positions[:, [0, 2]], PARAMS)[0, 0]
    assert force[0] == pytest.approx(alone + other, rel=1e-12)
