"""The `--gym` training defaults and the PPO parts they switch on: return scaling, the
linear learning-rate schedule and orthogonal initialization."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from simreal.policies.checkpoint import load_actor_critic, save_checkpoint, warm_start_state
from simreal.policies.config import ModelConfig, PPOConfig, TrainConfig
from simreal.policies.gym_env import GymVecEnv, gym_train_config
from simreal.policies.models import ActorCritic
from simreal.policies.normalizer import ReturnScaler
from simreal.policies.ppo import PPO
from simreal.policies.storage import RolloutStorage


def test_return_scaler_divides_by_the_std_of_the_discounted_return():
    torch.manual_seed(0)
    scaler = ReturnScaler(num_envs=4, gamma=0.9, clip=1e9)
    rewards = [torch.full((4,), 100.0) for _ in range(200)]
    returns = []
    running = torch.zeros(4, dtype=torch.float64)
    for r in rewards:
        running = running * 0.9 + r
        returns.append(running.clone())
        scaled = scaler(r, torch.zeros(4))
    std = torch.cat(returns).std(unbiased=False)
    assert scaled[0].item() == pytest.approx(100.0 / std.item(), rel=1e-4)
    # a done ends the running return of that simulation only
    scaler(torch.zeros(4), torch.tensor([1.0, 0.0, 0.0, 0.0]))
    assert scaler.running[0] == 0.0 and scaler.running[1] > 0.0


def test_return_scaler_clips():
    scaler = ReturnScaler(num_envs=2, gamma=0.99, clip=2.0)
    for _ in range(1000):  # returns settle near 1 / (1 - gamma) with a small std
        scaler(torch.ones(2), torch.zeros(2))
    out = scaler(torch.tensor([1e6, -1e6]), torch.zeros(2))
    assert out.tolist() == [2.0, -2.0]


def _ppo(cfg: PPOConfig, model_cfg: ModelConfig | None = None) -> PPO:
    model = ActorCritic(3, 3, {"a": (0, 1)}, model_cfg or ModelConfig())
    storage = RolloutStorage(cfg.num_steps_per_env, 5, 3, 3, 2)
    return PPO(model, cfg, storage, seed=0)


def test_linear_schedule_falls_to_zero_over_the_budget():
    ppo = _ppo(PPOConfig(schedule="linear", learning_rate=3e-4))
    rates = []
    for progress in (0.0, 0.25, 0.5, 1.0, 1.5):
        ppo.begin_iteration(0, progress)
        rates.append([g["lr"] for g in ppo.optimizer.param_groups])
    assert rates[0] == [3e-4, 3e-4]
    assert rates[2] == pytest.approx([1.5e-4, 1.5e-4])
    assert rates[3] == rates[4] == [0.0, 0.0]


def test_adaptive_and_fixed_schedules_ignore_progress():
    for schedule in ("adaptive", "fixed"):
        ppo = _ppo(PPOConfig(schedule=schedule, learning_rate=1e-3))
        ppo.begin_iteration(3, 0.9)
        assert ppo.optimizer.param_groups[0]["lr"] == 1e-3


def test_orthogonal_init_gains():
    torch.manual_seed(0)
    model = ActorCritic(
        12, 12, {"a": (0, 1, 2)}, ModelConfig(init="orthogonal", actor_hidden=(16, 16))
    )
    first = model.actor.nets["a"][0]
    w = first.weight.detach()
    # rows of an orthogonal (16 x 12) matrix times sqrt(2): W^T W = 2 I
    assert torch.allclose(w.T @ w, 2.0 * torch.eye(12), atol=1e-5)
    assert torch.count_nonzero(first.bias) == 0
    last_critic = model.critic[-1].weight.detach()
    assert last_critic.norm().item() == pytest.approx(1.0, rel=1e-5)
    last_actor = model.actor.nets["a"][-1].weight.detach()
    assert torch.linalg.matrix_norm(last_actor, ord=2).item() == pytest.approx(0.01, rel=1e-4)


def test_default_init_is_unchanged_by_the_option():
    """The tasks' policies keep PyTorch's initialization (their numbers depend on it)."""
    torch.manual_seed(0)
    a = ActorCritic(5, 5, {"a": (0, 1)}, ModelConfig())
    torch.manual_seed(0)
    b = ActorCritic(5, 5, {"a": (0, 1)}, ModelConfig(init="default"))
    for (ka, va), (_, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(va, vb), ka


def test_return_scaler_travels_in_checkpoints_not_in_the_deployed_model(tmp_path):
    ppo = _ppo(PPOConfig(normalize_returns=True))
    ppo.model.return_scaler(torch.ones(5), torch.zeros(5))
    state = ppo.model.state_dict()
    assert "return_scaler.stats.var" in state
    spec = {"n_obs": 3, "n_critic_obs": 3, "action_groups": {"a": [0, 1]}}
    path = save_checkpoint(
        tmp_path, 1, {"model": state, "model_spec": spec, "model_cfg": ModelConfig()}
    )
    model = load_actor_critic(path)
    assert not any(k.startswith("return_scaler") for k in model.state_dict())
    # a warm start keeps the new run's own (fresh) reward statistics
    fresh = _ppo(PPOConfig(normalize_returns=True)).model.state_dict()
    merged = warm_start_state(fresh, state, (3, 3), (3, 3))
    assert merged["return_scaler.stats.count"] == 0


def test_tasks_checkpoints_keep_their_keys():
    ppo = _ppo(PPOConfig())
    assert not any(k.startswith("return_scaler") for k in ppo.model.state_dict())


def test_gym_defaults_validate_and_follow_the_references():
    cfg = gym_train_config(seed=3)
    cfg.validate()
    assert cfg.seed == 3
    assert cfg.num_envs * cfg.ppo.num_steps_per_env == 2048
    assert cfg.num_envs * cfg.ppo.num_steps_per_env // cfg.ppo.num_minibatches == 64
    assert (cfg.ppo.schedule, cfg.ppo.normalize_returns, cfg.ppo.clip_value_loss) == (
        "linear",
        False,
        False,
    )
    assert cfg.model.normalizer_var_floor == 1.0  # scaled down, never amplified
    assert (cfg.model.activation, cfg.model.init, cfg.model.arch) == (
        "tanh",
        "orthogonal",
        "coupled",
    )
    assert math.isclose(cfg.model.init_std, 1.0)
    # the tasks' defaults are untouched
    tasks = TrainConfig()
    assert tasks.ppo.schedule == "adaptive" and not tasks.ppo.normalize_returns
    assert tasks.ppo.clip_value_loss and tasks.model.normalizer_var_floor == 0.01


def test_bad_schedule_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"ppo\.schedule"):
        PPOConfig(schedule="cosine").validate()
    with pytest.raises(ValueError, match=r"model\.init"):
        ModelConfig(init="xavier").validate()


def test_a_short_gym_run_records_scaled_rewards():
    env = GymVecEnv("Pendulum-v1", num_envs=2, seed=0)
    cfg = PPOConfig(num_steps_per_env=8, normalize_returns=True)
    model = ActorCritic(env.num_obs, env.num_critic_obs, env.action_groups, ModelConfig())
    storage = RolloutStorage(8, 2, env.num_obs, env.num_critic_obs, env.num_actions)
    ppo = PPO(model, cfg, storage, seed=0)
    obs, critic = (torch.from_numpy(x) for x in env.reset())
    raw = []
    for _ in range(8):
        step = env.step(ppo.act(obs, critic).numpy())
        raw.append(step.reward.copy())
        ppo.record(step)
        obs, critic = torch.from_numpy(step.obs), torch.from_numpy(step.critic_obs)
    env.close()
    # Pendulum's rewards are -16..0 per step; scaled by the return's std they are not
    assert np.abs(np.concatenate(raw)).max() > 1.0
    assert not torch.allclose(storage.rewards, torch.from_numpy(np.stack(raw)))
    assert torch.isfinite(storage.rewards).all()
