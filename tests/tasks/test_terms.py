"""Task terms declared once (tasks/terms.py): what the environment derives from the list."""

from __future__ import annotations

import numpy as np
import pytest

from simreal.config import ConfigError, from_plain
from simreal.tasks.g1 import G1Config, G1Env
from simreal.tasks.g1 import rewards as g1_rewards
from simreal.tasks.g1.terminations import fall
from simreal.tasks.lane_keep import LaneKeepConfig
from simreal.tasks.quad_hover import QuadHoverConfig, QuadHoverEnv
from simreal.tasks.quad_hover.observations import POLICY_OBSERVATION, HoverReading
from simreal.tasks.quad_hover.rewards import hover
from simreal.tasks.quad_swarm import QuadSwarmConfig, QuadSwarmEnv
from simreal.tasks.quad_swarm.rewards import progress_term
from simreal.tasks.terms import (
    EventTerm,
    ObservationTerm,
    RewardTerm,
    check_weights,
    default_weights,
    layout,
    noise_scale,
    observe,
    step_weights,
)


class Noise:
    gyro_noise = 0.1
    joint_noise = 0.5


TERMS = (
    ObservationTerm("gyro", 3, lambda x: x["gyro"], noise="gyro_noise"),
    ObservationTerm("flag", 1, lambda x: x["flag"]),
    ObservationTerm("joints", 2, lambda x: x["joints"], noise="joint_noise"),
)


def test_layout_and_observation_follow_the_term_list_in_order():
    inputs = {
        "gyro": np.array([[1.0, 2.0, 3.0]]),
        "flag": np.array([[9.0]]),
        "joints": np.array([[-1.0, -2.0]]),
    }
    assert layout(TERMS) == (("gyro", 3), ("flag", 1), ("joints", 2))
    obs = observe(TERMS, inputs)
    assert obs.dtype == np.float32
    np.testing.assert_array_equal(obs, [[1, 2, 3, 9, -1, -2]])
    np.testing.assert_array_equal(observe(TERMS[::-1], inputs), [[-1, -2, 9, 1, 2, 3]])


def test_noise_scale_reads_each_terms_field_and_leaves_clean_terms_clean():
    scale = noise_scale(TERMS, Noise())
    np.testing.assert_allclose(scale, [0.1, 0.1, 0.1, 0.0, 0.5, 0.5])


def test_terms_are_frozen():
    term = RewardTerm("alive", lambda env: np.ones(1), weight=1.0)
    with pytest.raises(AttributeError):
        term.weight = 2.0  # type: ignore[misc]


def test_unknown_weight_names_the_term_and_the_known_ones():
    terms = (RewardTerm("alive", lambda env: 1.0), RewardTerm("upright", lambda env: 1.0))
    check_weights({"alive": 1.0}, terms)
    with pytest.raises(ValueError, match=r"unknown terms \['uprite'\].*alive.*upright"):
        check_weights({"alive": 1.0, "uprite": 0.5}, terms)


def test_a_task_refuses_an_unknown_reward_weight_when_built():
    cfg = QuadHoverConfig(reward_weights={"hover": 30.0, "hoover": 1.0})
    with pytest.raises(ValueError, match=r"\['hoover'\].*hover.*ang_vel.*action_rate"):
        QuadHoverEnv(cfg, num_envs=1)


def test_default_weights_keep_the_list_order_and_skip_terms_without_a_weight():
    terms = (
        RewardTerm("b", lambda env: 1.0, weight=2.0),
        RewardTerm("a", lambda env: 1.0),
        RewardTerm("c", lambda env: 1.0, weight=0.0),
    )
    assert list(default_weights(terms).items()) == [("b", 2.0), ("c", 0.0)]


def test_weights_are_per_second_times_the_control_period():
    assert step_weights({"a": 10.0, "b": -4.0}, 0.05) == {"a": 0.5, "b": -0.2}
    env = QuadHoverEnv(QuadHoverConfig(), num_envs=2, seed=0)
    # HoverAviary's reward, 1 per step, is 30 per second at 30 Hz control, exactly
    assert env.cfg.reward_weights == {"hover": 30.0}
    assert env.reward_weights() == {"hover": 1.0}
    env.reset()
    step = env.step(np.zeros((2, 4), dtype=np.float32))
    expected = hover(env.state.base_pos, env.target).astype(np.float32)
    np.testing.assert_array_equal(step.reward, expected)
    slow = QuadHoverEnv(QuadHoverConfig(control_hz=15, physics_hz=240), num_envs=1)
    assert slow.reward_weights() == {"hover": 2.0}  # the same weight earns twice per step


def test_weights_load_as_saved_and_only_per_second_is_accepted():
    """Configs saved with per-step weights were converted once
    (experiments/convert_configs.py); loading takes weights as they are."""
    new = {"reward_weights": {"hover": 1.0}, "reward_weights_unit": "per_second"}
    assert from_plain(QuadHoverConfig, new, "task.").reward_weights == {"hover": 1.0}
    lane = from_plain(LaneKeepConfig, {"reward_weights": {"failure": -20.0}}, "task.")
    assert lane.reward_weights == {"failure": -20.0}
    with pytest.raises(ConfigError, match="reward_weights_unit"):
        from_plain(QuadHoverConfig, {"reward_weights_unit": "per_step"}, "task.")


def test_metrics_are_gathered_after_the_step_not_by_terminated():
    env = QuadHoverEnv(QuadHoverConfig(evaluation=True), num_envs=2, seed=0)
    env.reset()
    env.step(np.zeros((2, 4), dtype=np.float32))
    total = env.position_error_sum.copy()
    assert np.all(total > 0)
    env.terminated()
    env.terminated()  # asking again changes nothing
    np.testing.assert_array_equal(env.position_error_sum, total)


def test_swarm_progress_is_pure_and_the_step_keeps_the_distance():
    env = QuadSwarmEnv(QuadSwarmConfig(num_drones=2), num_envs=1, seed=0, num_threads=1)
    env.reset()
    env.step(np.full((2, env.num_actions), 0.5, dtype=np.float32))
    np.testing.assert_array_equal(env.prev_goal_dist, env.goal_dist)
    env.prev_goal_dist = env.goal_dist + 0.25
    first, second = progress_term(env), progress_term(env)
    np.testing.assert_allclose(first, 0.25)
    np.testing.assert_array_equal(first, second)


def test_an_environments_observation_is_its_terms_in_order():
    env = QuadHoverEnv(QuadHoverConfig(), num_envs=2, seed=0)
    obs, critic = env.reset()
    assert env.observation_layout == layout(env.policy_terms) == POLICY_OBSERVATION
    assert env.deployment_metadata()["observation_names"] == [
        [term.name, term.size] for term in env.policy_terms
    ]
    reading = HoverReading(env.state, env.target, env.action)
    by_term = np.concatenate([term.func(reading) for term in env.policy_terms], axis=1)
    np.testing.assert_array_equal(obs, by_term.astype(np.float32))
    np.testing.assert_array_equal(critic[:, : obs.shape[1]], obs)


def test_an_event_with_an_unknown_mode_is_refused_naming_it_and_the_modes():
    with pytest.raises(ValueError, match=r"'push'.*'sometimes'.*startup"):
        EventTerm("push", lambda env, ids: None, "sometimes")


def test_events_run_in_their_order_per_mode_and_randomization_only_when_randomizing():
    env = QuadHoverEnv(QuadHoverConfig(), num_envs=2, seed=0)
    calls = []

    def record(env, arg, tag):
        calls.append((tag, np.asarray(arg).tolist()))

    env.event_terms = (
        EventTerm("b", record, "reset", params={"tag": "b"}),
        EventTerm("dr", record, "reset", params={"tag": "dr"}, randomization=True),
        EventTerm("a", record, "reset", params={"tag": "a"}),
        EventTerm("tick", record, "interval", params={"tag": "tick"}),
    )
    env.randomize = False
    env.reset()
    assert calls == [("b", [0, 1]), ("a", [0, 1])]
    calls.clear()
    env.randomize = True
    env.step(np.zeros((2, 4), dtype=np.float32))
    assert calls == [("tick", [0.0, 0.0])]  # before physics, at the episode times
    calls.clear()
    env._reset_sims(np.array([1]))
    assert calls == [("b", [1]), ("dr", [1]), ("a", [1])]


def test_a_g1_episode_ends_where_its_fall_term_is_true_and_the_metrics_see_it():
    env = G1Env(G1Config(evaluation=True), num_envs=2, seed=0)
    env.reset()
    env.engine.qpos[0, 2] = 0.2  # sim 0's pelvis near the floor
    env.check_terminations()
    np.testing.assert_array_equal(env.terminations["fall"], fall(env))
    np.testing.assert_array_equal(env.terminated(), [True, False])
    assert env.fell is env.terminations["fall"]


def test_a_term_with_inputs_reads_attributes_calls_methods_and_reads_config_fields():
    class Cfg:
        sigma = 2.0

    class Env:
        cfg = Cfg()
        action = np.array([1.0, 3.0])

        def speed(self):
            return np.array([0.5, 0.25])

    term = RewardTerm(
        "t",
        lambda a, s, sigma, k: (a - s) / sigma * k,
        1.0,
        {"k": 10.0},
        ("action", "speed", "cfg.sigma"),
    )
    np.testing.assert_allclose(term(Env()), [2.5, 13.75])
    missing = RewardTerm("m", lambda x: x, 1.0, inputs=("nowhere",))
    with pytest.raises(AttributeError, match="nowhere"):
        missing(Env())


def test_g1_rewards_with_inputs_equal_the_pure_functions_on_the_env():
    env = G1Env(G1Config(), num_envs=3, seed=2)
    env.reset()
    env.step(np.random.default_rng(0).uniform(-1, 1, (3, 29)).astype(np.float32))
    terms = {term.name: term for term in env.reward_terms}
    np.testing.assert_array_equal(
        terms["torque"](env), g1_rewards.torque(env.joint_torque(), env.torque_limit)
    )
    np.testing.assert_array_equal(
        terms["base_height"](env),
        g1_rewards.base_height(env.base_height(), env.stand_height, env.cfg.base_height_sigma_m),
    )
