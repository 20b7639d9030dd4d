"""`quad-hover`: observation layout, pure terms, resets, terminations, randomization, NaN."""

from __future__ import annotations

import numpy as np
import pytest

from simreal.robots.crazyflie import CrazyflieParams
from simreal.tasks.quad_hover import (
    POLICY_OBSERVATION,
    QuadHoverConfig,
    QuadHoverEnv,
    QuadRandomization,
    QuadState,
    policy_observation,
    rewards,
)
from simreal.tasks.quad_hover.observations import PRIVILEGED_OBSERVATION
from simreal.tasks.rotations import quat_from_roll_pitch_yaw

PARAMS = CrazyflieParams()
GROUND_Z = PARAMS.collision_height / 2
START_Z = GROUND_Z + 0.1
"""Evaluation start height: HoverAviary's collision half-height + 0.1 m."""
BASE = 1


pytestmark = pytest.mark.usefixtures("work_in_tmp")


def make(num_envs: int, seed: int = 0, **cfg) -> QuadHoverEnv:
    env = QuadHoverEnv(QuadHoverConfig(**cfg), num_envs=num_envs, seed=seed, num_threads=1)
    env.reset()
    return env


def write_poses(env: QuadHoverEnv, pos, roll_pitch=None) -> None:
    """Place every simulation at rest at `pos` (N, 3), tilted by `roll_pitch` (N, 2)."""
    pos = np.asarray(pos, dtype=float)
    n = pos.shape[0]
    rp = np.zeros((n, 2)) if roll_pitch is None else np.asarray(roll_pitch, dtype=float)
    env.engine.qpos[:, 0:3] = pos
    env.engine.qpos[:, 3:7] = quat_from_roll_pitch_yaw(rp[:, 0], rp[:, 1], np.zeros(n))
    env.engine.qvel[:] = 0.0


def hover_action(env: QuadHoverEnv) -> np.ndarray:
    return np.zeros((env.num_envs, env.num_actions))


def random_state(n: int, seed: int) -> QuadState:
    rng = np.random.default_rng(seed)
    quat = quat_from_roll_pitch_yaw(*rng.uniform(-0.5, 0.5, (3, n)))
    return QuadState(
        rng.uniform(-1, 1, (n, 3)), quat, rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    )


def test_observation_layout_sizes_sum_to_the_env_sizes():
    assert sum(size for _, size in POLICY_OBSERVATION) == 22
    assert sum(size for _, size in POLICY_OBSERVATION + PRIVILEGED_OBSERVATION) == 31
    env = make(3)
    assert env.num_obs == 22
    assert env.num_critic_obs == 31
    assert env.num_actions == 4
    obs, critic = env.reset()
    assert obs.shape == (3, 22) and obs.dtype == np.float32
    assert critic.shape == (3, 31) and critic.dtype == np.float32
    np.testing.assert_array_equal(critic[:, :22], obs)
    meta = env.deployment_metadata()
    assert sum(size for _, size in meta["observation_names"]) == env.num_obs


def test_policy_observation_is_a_pure_function():
    state = random_state(5, seed=0)
    target = np.array([0.0, 0.0, 1.0])
    action = np.random.default_rng(1).uniform(-1, 1, (5, 4))
    copies = [a.copy() for a in (state.base_pos, state.base_quat, target, action)]
    first = policy_observation(state, target, action)
    second = policy_observation(state, target, action)
    np.testing.assert_array_equal(first, second)
    for before, after in zip(
        copies, (state.base_pos, state.base_quat, target, action), strict=True
    ):
        np.testing.assert_array_equal(before, after)
    assert first.shape == (5, 22) and first.dtype == np.float32
    # Terms in layout order.
    np.testing.assert_allclose(first[:, 0:3], target - state.base_pos, rtol=1e-6)
    np.testing.assert_allclose(first[:, 12:15], state.base_lin_vel, rtol=1e-6)
    np.testing.assert_allclose(first[:, 15:18], state.base_ang_vel, rtol=1e-6)
    np.testing.assert_allclose(first[:, 18:22], action, rtol=1e-6)
    rot = first[:, 3:12].reshape(5, 3, 3)
    np.testing.assert_allclose(
        rot @ rot.transpose(0, 2, 1), np.broadcast_to(np.eye(3), rot.shape), atol=1e-6
    )


def test_target_error_is_positive_when_the_drone_is_below_the_target():
    level = np.array([[1.0, 0.0, 0.0, 0.0]])
    state = QuadState(np.array([[0.2, -0.1, 0.4]]), level, np.zeros((1, 3)), np.zeros((1, 3)))
    obs = policy_observation(state, np.array([0.0, 0.0, 1.0]), np.zeros((1, 4)))
    np.testing.assert_allclose(obs[0, 0:3], [-0.2, 0.1, 0.6], rtol=1e-6)
    np.testing.assert_allclose(obs[0, 3:12], np.eye(3).ravel())


def test_env_observation_is_policy_observation_of_the_engine_state():
    env = make(4, seed=2)
    action = np.random.default_rng(0).uniform(-0.3, 0.3, (4, 4))
    step = env.step(action)
    running = ~(step.terminated | step.truncated)
    assert running.any()
    state = QuadState.from_free_joint(env.engine.qpos, env.engine.qvel)
    expected = policy_observation(state, env.target, action)
    np.testing.assert_array_equal(step.obs[running], expected[running])


def test_hover_reward_is_max_of_zero_and_two_minus_distance_to_the_fourth():
    pos = np.array([[0.0, 0.0, 1.0], [0.3, 0.0, 1.2], [0.5, -0.5, 0.6], [1.0, 1.0, 1.5]])
    target = np.array([0.0, 0.0, 1.0])
    d = np.sqrt(np.sum((pos - target) ** 2, axis=1))
    by_hand = np.array([max(0.0, 2.0 - di**4) for di in d])
    assert by_hand[0] == 2.0 and by_hand[3] == 0.0 and 0 < by_hand[2] < by_hand[1] < 2
    np.testing.assert_allclose(rewards.hover(pos, target), by_hand, rtol=1e-12)
    # The environment's reward is the same function of the state after its step.
    env = make(4, evaluation=True)
    write_poses(env, pos)
    step = env.step(hover_action(env))
    assert not (step.terminated | step.truncated).any()
    after = env.engine.qpos[:, 0:3]
    d_after = np.linalg.norm(after - target, axis=1)
    np.testing.assert_allclose(step.reward, np.maximum(0.0, 2.0 - d_after**4), rtol=1e-6)
    np.testing.assert_allclose(step.reward, by_hand, atol=1e-3)


def test_final_position_error_is_where_a_failed_episode_ended():
    """A drone placed 1.6 m off in x leaves the 1.5 m box on its first step: its episode
    ends there, and the final error is that distance, not the reset pose's (under 0.9 m)."""
    env = make(2, evaluation=True)
    write_poses(env, [[1.6, 0.0, 1.0], [0.0, 1.2, 1.5]])
    step = env.step(hover_action(env))
    np.testing.assert_array_equal(step.terminated, [True, False])
    episode = step.info["episode"]
    np.testing.assert_allclose(episode["final_position_error_m"], [1.6], atol=2e-3)
    np.testing.assert_allclose(episode["mean_position_error_m"], [1.6], atol=2e-3)
    np.testing.assert_array_equal(episode["length"], [1])


def test_evaluation_episodes_start_at_rest_beneath_the_target_as_hoveraviary():
    env = make(6, seed=3, evaluation=True, random_init_fraction=1.0)
    obs, _ = env.reset()
    qpos, qvel = env.engine.qpos, env.engine.qvel
    start_z = START_Z
    np.testing.assert_array_equal(qpos[:, 0:2], np.broadcast_to(env.target[:2], (6, 2)))
    np.testing.assert_allclose(qpos[:, 2], start_z)
    hull = env.engine.model.geom("hull")
    assert hull.size[1] == pytest.approx(GROUND_Z)  # half-height: resting z on the floor
    np.testing.assert_array_equal(qpos[:, 3:7], np.broadcast_to([1.0, 0, 0, 0], (6, 4)))
    np.testing.assert_array_equal(qvel, 0.0)
    np.testing.assert_allclose(obs[:, 2], env.target[2] - start_z, rtol=1e-6)
    on_ground = make(2, evaluation=True, start_height=0.0)
    on_ground.reset()
    np.testing.assert_array_equal(on_ground.engine.qpos[:, 2], GROUND_Z)
    np.testing.assert_array_equal(obs[:, 18:22], 0.0)
    # Training resets with random_init_fraction=1 start in the air instead.
    train = make(6, seed=3, random_init_fraction=1.0)
    assert np.all(train.engine.qpos[:, 2] > 0.1)


def test_episodes_are_truncated_after_eight_seconds():
    env = make(2, evaluation=True)
    assert env.max_episode_steps == 240 == round(8.0 * 30)
    for i in range(1, 241):
        step = env.step(hover_action(env))
        assert not step.terminated.any(), f"step {i}"
        if i < 240:
            assert not step.truncated.any(), f"step {i}"
    assert step.truncated.all()
    np.testing.assert_array_equal(step.info["episode"]["length"], [240, 240])
    np.testing.assert_array_equal(env.episode_step, 0)


def test_termination_outside_the_box_or_when_tilted():
    cases = [  # (x, y, z, roll, pitch) -> terminated
        ((1.6, 0.0, 1.0, 0.0, 0.0), True),
        ((-1.6, 0.0, 1.0, 0.0, 0.0), True),
        ((0.0, 1.6, 1.0, 0.0, 0.0), True),
        ((0.0, 0.0, 2.1, 0.0, 0.0), True),
        ((0.0, 0.0, 1.0, 0.5, 0.0), True),
        ((0.0, 0.0, 1.0, 0.0, -0.5), True),
        ((1.4, -1.4, 1.0, 0.0, 0.0), False),
        ((0.0, 0.0, 1.9, 0.0, 0.0), False),
        ((0.0, 0.0, 1.0, 0.3, -0.3), False),
        ((0.0, 0.0, 1.0, 0.0, 0.0), False),
    ]
    env = make(len(cases), evaluation=True)
    states = np.array([c for c, _ in cases])
    write_poses(env, states[:, 0:3], states[:, 3:5])
    step = env.step(hover_action(env))
    np.testing.assert_array_equal(step.terminated, [t for _, t in cases])
    assert not step.truncated.any()
    ended = np.flatnonzero(step.terminated)
    np.testing.assert_array_equal(step.info["episode"]["length"], np.ones(ended.size))
    # Terminated simulations were reset for their next episode, on the ground.
    np.testing.assert_allclose(env.engine.qpos[ended, 2], START_Z)


RANGES = QuadRandomization(
    mass_scale=(0.7, 1.3), inertia_scale=(0.8, 1.2), motor_lag_s=(0.02, 0.08)
)


def sampled(env, name: str) -> np.ndarray:
    """A randomized parameter's per-simulation values."""
    return env.scales[name] if name in env.scales else getattr(env, name)


def test_randomization_samples_mass_and_motor_lag_per_simulation():
    env = make(16, seed=5, randomization=RANGES)
    mass = env.engine.model_field("body_mass")[:, BASE]
    inertia = env.engine.model_field("body_inertia")[:, BASE]
    lag = env.engine.model_field("actuator_dynprm")[:, :, 0]
    assert np.unique(mass).size == 16
    assert np.all((mass >= 0.7 * PARAMS.mass) & (mass <= 1.3 * PARAMS.mass))
    mass_scale = sampled(env, "mass_scale")
    np.testing.assert_allclose(mass, PARAMS.mass * mass_scale, rtol=1e-12)
    inertia_scale = sampled(env, "inertia_scale")
    np.testing.assert_allclose(inertia, np.outer(inertia_scale, PARAMS.inertia), rtol=1e-12)
    assert np.unique(lag[:, 0]).size == 16
    assert np.all((lag >= 0.02) & (lag <= 0.08))
    np.testing.assert_array_equal(lag, np.repeat(env.motor_lag_s[:, None], 4, axis=1))
    _, critic = env.observe()
    np.testing.assert_allclose(critic[:, 22], mass_scale, rtol=1e-6)
    np.testing.assert_allclose(critic[:, 23], inertia_scale, rtol=1e-6)
    np.testing.assert_allclose(critic[:, 26], env.motor_lag_s, rtol=1e-6)


@pytest.mark.parametrize(
    ("ranges", "scale_of"),
    [
        (QuadRandomization(mass_scale=(0.7, 1.3)), "mass_scale"),
        (QuadRandomization(motor_lag_s=(0.02, 0.2)), "motor_lag_s"),
    ],
)
def test_randomized_parameters_change_the_dynamics(ranges, scale_of):
    """At full thrust from the ground, heavier or slower-motored drones climb less."""
    env = make(8, seed=6, randomization=ranges, random_init_fraction=0.0)
    for _ in range(4):
        env.step(np.ones((8, 4)))
    z = env.engine.qpos[:, 2]
    order = np.argsort(sampled(env, scale_of))
    assert np.all(np.diff(z[order]) < 0)


def test_evaluation_config_disables_randomization():
    env = make(8, seed=5, randomization=RANGES, evaluation=True)
    for _ in range(3):  # resets after episodes end must not randomize either
        env.reset()
    np.testing.assert_array_equal(env.engine.model_field("body_mass")[:, BASE], PARAMS.mass)
    np.testing.assert_array_equal(
        env.engine.model_field("actuator_dynprm")[:, :, 0],
        env.engine.model.actuator_dynprm[None, :, 0].repeat(8, axis=0),
    )
    np.testing.assert_array_equal(sampled(env, "mass_scale"), 1.0)
    np.testing.assert_array_equal(env.motor_lag_s, 0.0)


def test_nan_in_one_simulation_ends_its_episode_and_the_others_continue():
    env = make(4, seed=7, random_init_fraction=0.0)
    for _ in range(3):
        env.step(hover_action(env))
    env.engine.qvel[2] = np.nan
    step = env.step(hover_action(env))
    np.testing.assert_array_equal(step.terminated, [False, False, True, False])
    assert step.info["unstable_resets"] == 1
    assert env.unstable_resets == 1
    assert step.reward[2] == 0.0
    np.testing.assert_array_equal(step.info["episode"]["length"], [4])
    assert np.isfinite(env.engine.qpos).all() and np.isfinite(env.engine.qvel).all()
    assert np.isfinite(step.obs).all() and np.isfinite(step.critic_obs).all()
    np.testing.assert_allclose(env.engine.qpos[2, 2], START_Z)
    np.testing.assert_array_equal(env.episode_step, [4, 4, 0, 4])
    step = env.step(hover_action(env))
    assert step.info["unstable_resets"] == 0 and env.unstable_resets == 1
    np.testing.assert_array_equal(env.episode_step, [5, 5, 1, 5])


def test_rotor_speed_is_clipped_to_the_motor_maximum():
    cfg = QuadHoverConfig(action_rpm_scale=1.0, evaluation=True)
    env = QuadHoverEnv(cfg, num_envs=2)
    env.reset()
    env.apply_action(np.array([[1.0, 1.0, 1.0, 1.0], [-1.0, -1.0, -1.0, -1.0]]))
    params = CrazyflieParams()
    np.testing.assert_allclose(env.rpm[0], params.max_rpm)
    np.testing.assert_allclose(env.rpm[1], 0.0)
    np.testing.assert_allclose(env.engine.ctrl[0], params.max_thrust)


def test_latency_delays_the_motor_command_by_whole_control_steps():
    ranges = QuadRandomization(latency_steps=(2, 2))
    env = make(2, seed=1, randomization=ranges, random_init_fraction=0.0)
    hover = env.params.hover_rpm
    env.apply_action(np.ones((2, 4)))
    np.testing.assert_allclose(env.rpm, hover)  # still the zero action of two steps ago
    env.apply_action(np.zeros((2, 4)))
    np.testing.assert_allclose(env.rpm, hover)
    env.apply_action(np.zeros((2, 4)))
    np.testing.assert_allclose(env.rpm, min(1.5 * hover, env.params.max_rpm))


def test_km_scale_changes_yaw_torque_only():
    ranges = QuadRandomization(km_scale=(2.0, 2.0))
    env = make(1, seed=1, randomization=ranges, random_init_fraction=0.0)
    gear = env.engine.model_field("actuator_gear")[0]
    nominal = env.engine.model.actuator_gear
    np.testing.assert_allclose(gear[:, 5], 2.0 * nominal[:, 5])
    np.testing.assert_allclose(gear[:, :5], nominal[:, :5])
