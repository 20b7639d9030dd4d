"""The Gymnasium adapter: shapes, episode ends, action scaling, refusals, and learning."""

from __future__ import annotations

import csv

import gymnasium
import numpy as np
import pytest

from simreal.policies import OnPolicyRunner, PPOConfig, TrainConfig
from simreal.policies.evaluate import evaluate
from simreal.policies.gym_env import GymVecEnv

PENDULUM_STEPS = 200


def test_pendulum_shapes_and_time_limit_truncation():
    env = GymVecEnv("Pendulum-v1", num_envs=4, seed=0)
    assert (env.num_obs, env.num_critic_obs, env.num_actions) == (3, 3, 1)
    assert env.action_groups == {"actions": (0,)}
    obs, critic_obs = env.reset()
    assert obs.shape == critic_obs.shape == (4, 3) and obs.dtype == np.float32
    returns = np.zeros(4)
    for t in range(1, PENDULUM_STEPS + 1):
        step = env.step(np.full((4, 1), 0.3, dtype=np.float32))
        returns += step.reward
        for name in ("obs", "critic_obs", "final_critic_obs"):
            assert getattr(step, name).shape == (4, 3)
            assert getattr(step, name).dtype == np.float32
        assert step.reward.shape == (4,) and step.reward.dtype == np.float32
        assert step.terminated.dtype == step.truncated.dtype == np.bool_
        assert not step.terminated.any()
        if t < PENDULUM_STEPS:
            assert not step.truncated.any() and "episode" not in step.info
    assert step.truncated.all()
    assert (step.final_critic_obs != step.obs).any(axis=1).all()
    episode = step.info["episode"]
    np.testing.assert_array_equal(episode["length"], [PENDULUM_STEPS] * 4)
    np.testing.assert_allclose(episode["return"], returns, rtol=1e-5)
    env.close()


def test_actions_are_clipped_and_scaled_to_the_box():
    """Pendulum's torque box is [-2, 2]: 0.5 means 1.0 and 3.0 is clipped to 2.0."""
    env = GymVecEnv("Pendulum-v1", num_envs=1, seed=7)
    reference = gymnasium.make("Pendulum-v1")
    obs, _ = env.reset()
    np.testing.assert_allclose(obs[0], reference.reset(seed=7)[0], rtol=1e-6)
    for action, torque in ((0.5, 1.0), (3.0, 2.0), (-0.25, -0.5)):
        step = env.step(np.array([[action]], dtype=np.float32))
        expected, reward, *_ = reference.step(np.array([torque], dtype=np.float32))
        np.testing.assert_allclose(step.obs[0], expected, rtol=1e-5)
        assert step.reward[0] == pytest.approx(reward, rel=1e-5)
    env.close()


def test_evaluate_reads_episode_stats():
    env = GymVecEnv("Pendulum-v1", num_envs=2, seed=0)
    stats = evaluate(env, lambda obs: np.zeros((len(obs), 1), dtype=np.float32))
    assert stats["episodes"] == 2
    assert stats["episode_length_mean"] == PENDULUM_STEPS
    assert stats["return_mean"] < 0.0
    env.close()


def test_unknown_id_lists_registered_ids():
    with pytest.raises(ValueError, match="unknown Gymnasium id 'Foo-v0'") as err:
        GymVecEnv("Foo-v0", num_envs=1)
    assert "Pendulum-v1" in str(err.value)


def test_module_prefix_imports_the_module_that_registers_the_id():
    env = GymVecEnv("gymnasium.envs.classic_control:Pendulum-v1", 2, seed=0)
    assert env.num_obs == 3 and env.num_actions == 1
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        GymVecEnv("no_such_module:Pendulum-v1", 1)


def test_discrete_action_space_is_refused():
    with pytest.raises(ValueError, match=r"Discrete\(2\).*only Box"):
        GymVecEnv("CartPole-v1", num_envs=2)


@pytest.mark.slow
def test_ppo_learns_pendulum(tmp_path):
    """200k steps take PPO from about -1300 (random) to about -250; the bounds are loose."""
    cfg = TrainConfig(
        num_envs=16,
        max_env_steps=200_000,
        eval_interval=1_000_000,
        seed=0,
        ppo=PPOConfig(num_steps_per_env=64, gamma=0.95),
    )
    env = GymVecEnv("Pendulum-v1", cfg.num_envs, seed=cfg.seed)
    OnPolicyRunner(env, cfg, tmp_path).learn()
    env.close()
    with (tmp_path / "metrics.csv").open() as f:
        returns = [float(row["train_return"]) for row in csv.DictReader(f) if row["train_return"]]
    first, last = returns[0], returns[-1]
    assert first < -900.0
    assert last > -700.0 and last > first + 500.0, (first, last)
