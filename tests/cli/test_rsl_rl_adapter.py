"""`simreal.rsl_rl`: a task behind rsl_rl's VecEnv (rsl-rl-lib 5.5.1, the `rsl-rl` extra).
The interface rsl_rl reads, values against the task's own environment, its OnPolicyRunner
running unchanged, and (slow) a few of its iterations raising quad-hover's return as
simreal's own evaluation measures it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rsl_rl.env import VecEnv
from rsl_rl.runners import OnPolicyRunner
from tensordict import TensorDict

from simreal.policies.evaluate import evaluate
from simreal.rsl_rl import RslRlVecEnv, rsl_rl_policy, rsl_rl_train_cfg
from simreal.tasks import get_task, make_env
from simreal.training import TrainRequest, build_envs, run_config

TASK = "quad-hover"


def test_interface_and_reset_observations_are_the_tasks():
    env = RslRlVecEnv(TASK, num_envs=8, device="cpu", seed=0)
    task = make_env(TASK, get_task(TASK).config_cls(), 8, seed=0)
    obs, critic_obs = task.reset()
    assert isinstance(env, VecEnv)
    assert (env.num_envs, env.num_actions, env.max_episode_length) == (8, 4, 240)
    assert env.device == torch.device("cpu") and env.cfg == task.cfg
    got = env.get_observations()
    assert isinstance(got, TensorDict) and tuple(got.batch_size) == (8,)
    assert set(got.keys()) == {"policy", "critic"}
    assert got["policy"].dtype == got["critic"].dtype == torch.float32
    np.testing.assert_array_equal(got["policy"].numpy(), obs)
    np.testing.assert_array_equal(got["critic"].numpy(), critic_obs)
    assert got["critic"].shape == (8, 31)  # the policy's 22 terms, then the privileged 9
    torch.testing.assert_close(env.episode_length_buf, torch.zeros(8, dtype=torch.int64))


def test_steps_equal_the_tasks_own_with_time_outs_and_episode_extras():
    env = RslRlVecEnv(TASK, num_envs=16, seed=3, episode_s=0.5)
    task = make_env(TASK, env.cfg, 16, seed=3)
    task.reset()
    rng = np.random.default_rng(0)
    counts = {"terminated": 0, "truncated": 0}
    for t in range(60):
        actions = rng.normal(0.0, 0.05, (16, 4)).astype(np.float32)
        actions[t % 16, t % 4] = 1.5  # the task clips it, as in its own training
        obs, rewards, dones, extras = env.step(torch.from_numpy(actions))
        step = task.step(actions)
        np.testing.assert_array_equal(obs["policy"].numpy(), step.obs)
        np.testing.assert_array_equal(obs["critic"].numpy(), step.critic_obs)
        np.testing.assert_array_equal(rewards.numpy(), step.reward)
        np.testing.assert_array_equal(dones.numpy(), step.terminated | step.truncated)
        np.testing.assert_array_equal(extras["time_outs"].numpy(), step.truncated)
        assert obs is env.get_observations()
        episode = step.info.get("episode", {})
        assert set(extras["episode"]) == set(episode)
        for key, values in episode.items():
            np.testing.assert_allclose(extras["episode"][key].numpy(), values, rtol=1e-6)
        np.testing.assert_array_equal(env.episode_length_buf.numpy(), task.episode_step)
        counts["terminated"] += int(step.terminated.sum())
        counts["truncated"] += int(step.truncated.sum())
    assert counts["terminated"] > 0 and counts["truncated"] > 0, counts


def test_episode_length_buf_sets_when_episodes_time_out():
    """`learn(init_at_random_ep_len=True)` writes random step counts: the task's time
    limit then cuts those episodes early, as Isaac Lab's environments do."""
    env = RslRlVecEnv(TASK, num_envs=4, seed=0, evaluation=True)
    env.episode_length_buf = torch.tensor([0, 100, 238, 239])
    _, _, dones, extras = env.step(torch.zeros(4, 4))
    np.testing.assert_array_equal(extras["time_outs"].numpy(), [False, False, False, True])
    np.testing.assert_array_equal(dones.numpy(), [0, 0, 0, 1])
    _, _, dones, extras = env.step(torch.zeros(4, 4))
    np.testing.assert_array_equal(extras["time_outs"].numpy(), [False, False, True, False])
    np.testing.assert_array_equal(dones.numpy(), [0, 0, 1, 0])
    with pytest.raises(ValueError, match="4 values"):
        env.episode_length_buf = torch.zeros(3)


def test_train_cfg_maps_simreals_settings_and_refuses_what_rsl_rl_lacks():
    cfg = rsl_rl_train_cfg(TASK)
    assert cfg["num_steps_per_env"] == 32
    assert cfg["obs_groups"] == {"actor": ["policy"], "critic": ["critic"]}
    alg = cfg["algorithm"]
    assert alg["class_name"] == "PPO" and alg["schedule"] == "adaptive"
    assert (alg["learning_rate"], alg["num_learning_epochs"], alg["num_mini_batches"]) == (
        1e-3,
        5,
        4,
    )
    assert alg["entropy_coef"] == 0.003 and alg["desired_kl"] == 0.01
    assert cfg["actor"]["hidden_dims"] == [64, 64] and cfg["actor"]["activation"] == "elu"
    assert cfg["actor"]["distribution_cfg"] == {
        "class_name": "GaussianDistribution",
        "init_std": 0.5,
    }
    assert rsl_rl_train_cfg(TASK, save_interval=7)["save_interval"] == 7
    # g1-walk's critic has its own learning rate, which rsl_rl's PPO cannot express
    with pytest.raises(ValueError, match=r"ppo\.critic_learning_rate"):
        rsl_rl_train_cfg("g1-walk")


def test_on_policy_runner_trains_unchanged_and_logs_task_metrics(tmp_path):
    """rsl_rl's own runner, logger (TensorBoard, with the task's episode extras) and
    checkpoint, on the adapter; the runner's policy then acts in simreal's evaluation."""
    torch.manual_seed(0)
    env = RslRlVecEnv(TASK, num_envs=32, seed=0, episode_s=1.0)
    runner = OnPolicyRunner(env, rsl_rl_train_cfg(TASK), log_dir=str(tmp_path), device="cpu")
    before = [p.detach().clone() for p in runner.alg.get_policy().parameters()]
    runner.learn(num_learning_iterations=2)
    after = list(runner.alg.get_policy().parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert list(tmp_path.glob("model_*.pt")) and list(tmp_path.glob("events.out.tfevents.*"))
    eval_env = make_env(TASK, env.cfg.__class__(evaluation=True), 2, seed=10_000)
    result = evaluate(eval_env, rsl_rl_policy(runner.alg.get_policy()))
    assert result["episodes"] == 2 and np.isfinite(result["return_mean"])


@pytest.mark.slow
def test_a_few_rsl_rl_iterations_raise_quad_hover_return():
    """Ten rsl_rl iterations (164k steps) with simreal's quad-hover settings raise the
    deterministic evaluation return that simreal's trainer reports, on the evaluation
    environment it builds (4 episodes from the ground, evaluation seed 10000)."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        config = run_config(TrainRequest(task=TASK, seed=0))
        _, eval_env, train_cfg, _ = build_envs(config)
        env = RslRlVecEnv(TASK, num_envs=train_cfg.num_envs, seed=0)
        runner = OnPolicyRunner(env, rsl_rl_train_cfg(TASK), log_dir=None, device="cpu")
        policy = rsl_rl_policy(runner.alg.get_policy())
        start = evaluate(eval_env, policy)["return_mean"]
        runner.learn(num_learning_iterations=10)
        end = evaluate(eval_env, policy)["return_mean"]
    finally:
        torch.set_num_threads(threads)
    assert end > start + 50.0, (start, end)
