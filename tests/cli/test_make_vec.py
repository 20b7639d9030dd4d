"""`simreal.make_vec`: a task as a Gymnasium vector environment. Spaces, Gymnasium's own
checks, values against the task's own environment step for step, same-step autoreset
with the task's episode summaries, seeding, bad input, and a CleanRL-style PPO loop."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch
from gymnasium.spaces import Box
from gymnasium.utils.env_checker import check_returned_data_not_reused, data_equivalence
from gymnasium.utils.passive_env_checker import check_obs
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import simreal
from simreal.tasks import get_task, make_env

TASK = "quad-hover"


def test_spaces_and_metadata_come_from_the_task():
    envs = simreal.make_vec(TASK, num_envs=6, seed=0)
    task = envs.env
    assert isinstance(envs, VectorEnv) and envs.num_envs == 6
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert envs.single_observation_space == Box(-np.inf, np.inf, (task.num_obs,), np.float32)
    assert task.num_obs == 22 and task.num_actions == 4
    assert envs.single_action_space == Box(-1.0, 1.0, (4,), np.float32)
    assert envs.observation_space == batch_space(envs.single_observation_space, 6)
    assert envs.action_space == batch_space(envs.single_action_space, 6)
    assert envs.single_critic_observation_space.shape == (task.num_critic_obs,)
    assert envs.max_episode_steps == task.max_episode_steps == 240  # 8 s at 30 Hz


def test_gymnasium_checks_on_real_steps():
    """Gymnasium's env checker is for single environments; its pieces that apply to a
    vector environment run here on real resets and steps: observations of the declared
    dtype inside the declared space (its warnings made errors), and no returned array
    shared between calls (`check_returned_data_not_reused`, with one simulation)."""
    envs = simreal.make_vec(TASK, num_envs=8, seed=1)
    envs.action_space.seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obs, info = envs.reset(seed=1)
        check_obs(obs, envs.observation_space, "reset")
        for _ in range(40):
            obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
            check_obs(obs, envs.observation_space, "step")
            assert reward.shape == (8,) and reward.dtype == np.float32
            assert terminated.dtype == truncated.dtype == np.bool_
            assert info["critic_obs"] in batch_space(envs.single_critic_observation_space, 8)
    check_returned_data_not_reused(simreal.make_vec(TASK, num_envs=1, seed=2))


def test_values_equal_the_tasks_own_environment_step_for_step():
    """The vector environment returns the task's numbers, not a copy of its shapes: a
    task built directly with the same config and seed, given the same actions (some
    outside the bounds, which the task clips), gives the same observations, rewards, ends
    and episode summaries, and episodes both fail and time out on the way."""
    overrides = {"episode_s": 0.5}  # 15 steps: time-outs among the failures
    envs = simreal.make_vec(TASK, num_envs=16, seed=3, **overrides)
    cfg = dataclasses.replace(get_task(TASK).config_cls(), **overrides)
    task = make_env(TASK, cfg, 16, seed=3)
    obs, info = envs.reset()
    task_obs, task_critic = task.reset()
    np.testing.assert_array_equal(obs, task_obs)
    np.testing.assert_array_equal(info["critic_obs"], task_critic)
    rng = np.random.default_rng(0)
    ended = {"terminated": 0, "truncated": 0}
    for t in range(60):
        actions = rng.normal(0.0, 0.05, (16, 4)).astype(np.float32)
        actions[t % 16, t % 4] = 1.5  # outside the Box: the task clips it to 1
        obs, reward, terminated, truncated, info = envs.step(actions)
        step = task.step(actions)
        np.testing.assert_array_equal(obs, step.obs)
        np.testing.assert_array_equal(reward, step.reward)
        np.testing.assert_array_equal(terminated, step.terminated)
        np.testing.assert_array_equal(truncated, step.truncated)
        np.testing.assert_array_equal(info["critic_obs"], step.critic_obs)
        done = step.terminated | step.truncated
        if not done.any():
            assert "final_info" not in info
            continue
        ended["terminated"] += int(step.terminated.sum())
        ended["truncated"] += int(step.truncated.sum())
        final = info["final_info"]
        np.testing.assert_array_equal(info["_final_info"], done)
        for key, values in step.info["episode"].items():
            np.testing.assert_array_equal(final[key][done], values)
            np.testing.assert_array_equal(final[f"_{key}"], done)
            assert not final[key][~done].any()
        if step.truncated.any():
            np.testing.assert_array_equal(info["_final_critic_obs"], step.truncated)
            rows = step.truncated
            np.testing.assert_array_equal(
                info["final_critic_obs"][rows], step.final_critic_obs[rows]
            )
        else:
            assert "final_critic_obs" not in info
    assert ended["terminated"] > 0 and ended["truncated"] > 0, ended


def test_same_step_autoreset_with_gymnasiums_episode_statistics():
    """Rows reset in the step that ends them (the observation returned already starts the
    next episode), which Gymnasium's RecordEpisodeStatistics reads from the metadata:
    its returns and lengths then agree with the task's own episode summary."""
    envs = RecordEpisodeStatistics(simreal.make_vec(TASK, num_envs=8, seed=4, episode_s=0.4))
    envs.reset()
    checked = 0
    for _ in range(40):
        actions = np.zeros((8, 4), dtype=np.float32)
        _, _, terminated, truncated, info = envs.step(actions)
        done = terminated | truncated
        if not done.any():
            continue
        final = info["final_info"]
        np.testing.assert_allclose(info["episode"]["r"][done], final["return"][done], rtol=1e-5)
        np.testing.assert_array_equal(info["episode"]["l"][done], final["length"][done])
        # the reset rows are at the start of a new episode already
        assert (envs.unwrapped.env.episode_step[done] == 0).all()
        checked += int(done.sum())
    assert checked >= 8  # 12-step episodes over 40 steps: every row ended at least once


def test_reset_seed_reproduces_and_reset_without_seed_goes_on():
    envs = simreal.make_vec(TASK, num_envs=8, seed=5)
    first, _ = envs.reset(seed=5)
    for _ in range(10):
        envs.step(envs.action_space.sample())
    again, _ = envs.reset(seed=5)
    assert data_equivalence(first, again, exact=True)
    other, _ = envs.reset(seed=6)
    assert not np.array_equal(first, other)  # training starts are random in the air
    onwards, _ = envs.reset()
    assert not np.array_equal(onwards, other)
    assert np.array_equal(simreal.make_vec(TASK, num_envs=8, seed=6).reset()[0], other)


def test_evaluation_override_gives_the_evaluation_start():
    envs = simreal.make_vec(TASK, num_envs=3, seed=0, evaluation=True)
    obs, _ = envs.reset()
    # HoverAviary's start: at rest below the target, all rows the same
    assert np.array_equal(obs[0], obs[1]) and np.array_equal(obs[0], obs[2])
    assert obs[0, 2] > 0.8 and np.allclose(obs[0, :2], 0.0)  # target error: up, not aside


def test_device_gives_torch_tensors_with_the_same_values():
    numpy_envs = simreal.make_vec(TASK, num_envs=4, seed=7)
    torch_envs = simreal.make_vec(TASK, num_envs=4, seed=7, device="cpu")
    obs, _ = numpy_envs.reset()
    tobs, _ = torch_envs.reset()
    assert isinstance(tobs, torch.Tensor) and np.array_equal(tobs.numpy(), obs)
    actions = np.full((4, 4), 0.1, dtype=np.float32)
    out = numpy_envs.step(actions)
    tout = torch_envs.step(torch.from_numpy(actions))
    for a, b in zip(out[:4], tout[:4], strict=True):
        assert isinstance(b, torch.Tensor) and np.array_equal(b.numpy(), a)


def test_bad_input_is_refused_with_names():
    with pytest.raises(ValueError, match=r"unknown config field.*episode_seconds.*episode_s"):
        simreal.make_vec(TASK, num_envs=2, episode_seconds=3.0)
    with pytest.raises(KeyError, match="unknown task 'quad-hoover'"):
        simreal.make_vec("quad-hoover", num_envs=2)
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        simreal.make_vec(TASK, num_envs=0)
    envs = simreal.make_vec(TASK, num_envs=2)
    envs.reset()
    with pytest.raises(ValueError, match=r"actions must have shape \(2, 4\).*got \(2, 3\)"):
        envs.step(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="reset options are not supported"):
        envs.reset(options={"reset_mask": np.ones(2, dtype=bool)})
    with pytest.raises(AttributeError, match="no attribute 'make_vector'"):
        simreal.make_vector  # noqa: B018


def test_cleanrl_style_ppo_loop_runs_on_make_vec():
    """A minimal PPO in the shape of CleanRL's ppo_continuous_action (Gaussian actor with a
    state-independent log-std, critic, GAE, clipped surrogate, value loss), written only
    against the Gymnasium vector interface, trains a few iterations on quad-hover."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks: more threads only spin beside the physics
    try:
        _cleanrl_ppo(iterations=3)
    finally:
        torch.set_num_threads(threads)


def _cleanrl_ppo(iterations: int) -> None:
    num_envs, num_steps = 16, 32
    envs = RecordEpisodeStatistics(simreal.make_vec(TASK, num_envs=num_envs, seed=0))
    n_obs = envs.single_observation_space.shape[0]
    n_act = envs.single_action_space.shape[0]
    actor = torch.nn.Sequential(
        torch.nn.Linear(n_obs, 64), torch.nn.Tanh(), torch.nn.Linear(64, n_act)
    )
    critic = torch.nn.Sequential(
        torch.nn.Linear(n_obs, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)
    )
    log_std = torch.nn.Parameter(torch.full((n_act,), -0.5))
    params = [*actor.parameters(), *critic.parameters(), log_std]
    optimizer = torch.optim.Adam(params, lr=3e-4)
    before = [p.detach().clone() for p in params]
    obs_buf = torch.zeros(num_steps, num_envs, n_obs)
    act_buf = torch.zeros(num_steps, num_envs, n_act)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros(num_steps, num_envs) for _ in range(4))
    obs, _ = envs.reset(seed=0)
    next_obs, next_done = torch.tensor(obs), torch.zeros(num_envs)
    returns_seen = []
    for _ in range(iterations):
        for t in range(num_steps):
            obs_buf[t], done_buf[t] = next_obs, next_done
            with torch.no_grad():
                dist = torch.distributions.Normal(actor(next_obs), log_std.exp())
                action = dist.sample()
                logp_buf[t], val_buf[t] = dist.log_prob(action).sum(-1), critic(next_obs)[:, 0]
            act_buf[t] = action
            clipped = np.clip(action.numpy(), envs.action_space.low, envs.action_space.high)
            obs, reward, terminated, truncated, info = envs.step(clipped)
            rew_buf[t] = torch.tensor(reward)
            next_obs = torch.tensor(obs)
            next_done = torch.tensor(terminated | truncated, dtype=torch.float32)
            if "episode" in info:
                returns_seen.extend(info["episode"]["r"][info["_episode"]].tolist())
        with torch.no_grad():
            next_value = critic(next_obs)[:, 0]
            advantages, last = torch.zeros_like(rew_buf), 0.0
            for t in reversed(range(num_steps)):
                not_done = 1.0 - (next_done if t == num_steps - 1 else done_buf[t + 1])
                value_next = next_value if t == num_steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + 0.99 * value_next * not_done - val_buf[t]
                advantages[t] = last = delta + 0.99 * 0.95 * not_done * last
            targets = advantages + val_buf
        b_obs, b_act = obs_buf.reshape(-1, n_obs), act_buf.reshape(-1, n_act)
        b_logp, b_adv, b_ret = logp_buf.reshape(-1), advantages.reshape(-1), targets.reshape(-1)
        for _ in range(4):
            for idx in torch.randperm(b_obs.shape[0]).split(128):
                dist = torch.distributions.Normal(actor(b_obs[idx]), log_std.exp())
                ratio = (dist.log_prob(b_act[idx]).sum(-1) - b_logp[idx]).exp()
                adv = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(0.8, 1.2)).mean()
                v_loss = 0.5 * (critic(b_obs[idx])[:, 0] - b_ret[idx]).pow(2).mean()
                loss = pg_loss + 0.5 * v_loss
                assert torch.isfinite(loss)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 0.5)
                optimizer.step()
    assert all(not torch.equal(a, b) for a, b in zip(before, params, strict=True))
    assert returns_seen and all(np.isfinite(returns_seen))  # episodes ended and were counted


def test_every_task_builds_as_a_vector_environment():
    """Other tasks' spaces come from their own environments, the G1's wider action clip
    included (one simulation each; dex-track, 14 s to build here, is left out)."""
    for name in ("quad-track", "quad-swarm", "lane-keep", "g1-walk"):
        envs = simreal.make_vec(name, num_envs=1, seed=0)
        obs, _ = envs.reset()
        assert obs in envs.observation_space
        assert envs.single_action_space.shape == (envs.env.num_actions,)
        assert envs.num_envs == envs.env.num_envs
        assert envs.single_action_space.high[0] == envs.env.action_clip
        out = envs.step(np.zeros(envs.action_space.shape, dtype=np.float32))
        assert out[0] in envs.observation_space
