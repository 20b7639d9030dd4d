"""PPO's update and imitation: GAE, time-limit bootstrapping, per-group rates and ratios,
the KL stop, imitation and DAgger, and the rollout's normalizer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _toy_actor import GROUPS, N_OBS, SMALL, observations

from simreal.policies import OnPolicyRunner, TrainConfig
from simreal.policies.config import DAggerConfig, ModelConfig, PPOConfig
from simreal.policies.dagger import DAgger
from simreal.policies.models import ActorCritic
from simreal.policies.ppo import PPO
from simreal.policies.storage import RolloutStorage
from simreal.tasks import make_env
from simreal.tasks.quad_hover import QuadHoverConfig
from simreal.tasks.quad_swarm import QuadSwarmConfig

pytestmark = pytest.mark.usefixtures("work_in_tmp")


def gae_reference(rewards, values, dones, last_values, gamma, lam):
    steps = rewards.shape[0]
    adv = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[1])
    for t in range(steps - 1, -1, -1):
        next_v = last_values if t == steps - 1 else values[t + 1]
        delta = rewards[t] + gamma * next_v * (1 - dones[t]) - values[t]
        running = delta + gamma * lam * (1 - dones[t]) * running
        adv[t] = running
    return adv


def test_gae_matches_a_numpy_reference():
    rng = np.random.default_rng(1)
    steps, envs, gamma, lam = 7, 3, 0.97, 0.9
    rewards = rng.normal(size=(steps, envs))
    values = rng.normal(size=(steps, envs))
    dones = (rng.random((steps, envs)) < 0.25).astype(np.float64)
    dones[2, 1] = 1.0
    last = rng.normal(size=envs)
    storage = RolloutStorage(steps, envs, 2, 2, 1)
    for t in range(steps):
        storage.add(
            rewards=torch.tensor(rewards[t], dtype=torch.float32),
            values=torch.tensor(values[t], dtype=torch.float32),
            dones=torch.tensor(dones[t], dtype=torch.float32),
        )
    storage.compute_returns(torch.tensor(last, dtype=torch.float32), gamma, lam)
    adv = gae_reference(rewards, values, dones, last, gamma, lam)
    np.testing.assert_allclose(storage.returns.numpy(), adv + values, rtol=1e-5, atol=1e-5)
    normalized = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    np.testing.assert_allclose(storage.advantages.numpy(), normalized, rtol=1e-4, atol=1e-5)
    assert storage.step == 0


class _Step:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def test_time_limit_truncation_bootstraps_with_the_final_value():
    torch.manual_seed(0)
    model = ActorCritic(N_OBS, N_OBS, GROUPS, SMALL)
    cfg = PPOConfig(num_steps_per_env=1, gamma=0.9)
    ppo = PPO(model, cfg, RolloutStorage(1, 3, N_OBS, N_OBS, 6), seed=0)
    obs = observations(3)
    ppo.act(obs, obs)
    final = observations(3, seed=5).numpy()
    ppo.record(
        _Step(
            reward=np.array([1.0, 2.0, 3.0], dtype=np.float32),
            terminated=np.array([False, False, True]),
            truncated=np.array([False, True, False]),
            final_critic_obs=final,
        )
    )
    with torch.no_grad():
        bootstrap = 0.9 * model.value(torch.from_numpy(final[1:2]))[0]
    assert abs(float(bootstrap)) > 1e-4  # else the check below could not tell
    expected = torch.stack([torch.tensor(1.0), 2.0 + bootstrap, torch.tensor(3.0)])
    torch.testing.assert_close(ppo.storage.rewards[0], expected)
    torch.testing.assert_close(ppo.storage.dones[0], torch.tensor([0.0, 1.0, 1.0]))


def test_the_critic_keeps_its_own_rate_while_the_actor_rate_adapts():
    model = ActorCritic(N_OBS, N_OBS, GROUPS, SMALL)
    cfg = PPOConfig(learning_rate=1e-3, critic_learning_rate=5e-4, desired_kl=1e-9)
    ppo = PPO(model, cfg, RolloutStorage(1, 3, N_OBS, N_OBS, 6), seed=0)
    actor, critic = ppo.optimizer.param_groups
    assert {id(p) for p in critic["params"]} == {id(p) for p in model.critic.parameters()}
    ppo._adapt_learning_rate(kl=1.0)  # far above the target: the actor slows down
    assert actor["lr"] == pytest.approx(1e-3 / 1.5) and critic["lr"] == 5e-4
    shared = PPO(model, PPOConfig(desired_kl=1e-9), RolloutStorage(1, 3, N_OBS, N_OBS, 6), 0)
    shared._adapt_learning_rate(kl=1.0)
    assert [g["lr"] for g in shared.optimizer.param_groups] == [pytest.approx(1e-3 / 1.5)] * 2


def test_imitation_pulls_the_mean_action_toward_the_expert():
    torch.manual_seed(0)
    model = ActorCritic(N_OBS, N_OBS, GROUPS, SMALL)
    cfg = PPOConfig(num_steps_per_env=4, num_epochs=20, learning_rate=3e-3, schedule="fixed")
    ppo = PPO(model, cfg, RolloutStorage(4, 8, N_OBS, N_OBS, 6), seed=0)
    expert = torch.full((8, 6), 0.7)
    for t in range(4):
        obs = observations(8, seed=t)
        ppo.act(obs, obs, expert)
        ppo.record(
            _Step(
                reward=np.zeros(8, dtype=np.float32),
                terminated=np.zeros(8, dtype=bool),
                truncated=np.zeros(8, dtype=bool),
                final_critic_obs=None,
            )
        )
    ppo.finish_rollout(obs)
    before = (model.act_inference(obs) - expert).square().mean().item()
    losses = ppo.update(imitation=10.0)
    after = (model.act_inference(obs) - expert).square().mean().item()
    assert "imitation_loss" in losses and after < 0.25 * before


def test_imitation_needs_an_environment_with_an_expert(tmp_path):
    cfg = TrainConfig(num_envs=4, ppo=PPOConfig(imitation_coef=1.0))
    env = make_env("quad-hover", QuadHoverConfig(), num_envs=4, seed=0)
    with pytest.raises(ValueError, match="imitation_coef"):
        OnPolicyRunner(env, cfg, tmp_path)


def test_dagger_learns_the_expert_on_its_own_states_and_its_buffer_keeps_the_latest():
    torch.manual_seed(0)
    model = ActorCritic(N_OBS, N_OBS, GROUPS, SMALL)
    cfg = DAggerConfig(gradient_steps=100, batch_size=32, buffer_rows=40, expert_iterations=4)
    ppo = PPO(model, PPOConfig(), RolloutStorage(1, 8, N_OBS, N_OBS, 6), seed=0)
    dagger = DAgger(model, cfg, ppo.optimizer, N_OBS, 6, seed=0)
    assert [dagger.beta(i) for i in (0, 2, 4, 9)] == [1.0, 0.5, 0.0, 0.0]
    expert_of = lambda obs: torch.tanh(obs[:, :6])  # noqa: E731 - the expert: a fixed map
    with torch.inference_mode():
        for t in range(6):  # 48 rows into a buffer of 40: the oldest 8 drop out
            obs = observations(8, seed=t)
            dagger.begin_iteration(0)  # beta 1: the expert acts
            executed = dagger.act(obs, obs, expert_of(obs))
            torch.testing.assert_close(executed, expert_of(obs), atol=0.5, rtol=0)
    assert dagger.size == 40 and dagger.head == 8
    torch.testing.assert_close(dagger.obs[:8], observations(8, seed=5))
    held_out = observations(64, seed=99)
    before = (model.act_inference(held_out) - expert_of(held_out)).square().mean().item()
    for _ in range(3):
        losses = dagger.update()
    after = (model.act_inference(held_out) - expert_of(held_out)).square().mean().item()
    assert losses["imitation_loss"] < 0.05 and after < 0.5 * before


def test_dagger_trains_a_swarm_policy_through_the_runner_and_resumes(tmp_path):
    swarm = QuadSwarmConfig(num_drones=2)
    cfg = TrainConfig(
        num_envs=2,
        max_env_steps=2 * 5 * 4,
        algorithm="dagger",
        dagger=DAggerConfig(steps_per_iteration=5, gradient_steps=3, batch_size=8),
    )
    env = make_env("quad-swarm", swarm, num_envs=2, seed=0)
    runner = OnPolicyRunner(env, cfg, tmp_path, reward_terms=["progress"])
    runner.learn()
    assert runner.iteration == 2 and runner.env_steps == 40
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert all(r.split(",")[header.index("imitation_loss")] != "" for r in rows[1:])
    cfg.max_env_steps = 80
    again = OnPolicyRunner(make_env("quad-swarm", swarm, num_envs=2, seed=0), cfg, tmp_path)
    again.resume()
    assert again.dagger.learning_rate == cfg.dagger.learning_rate
    again.learn()
    assert again.iteration == 4


def _filled_ppo(cfg: PPOConfig) -> PPO:
    torch.manual_seed(0)
    model = ActorCritic(N_OBS, N_OBS, GROUPS, SMALL)
    ppo = PPO(model, cfg, RolloutStorage(4, 8, N_OBS, N_OBS, 6), seed=0)
    for t in range(4):
        obs = observations(8, seed=t)
        ppo.act(obs, obs)
        reward = np.random.default_rng(t).normal(size=8).astype(np.float32)
        none = np.zeros(8, dtype=bool)
        ppo.record(_Step(reward=reward, terminated=none, truncated=none, final_critic_obs=None))
    ppo.finish_rollout(obs)
    return ppo


def _adam_steps(ppo: PPO) -> int:
    (first, *_) = ppo.optimizer.param_groups[0]["params"]
    return int(ppo.optimizer.state[first]["step"])


def test_max_kl_stops_the_update_once_the_policy_has_moved_that_far():
    """The first minibatch always steps (KL 0); with a cap below the KL one step makes, the
    update stops there. Without a cap, or with a loose one, every epoch runs."""
    cfg = dict(num_steps_per_env=4, num_epochs=3, num_minibatches=2, schedule="fixed")
    capped = _filled_ppo(PPOConfig(**cfg, max_kl=1e-9))
    stats = capped.update()
    assert _adam_steps(capped) == 1 and np.isfinite(stats["kl"])
    for max_kl in (None, 1e3):
        ppo = _filled_ppo(PPOConfig(**cfg, max_kl=max_kl))
        ppo.update()
        assert _adam_steps(ppo) == 3 * 2
    with pytest.raises(ValueError, match="max_kl"):
        PPOConfig(max_kl=0.0).validate()


def _actor_grads(ppo: PPO, batch) -> dict[str, float]:
    """Each action group's actor-gradient norm from the surrogate alone."""
    ppo.model.zero_grad()
    dist = ppo.model.distribution(batch.obs)
    ppo._surrogate(dist, batch).backward()
    nets = ppo.model.actor.nets
    return {
        name: float(sum(p.grad.norm() ** 2 for p in nets[name].parameters()) ** 0.5)
        for name in nets
    }


def test_per_group_ratio_keeps_the_other_groups_learning_when_one_group_is_clipped():
    """Move only the lower-body actor far from the rollout's policy: under the joint ratio
    every sample with a positive advantage is clipped, so the waist and upper actors get no
    gradient either; with each group's own ratio they still learn. For one group (the
    coupled actor) both ratios give the same loss."""
    cfg = dict(num_steps_per_env=4, num_epochs=1, num_minibatches=1, schedule="fixed")
    grads = {}
    for ratio in ("joint", "per_group"):
        ppo = _filled_ppo(PPOConfig(**cfg, ratio=ratio))
        (batch,) = ppo.storage.minibatches(1, torch.Generator().manual_seed(0))
        batch.advantages = batch.advantages.abs() + 0.1
        # The rollout's lower-body actor put its mean 3 std away from the action it took,
        # so the current one is far likelier to take it: its ratio is far above 1 + clip.
        batch.old_mean[:, :3] = batch.actions[:, :3] + 3.0 * batch.old_std[:, :3]
        old = torch.distributions.Normal(batch.old_mean, batch.old_std)
        batch.old_log_prob = old.log_prob(batch.actions).sum(-1)
        grads[ratio] = _actor_grads(ppo, batch)
    assert grads["joint"]["waist"] < 1e-3 * grads["per_group"]["waist"]
    assert grads["joint"]["upper"] < 1e-3 * grads["per_group"]["upper"]
    assert grads["per_group"]["waist"] > 0 and grads["per_group"]["upper"] > 0

    losses = []
    for ratio in ("joint", "per_group"):
        torch.manual_seed(0)
        coupled = ModelConfig(actor_hidden=(16, 16), critic_hidden=(16,), arch="coupled")
        model = ActorCritic(N_OBS, N_OBS, GROUPS, coupled)
        ppo = PPO(model, PPOConfig(**cfg, ratio=ratio), RolloutStorage(1, 8, N_OBS, N_OBS, 6), 0)
        obs = observations(8)
        ppo.act(obs, obs)
        none = np.zeros(8, dtype=bool)
        ppo.record(
            _Step(
                reward=np.ones(8, np.float32),
                terminated=none,
                truncated=none,
                final_critic_obs=None,
            )
        )
        ppo.finish_rollout(obs)
        (batch,) = ppo.storage.minibatches(1, torch.Generator().manual_seed(0))
        with torch.no_grad():
            model.actor.nets["all"][-1].bias.add_(0.3)
            dist = model.distribution(batch.obs)
            losses.append(float(ppo._surrogate(dist, batch)))
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    with pytest.raises(ValueError, match=r"ppo\.ratio"):
        PPOConfig(ratio="per_joint").validate()


def test_rollout_normalizer_updates_leave_the_acting_policy_unchanged_until_the_update():
    """normalizer_update=rollout: the rollout's steps and its update see one normalization,
    so before any gradient step the policy's means on the stored observations are the
    ones it acted with; step-wise updates have moved them by then. The rollout's
    observations join the statistics after the update."""
    for mode in ("rollout", "step"):
        ppo = _filled_ppo(PPOConfig(num_steps_per_env=4, normalizer_update=mode))
        s, normalizer = ppo.storage, ppo.model.obs_normalizer
        with torch.no_grad():
            mean = ppo.model.distribution(s.obs.flatten(0, 1)).mean
        moved = float((mean - s.mean.flatten(0, 1)).abs().max())
        if mode == "rollout":
            assert moved < 1e-6 and float(normalizer.count) == 0.0
        else:
            assert moved > 1e-3 and float(normalizer.count) == 32.0
        ppo.update()
        assert float(normalizer.count) == 32.0
        expected = s.obs.flatten(0, 1).mean(0)
        torch.testing.assert_close(normalizer.mean, expected, rtol=0, atol=1e-5)
    never = _filled_ppo(PPOConfig(num_steps_per_env=4, normalizer_update="never"))
    never.update()
    assert float(never.model.obs_normalizer.count) == 0.0
    with pytest.raises(ValueError, match="normalizer_update"):
        PPOConfig(normalizer_update="sometimes").validate()
