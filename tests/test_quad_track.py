"""quad-track: references, observation layout, metrics, starts."""

from __future__ import annotations

import numpy as np
import pytest

from simreal.tasks.quad_track import QuadTrackConfig, QuadTrackEnv
from simreal.tasks.quad_track import references as ref
from simreal.tasks.quad_track.observations import observation_layout


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
    assert obs.shape == (3, 37) and critic.shape == (3, 43)
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


def test_episode_metrics_report_rmse_and_max_error():
    env = make(4, evaluation=True, episode_s=1.0)
    errors = []
    for _ in range(30):
        step = env.step(np.zeros((4, 4)))
        if "episode" in step.info:
            break
        errors.append(env.tracking_error()[0])
    episode = step.info["episode"]
    # The hover action does not follow the figure-eight, so the error grows.
    assert np.all(episode["max_error_m"] > 0.2)
    assert np.all(episode["position_rmse_m"] <= episode["max_error_m"])
    assert episode["length"][0] == 30


def test_unknown_reference_kind_names_the_field():
    with pytest.raises(ValueError, match="train_kinds"):
        QuadTrackConfig(train_kinds=("square",)).validate()
