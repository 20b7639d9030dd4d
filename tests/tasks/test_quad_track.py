"""quad-track: references, observation layout, metrics, starts."""

from __future__ import annotations

import numpy as np
import pytest

from simreal.tasks.quad_track import QuadTrackConfig, QuadTrackEnv
from simreal.tasks.quad_track import references as ref
from simreal.tasks.quad_track.observations import observation_layout
from simreal.tasks.quadrotor.config import QuadRandomization
from simreal.tasks.quadrotor.env import gust_step


def make(n: int, seed: int = 0, **cfg) -> QuadTrackEnv:
    env = QuadTrackEnv(QuadTrackConfig(**cfg), num_envs=n, seed=seed, num_threads=1)
    env.reset()
    return env


def test_reference_velocity_is_the_derivative_of_position():
    rng = np.random.default_rng(0)
    p = ref.sample_params(rng, 30, ref.KINDS, (0.4, 1.0), (6.0, 12.0), (0.0, 0.0, 1.0))
    t = np.linspace(0.0, 10.0, 2001)[None].repeat(30, axis=0)
    pos, vel = ref.position(p, t), ref.velocity(p, t)
    dt = t[0, 1] - t[0, 0]
    finite_difference = (pos[:, 2:] - pos[:, :-2]) / (2 * dt)
    np.testing.assert_allclose(finite_difference, vel[:, 1:-1], atol=1e-3)


def test_references_start_at_the_centre_or_on_the_curve_and_stay_in_the_box():
    rng = np.random.default_rng(1)
    p = ref.sample_params(rng, 200, ref.KINDS, (0.4, 1.0), (6.0, 12.0), (0.0, 0.0, 1.0))
    t = np.linspace(0.0, 20.0, 601)[None].repeat(200, axis=0)
    offset = ref.position(p, t) - np.array([0.0, 0.0, 1.0])
    assert np.abs(offset).max() <= 1.2
    assert set(np.unique(p.kind)) == {0, 1, 2}


def test_figure_eight_is_a_gerono_lemniscate():
    env = make(1, evaluation=True)
    t = np.linspace(0, 8, 9)[None]
    xy = ref.position(env.reference, t)[0, :, :2]
    theta = 2 * np.pi * t[0] / 8.0
    np.testing.assert_allclose(xy[:, 0], np.sin(theta), atol=1e-12)
    np.testing.assert_allclose(xy[:, 1], 0.5 * np.sin(2 * theta), atol=1e-12)


def test_observation_layout_and_preview():
    env = make(3, evaluation=True, preview_steps=4)
    assert env.num_obs == sum(size for _, size in observation_layout(4)) == 37
    obs, critic = env.observe()
    assert obs.shape == (3, 37) and critic.shape == (3, 46)
    # At t = 0 the drone sits on the reference: zero error, and the preview is the
    # reference 0.1..0.4 s ahead relative to it.
    np.testing.assert_allclose(obs[:, 0:3], 0.0, atol=1e-6)
    ahead = ref.position(env.reference, np.full((3, 1), 0.2))[:, 0] - env.state.base_pos
    np.testing.assert_allclose(obs[:, 6:9], ahead, atol=1e-6)


def test_evaluation_starts_on_the_reference_with_its_velocity():
    env = make(2, evaluation=True)
    np.testing.assert_allclose(env.engine.qpos[:, 0:3], [[0.0, 0.0, 1.0]] * 2)
    w = 2 * np.pi / 8.0
    np.testing.assert_allclose(env.engine.qvel[:, 0:3], [[w, w, 0.0]] * 2)


def test_training_resets_sample_new_references_per_simulation():
    env = make(64, seed=3, random_init_fraction=0.5)
    assert np.unique(env.reference.radius).size == 64
    assert set(np.unique(env.reference.kind)) == {0, 1, 2}


def test_rmse_and_max_error_match_a_hand_computation_on_a_constructed_flight():
    """Four steps flown 3, 4, 12 and 0 cm off the figure-eight (written into the state):
    RMSE sqrt((0.03^2 + 0.04^2 + 0.12^2 + 0) / 4) = 0.065 m, max 0.12 m."""
    env = make(1, evaluation=True)
    offsets = np.array([[0.03, 0.0, 0.0], [0.0, -0.04, 0.0], [0.0, 0.0, 0.12], [0.0, 0.0, 0.0]])
    for k, offset in enumerate(offsets, start=1):
        env.episode_step[:] = k
        theta = 2 * np.pi * k * env.control_dt / 8.0  # Gerono lemniscate, 1 m, 8 s
        on_curve = np.array([np.sin(theta), 0.5 * np.sin(2 * theta), 1.0])
        env.engine.qpos[0, 0:3] = on_curve + offset
        env.after_step()
    metrics = env.episode_metrics(np.array([0]))
    np.testing.assert_allclose(metrics["position_rmse_m"], [0.065], rtol=1e-9)
    np.testing.assert_allclose(metrics["max_error_m"], [0.12], rtol=1e-9)
    np.testing.assert_array_equal(metrics["completed"], [0.0])  # 4 of 300 steps


def test_a_drone_that_loses_the_reference_ends_as_an_incomplete_episode():
    """Holding hover thrust while the figure-eight turns away: the drone coasts straight
    on, the error passes max_error within a second, and the episode ends early, as a
    failure, not completed."""
    env = make(2, evaluation=True, max_error=0.2)
    steps = 0
    while steps < 30:
        step = env.step(np.zeros((2, 4)))
        steps += 1
        if step.terminated.any():
            break
    assert step.terminated.all() and not step.truncated.any()
    episode = step.info["episode"]
    np.testing.assert_array_equal(episode["length"], [steps, steps])
    assert steps < 30 < env.max_episode_steps
    np.testing.assert_array_equal(episode["completed"], [0.0, 0.0])
    assert np.all(episode["max_error_m"] > 0.2)
    # The error grows from 0 to just past 0.2 m: its RMSE lies between a third and all of it.
    assert np.all(episode["position_rmse_m"] > episode["max_error_m"] / 3)
    assert np.all(episode["position_rmse_m"] < episode["max_error_m"])


def test_an_episode_flown_to_its_time_limit_is_completed():
    env = make(1, evaluation=True, episode_s=0.2)
    for _ in range(6):
        step = env.step(np.zeros((1, 4)))
    assert step.truncated.all()
    np.testing.assert_array_equal(step.info["episode"]["completed"], [1.0])


def test_random_evaluation_references_come_from_the_evaluation_seed():
    cfg = {"evaluation": True, "eval_kind": "random"}
    a, again, other = make(8, seed=1, **cfg), make(8, seed=1, **cfg), make(8, seed=2, **cfg)
    np.testing.assert_array_equal(a.reference.kind, ref.KINDS.index("spline"))
    np.testing.assert_array_equal(a.reference.spline_amp, again.reference.spline_amp)
    assert not np.allclose(a.reference.spline_amp, other.reference.spline_amp)
    assert np.unique(a.reference.spline_freq[:, 0, 0]).size == 8  # a new curve per episode
    # Not the draws of a training generator with the same seed.
    training = ref.sample_params(
        np.random.default_rng(1), 8, ("spline",), (0.4, 1.0), (6.0, 12.0), (0.0, 0.0, 1.0)
    )
    assert not np.allclose(a.reference.spline_amp, training.spline_amp)
    first = a.reference.spline_amp.copy()
    a.reset()
    assert not np.allclose(a.reference.spline_amp, first)
    assert a.evaluation_conditions()["reference"]["kind"] == "random"


RANGES = QuadRandomization(
    mass_scale=(0.9, 1.1), motor_lag_s=(0.01, 0.03), latency_steps=(0, 1), wind_gust_std_n=0.02
)


def test_eval_randomize_draws_the_training_randomization_from_the_evaluation_seed():
    nominal = make(8, seed=1, evaluation=True, randomization=RANGES)
    assert not nominal.randomize and nominal.evaluation_conditions()["randomized"] is False
    a = make(8, seed=1, evaluation=True, eval_randomize=True, randomization=RANGES)
    b = make(8, seed=2, evaluation=True, eval_randomize=True, randomization=RANGES)
    assert np.unique(a.scales["mass_scale"]).size == 8
    assert np.all((a.motor_lag_s >= 0.01) & (a.motor_lag_s <= 0.03))
    assert not np.allclose(a.scales["mass_scale"], b.scales["mass_scale"])
    assert np.any(a.wind_force != 0.0)
    conditions = a.evaluation_conditions()
    assert conditions["randomized"] is True and conditions["seed"] == 1
    assert conditions["randomization"]["wind_gust_std_n"] == 0.02
    assert conditions["randomization"]["motor_lag_s"] == (0.01, 0.03)


def test_eval_randomize_without_ranges_names_the_field():
    with pytest.raises(ValueError, match=r"eval_randomize needs task\.randomization"):
        QuadTrackConfig(evaluation=True, eval_randomize=True).validate()


def test_wind_pushes_the_drone_along_the_force():
    """Same actions, same start: the gusty drones end up displaced along their wind."""
    ranges = QuadRandomization(wind_gust_std_n=0.05)
    calm = make(6, seed=4, evaluation=True, randomization=ranges)
    gusty = make(6, seed=4, evaluation=True, eval_randomize=True, randomization=ranges)
    force = gusty.wind_force.copy()
    gusty.step(np.zeros((6, 4)))
    calm.step(np.zeros((6, 4)))
    np.testing.assert_allclose(gusty.engine.xfrc_applied[:, 1, :3], gusty.wind_force)
    shift = gusty.engine.qpos[:, 0:3] - calm.engine.qpos[:, 0:3]
    pushed = 0.5 * (force + gusty.wind_force) / 2  # mean force over the step, roughly
    assert np.all(np.einsum("ij,ij->i", shift, pushed) > 0)
    _, critic = gusty.observe()
    np.testing.assert_allclose(critic[:, -3:], gusty.wind_force, rtol=1e-6)


def test_gusts_keep_their_spread_and_forget_their_past():
    """The Ornstein-Uhlenbeck step keeps std wind_gust_std_n and correlates over tau."""
    r = QuadRandomization(wind_gust_std_n=0.01, wind_gust_tau_s=0.5)
    rng = np.random.default_rng(0)
    start = rng.normal(0.0, 0.01, (20000, 3))
    force = start
    for _ in range(15):  # 0.5 s at 30 Hz: one correlation time
        force = gust_step(rng, force, r, 1.0 / 30.0)
    assert abs(force.std() - 0.01) < 0.0003
    correlation = np.corrcoef(start.ravel(), force.ravel())[0, 1]
    assert abs(correlation - np.exp(-1.0)) < 0.02


def test_unknown_reference_kind_names_the_field():
    with pytest.raises(ValueError, match="train_kinds"):
        QuadTrackConfig(train_kinds=("square",)).validate()


def test_sub_step_latency_delays_the_new_thrust_by_whole_physics_steps():
    """Full thrust from a flying start: the motors keep hover thrust for the late part
    of the period, so the vertical speed gained falls in proportion to the delay (no
    motor lag, so thrust follows the command at once)."""
    gained = {}
    for delay in (0, 4, 7):
        ranges = QuadRandomization(latency_physics_steps=(delay, delay))
        env = make(1, random_init_fraction=0.0, start_noise=0.0, randomization=ranges)
        np.testing.assert_array_equal(env.latency_physics_steps, [delay])
        vz = env.engine.qvel[0, 2]
        env.step(np.ones((1, 4)))
        gained[delay] = env.engine.qvel[0, 2] - vz
    np.testing.assert_allclose(gained[4] / gained[0], 4 / 8, rtol=1e-3)
    np.testing.assert_allclose(gained[7] / gained[0], 1 / 8, rtol=1e-3)


def test_sub_step_latency_must_stay_below_a_control_period():
    ranges = QuadRandomization(latency_physics_steps=(0, 8))
    with pytest.raises(ValueError, match="latency_physics_steps must stay below"):
        QuadTrackConfig(randomization=ranges).validate()
