"""`train.env_groups`: simulations stepped in groups (tasks/overlap.py), one group's
physics on a worker thread, give what the groups give stepped one by one."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
import torch

from simreal.robots.g1.kinematics import link_poses
from simreal.tasks import get_task, make_env
from simreal.tasks.g1.kinematics import LinkChains
from simreal.tasks.overlap import OverlappedEnv, make_overlapped_env
from simreal.tasks.rotations import quat_to_matrix


def _overlapped(task: str, num_envs: int, groups: int, seed: int, cfg=None):
    return make_overlapped_env(task, cfg or get_task(task).config_cls(), num_envs, groups, seed)


@pytest.mark.parametrize("task", ["quad-hover", "g1-pull"])
def test_groups_step_as_the_separate_environments_do(task):
    """Every field of every step, and the episodes that end, as the groups' own
    environments (seeds seed + g) give them stepped in turn with the same actions."""
    cfg = get_task(task).config_cls()
    env = _overlapped(task, 6, 3, seed=4, cfg=cfg)
    alone = [make_env(task, cfg, 2, seed=4 + g) for g in range(3)]
    obs, critic = env.reset()
    parts = [a.reset() for a in alone]
    assert np.array_equal(obs, np.concatenate([p[0] for p in parts]))
    assert np.array_equal(critic, np.concatenate([p[1] for p in parts]))
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(120):
        action = rng.uniform(-1, 1, (6, env.num_actions))
        step = env.step(action)
        steps = [a.step(action[2 * g : 2 * g + 2]) for g, a in enumerate(alone)]
        for name in ("obs", "critic_obs", "reward", "terminated", "truncated"):
            assert np.array_equal(
                getattr(step, name), np.concatenate([getattr(s, name) for s in steps])
            )
        episodes = [s.info["episode"] for s in steps if "episode" in s.info]
        assert ("episode" in step.info) == bool(episodes)
        if episodes:
            ended += 1
            done = np.flatnonzero(step.terminated | step.truncated)
            assert step.info["episode"]["return"].shape == done.shape
            expected = np.concatenate([e["return"] for e in episodes])
            assert np.array_equal(step.info["episode"]["return"], expected)
    assert ended > 0, "random actions should end some episodes in 120 steps"
    assert env.physics_time_s == pytest.approx(sum(a.physics_time_s for a in env.groups))
    env.close()


def test_per_simulation_curriculum_round_trips_through_a_checkpoint():
    cfg = get_task("g1-force").config_cls()
    env = _overlapped("g1-force", 4, 2, seed=1, cfg=cfg)
    for g, group in enumerate(env.groups):
        group.schedule.curriculum.restore(np.array([10.0, 20.0]) + 100 * g)
    state = env.curriculum_checkpoint()
    assert state["force_cap_n_per_sim"] == [10.0, 20.0, 110.0, 120.0]
    assert state["force_cap_n"] == pytest.approx(65.0)
    other = _overlapped("g1-force", 4, 2, seed=1, cfg=cfg)
    other.restore_curriculum(state)
    assert other.curriculum_checkpoint()["force_cap_n_per_sim"] == [10.0, 20.0, 110.0, 120.0]
    assert other.curriculum_state() == {"force_cap_n": pytest.approx(65.0)}


def test_groups_must_divide_the_simulations():
    with pytest.raises(ValueError, match="env_groups=3"):
        _overlapped("quad-hover", 8, 3, seed=0)


def test_training_runs_with_groups(tmp_path):
    from simreal.training import TrainRequest, new_run

    runner, run_dir = new_run(
        TrainRequest(
            task="quad-hover",
            envs=8,
            steps=8 * 32 * 2,
            out=tmp_path,
            overrides=("train.env_groups=2", "train.eval_interval=1"),
        )
    )
    assert isinstance(runner.env, OverlappedEnv)
    runner.learn()
    rows = (run_dir / "metrics.csv").read_text().splitlines()
    assert len(rows) == 3  # header and two iterations


def test_link_chains_match_the_robots_own_forward_kinematics():
    """`LinkChains` against `robots.g1.kinematics.link_poses` (one pose at a time, the
    pelvis at the origin) carried into each simulation's pelvis frame."""
    rng = np.random.default_rng(0)
    n = 16
    q = rng.uniform(-1.5, 1.5, (n, 29))
    base_pos = rng.normal(size=(n, 3))
    quat = rng.normal(size=(n, 4))
    base_rot = quat_to_matrix(quat / np.linalg.norm(quat, axis=1, keepdims=True))
    links = ["left_ankle_roll_link", "right_ankle_roll_link"]
    rot, pos = LinkChains(links).poses(base_pos, base_rot, q)
    for sim in range(n):
        poses = link_poses(q[sim])
        for i, link in enumerate(links):
            link_rot, link_pos = poses[link]
            np.testing.assert_allclose(rot[sim, i], base_rot[sim] @ link_rot, atol=1e-12)
            np.testing.assert_allclose(
                pos[sim, i], base_pos[sim] + base_rot[sim] @ link_pos, atol=1e-12
            )
    with pytest.raises(ValueError, match="differ in shape"):
        LinkChains(["torso_link", "left_ankle_roll_link"])


def test_a_rollout_acting_per_group_stores_what_the_groups_did(tmp_path):
    """Each group acts as soon as its own step ended (policies/runner.py): the rollout
    storage must hold, at every step and row, the observation the action was sampled
    on, that action, and the reward and done the environment returned for it. Checked
    by replaying the stored actions through fresh environments of the groups' seeds."""
    from simreal.policies.runner import _Tally
    from simreal.training import TrainRequest, new_run

    runner, _ = new_run(
        TrainRequest(
            task="quad-hover", envs=6, seed=2, out=tmp_path, overrides=("train.env_groups=3",)
        )
    )
    assert runner._acts_per_group()
    storage = runner.ppo.storage
    obs, critic = runner._to_learner(*runner.env.reset())
    tally = _Tally([], deque(maxlen=100), deque(maxlen=100))
    last_obs, _, _ = runner._collect_per_group(obs, critic, tally)
    assert storage.step == storage.num_steps
    for g, rows in enumerate(runner.env.group_rows()):
        env = make_env("quad-hover", runner.env.groups[g].cfg, 2, seed=2 + g)
        expected = env.reset()[0]
        for t in range(storage.num_steps):
            np.testing.assert_array_equal(storage.obs[t, rows].cpu().numpy(), expected)
            step = env.step(storage.actions[t, rows].cpu().numpy())
            np.testing.assert_array_equal(storage.rewards[t, rows].cpu().numpy(), step.reward)
            done = (step.terminated | step.truncated).astype(np.float32)
            np.testing.assert_array_equal(storage.dones[t, rows].cpu().numpy(), done)
            expected = step.obs
        np.testing.assert_array_equal(last_obs[rows].cpu().numpy(), expected)


def test_the_return_scaler_keeps_each_rows_running_return():
    from simreal.policies.normalizer import ReturnScaler

    scaler = ReturnScaler(4, gamma=0.5)
    scaler(torch.ones(2), torch.zeros(2), slice(0, 2))
    scaler(torch.full((2,), 2.0), torch.tensor([0.0, 1.0]), slice(2, 4))
    np.testing.assert_allclose(scaler.running.numpy(), [1.0, 1.0, 2.0, 0.0])


def test_a_swarm_in_groups_counts_its_drones_as_rows():
    cfg = get_task("quad-swarm").config_cls()
    env = _overlapped("quad-swarm", 4, 2, seed=0, cfg=cfg)
    single = make_env("quad-swarm", cfg, 2, seed=0)
    assert env.num_envs == 2 * single.num_envs
    assert env.group_rows() == [slice(0, single.num_envs), slice(single.num_envs, env.num_envs)]
    obs, _ = env.reset()
    step = env.step(np.zeros((env.num_envs, env.num_actions)))
    assert obs.shape[0] == step.obs.shape[0] == env.num_envs
    assert env.expert_action().shape == (env.num_envs, env.num_actions)
