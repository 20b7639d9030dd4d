"""The state estimator of `ActorCritic` (`estimate_columns`) and g1-force's deployable
`actor_estimates_force`: the estimate is regressed on the simulator's true value, the
actor reads it without training it, the exported policy takes the task's observation
alone (and deploys as such), and a warm start from a policy that was told the true value
hands its weights on that input to the estimate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from _g1_policy import ACTION_GROUPS, g1_metadata
from _repo import load_script

from simreal.cli import main
from simreal.policies.checkpoint import load_actor_critic, load_checkpoint, resolve_checkpoint
from simreal.policies.config import ModelConfig
from simreal.policies.export import export_onnx
from simreal.policies.models import ActorCritic
from simreal.tasks import make_env
from simreal.tasks.g1_force import G1ForceConfig
from simreal.tasks.g1_force.env import TORSO_FORCE_ORACLE
from simreal.training import warm_start_weights

GROUPS = {"a": (0, 2), "b": (1,)}
SMALL = ModelConfig(actor_hidden=(32,), critic_hidden=(32,), estimator_hidden=(32,))


def synthetic(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Observations (n, 6) and critic observations (n, 8) whose last two columns are a
    fixed linear function of the observation (what the estimator can learn)."""
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, 6, generator=g)
    hidden = obs @ torch.tensor([[2.0, 0.0], [0.0, -1.0], [1.0, 1.0], [0, 0], [0, 0], [0, 3]])
    critic = torch.cat([obs, 10.0 + 5.0 * hidden], dim=1)
    return obs, critic


def test_the_estimator_learns_its_target_and_the_policy_loss_does_not_train_it():
    model = ActorCritic(6, 8, GROUPS, SMALL, estimate_columns=[6, 7])
    obs, critic = synthetic(4096)
    model.update_normalizers(obs, critic)
    # the normalizer covers the observation, then the true values of the estimate
    torch.testing.assert_close(model.obs_normalizer.mean[6:], critic[:, 6:].mean(0))
    # the policy's loss leaves the estimator without gradient
    model.distribution(obs).mean.square().sum().backward()
    assert all(p.grad is None for p in model.estimator.parameters())
    assert model.actor.nets["a"][0].weight.grad is not None
    opt = torch.optim.Adam(model.estimator.parameters(), lr=3e-3)
    first = float(model.estimation_loss(obs, critic).detach())
    for _ in range(300):
        loss = model.estimation_loss(obs, critic)
        opt.zero_grad()
        loss.backward()
        opt.step()
    test_obs, test_critic = synthetic(512, seed=1)
    assert float(model.estimation_loss(test_obs, test_critic).detach()) < 0.05 * first
    with torch.no_grad():  # in the target's own units
        err = model.estimate(test_obs) - test_critic[:, 6:]
    assert float(err.abs().mean()) < 0.1 * float(test_critic[:, 6:].std())
    # the actor reads the estimate after the normalized observation
    with torch.no_grad():
        x = model.actor_input(test_obs)
    assert x.shape == (512, 8)
    torch.testing.assert_close(x[:, :6], model.obs_normalizer.columns(test_obs, 0))


def test_the_exported_policy_takes_the_observation_alone_and_acts_as_pytorch(tmp_path):
    model = ActorCritic(6, 8, GROUPS, SMALL, estimate_columns=[6, 7])
    obs, critic = synthetic(256)
    model.update_normalizers(obs, critic)
    model.eval()
    path = export_onnx(model, tmp_path / "p.onnx", {"task": "test"})
    session = ort.InferenceSession(str(path))
    (inp,) = session.get_inputs()
    assert inp.shape[-1] == 6
    (out,) = session.run(None, {inp.name: obs.numpy()})
    with torch.no_grad():
        np.testing.assert_allclose(out, model.act_inference(obs).numpy(), atol=1e-5)


def test_a_checkpoint_with_an_estimator_rebuilds_from_its_spec(tmp_path):
    out = tmp_path / "runs"
    args = ["train", "g1-force", "--envs", "4", "--steps", "200", "--out", str(out)]
    sets = ["--set", "task.actor_estimates_force=true", "--set", "train.eval_episodes=2"]
    assert main([*args, *sets]) == 0
    (run,) = (out / "g1-force").iterdir()
    ckpt = resolve_checkpoint(run)
    spec = load_checkpoint(ckpt)["model_spec"]
    env = make_env("g1-force", G1ForceConfig(actor_estimates_force=True), num_envs=2)
    assert spec["estimate_columns"] == env.estimate_columns() == list(range(148, 151))
    model = load_actor_critic(ckpt)
    assert model.estimator is not None and model.n_obs == env.num_obs == 93
    rows = (run / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    losses = [row.split(",")[header.index("estimation_loss")] for row in rows[1:]]
    assert losses and all(float(v) >= 0 for v in losses)
    # `simreal export` of the run: the observation alone in, the estimate named, and the
    # deploy node takes it as any g1-force policy
    from simreal.deploy.g1.node import load_g1_policy
    from simreal.deploy.g1.observation import G1Observation
    from simreal.evaluation import export_run

    policy = load_g1_policy(export_run(run))
    assert policy.metadata.n_obs == 93
    assert json.loads(policy.raw_metadata["state_estimates"]) == [["torso_force_oracle", 3]]
    G1Observation(policy)
    obs = np.zeros((1, 93), dtype=np.float32)
    with torch.no_grad():
        np.testing.assert_allclose(
            policy(obs), model.act_inference(torch.from_numpy(obs)).numpy(), atol=1e-5
        )


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory) -> Path:
    """A g1-force run whose actor was told the true torso force (a teacher)."""
    out = tmp_path_factory.mktemp("oracle")
    args = ["train", "g1-force", "--envs", "2", "--steps", "1", "--out", str(out)]
    sets = ["--set", "task.actor_observes_force=true", "--set", "train.eval_episodes=2"]
    assert main([*args, *sets]) == 0
    (run,) = (out / "g1-force").iterdir()
    return run


def test_a_student_warm_starts_from_the_teacher_with_its_weights_on_the_true_force(oracle_run):
    """The estimate enters the actor where the teacher read the true force: same weights,
    same normalizer statistics, so the student acts as the teacher wherever its estimate
    is right; the estimator itself starts untrained."""
    cfg = G1ForceConfig(actor_estimates_force=True, randomize=False)
    env = make_env("g1-force", cfg, num_envs=3, seed=0)
    model_cfg = load_checkpoint(resolve_checkpoint(oracle_run))["model_cfg"]
    ckpt, weights = warm_start_weights(oracle_run, env, model_cfg, "g1-force")
    teacher = load_actor_critic(ckpt)
    student = ActorCritic(
        env.num_obs, env.num_critic_obs, env.action_groups, model_cfg, None, env.estimate_columns()
    )
    student.load_state_dict(weights)
    student.eval()
    env.reset()
    env.external_force[:] = 0.0
    env.external_force[:, 0] = [[-60.0, 0.0, 0.0], [0.0, 25.0, 0.0], [10.0, 0.0, -5.0]]
    obs, critic = (torch.from_numpy(a) for a in env.observe())
    truth = critic[:, env.estimate_columns()]
    torch.testing.assert_close(truth, torch.from_numpy(TORSO_FORCE_ORACLE.func(env)).float())
    with torch.no_grad():
        told = teacher.act_inference(torch.cat([obs, truth], dim=1))
        x = torch.cat([student.obs_normalizer.columns(obs, 0),
                       student.obs_normalizer.columns(truth, 93)], dim=1)  # fmt: skip
        torch.testing.assert_close(student.actor(x), told)
    for name in ("lower", "upper"):
        torch.testing.assert_close(
            student.actor.nets[name][0].weight, teacher.actor.nets[name][0].weight
        )
    assert not torch.equal(
        student.estimator[0].weight, torch.zeros_like(student.estimator[0].weight)
    )


def test_an_estimating_g1_force_policy_deploys_and_the_options_exclude_each_other(tmp_path):
    from simreal.deploy.g1.node import load_g1_policy
    from simreal.deploy.g1.observation import G1Observation

    env = make_env("g1-force", G1ForceConfig(actor_estimates_force=True), num_envs=1)
    plain = make_env("g1-force", G1ForceConfig(), num_envs=1)
    assert env.observation_layout == plain.observation_layout  # what the robot measures
    assert env.critic_observation_layout[-1] == ("torso_force_oracle", 3)
    groups = {name: tuple(idx) for name, idx in ACTION_GROUPS.items()}
    small = ModelConfig(actor_hidden=(16,), critic_hidden=(16,), estimator_hidden=(16,))
    model = ActorCritic(
        env.num_obs, env.num_critic_obs, groups, small, None, env.estimate_columns()
    )
    names = [list(term) for term in env.observation_layout]
    path = export_onnx(model, tmp_path / "student.onnx", g1_metadata(observation_names=names))
    observation = G1Observation(load_g1_policy(path))
    assert [t.name for t in observation.terms] == [n for n, _ in plain.observation_layout]
    with pytest.raises(ValueError, match="choose one"):
        G1ForceConfig(actor_observes_force=True, actor_estimates_force=True).validate()


def test_during_the_warm_up_the_actor_reads_the_truth_and_the_estimator_has_its_own_rate():
    from simreal.policies.config import PPOConfig
    from simreal.policies.ppo import PPO
    from simreal.policies.storage import RolloutStorage

    model = ActorCritic(6, 8, GROUPS, SMALL, estimate_columns=[6, 7])
    obs, critic = synthetic(64)
    model.update_normalizers(obs, critic)
    cfg = PPOConfig(estimator_warmup_iterations=3, estimator_learning_rate=2e-3)
    ppo = PPO(model, cfg, RolloutStorage(4, 64, 6, 8, 3, torch.device("cpu")), seed=0)
    assert [g["lr"] for g in ppo.optimizer.param_groups] == [1e-3, 1e-3, 2e-3]
    ppo.set_learning_rate(5e-4)  # the actor's (and critic's) schedule leaves it alone
    assert ppo.optimizer.param_groups[2]["lr"] == 2e-3
    truth = model.obs_normalizer.columns(critic[:, 6:], 6)
    with torch.no_grad():
        ppo.begin_iteration(2)
        told = model.distribution(obs, critic).mean
        torch.testing.assert_close(
            told, model.actor(torch.cat([model.actor_input(obs)[:, :6], truth], 1))
        )
        deployed = model.act_inference(obs)  # what is exported never reads the truth
        torch.testing.assert_close(deployed, model.distribution(obs).mean)
        assert not torch.allclose(told, deployed)
        ppo.begin_iteration(3)
        torch.testing.assert_close(model.distribution(obs, critic).mean, deployed)


def test_the_estimability_probe_builds_histories_within_episodes():
    """experiments/g1_force_estimability.py: the last K observations at each step never
    reach into the previous episode (a fresh buffer repeats the episode's first), and the
    mean pooling averages exactly those."""
    module = load_script("experiments/g1_force_estimability.py")
    obs = np.arange(6, dtype=np.float32).reshape(6, 1, 1)  # one simulation, one value
    done = np.array([False, False, True, False, False, False])[:, None]  # ends after t=2
    stacked = module.windows(obs, done, 3)[:, 0]
    np.testing.assert_array_equal(stacked[1], [0, 0, 1])
    np.testing.assert_array_equal(stacked[3], [3, 3, 3])  # a new episode began at t=3
    np.testing.assert_array_equal(stacked[5], [3, 4, 5])
    pooled = module.windows(obs, done, 3, "mean")[:, 0]
    np.testing.assert_allclose(pooled[4], [4, (3 + 3 + 4) / 3])


def test_the_cop_offset_target_moves_behind_under_a_backward_push():
    """`actor_estimates_cop`'s target: the quasi-static centre of pressure from the middle
    of the soles, heading frame; a backward push F at height h moves it F h / (m g) back."""
    from simreal.tasks.g1.fat2 import GRAVITY
    from simreal.tasks.g1_force.env import COP_OFFSET

    cfg = G1ForceConfig(actor_estimates_cop=True, randomize=False)
    env = make_env("g1-force", cfg, num_envs=2, seed=0)
    assert env.critic_observation_layout[-1] == ("cop_offset", 2)
    assert env.estimate_columns() == [148, 149] and env.num_obs == 93
    env.reset()
    env.external_force[:] = 0.0
    _, critic = env.observe()
    unloaded = COP_OFFSET.func(env)
    np.testing.assert_allclose(critic[:, -2:], unloaded, atol=1e-6)
    assert np.abs(unloaded).max() < 0.05  # standing: the CoM over the middle of the soles
    backward = -env.heading_rot()[:, :, 0] * 60.0  # 60 N along the robot's -x, world frame
    env.external_force[:, 0] = backward
    height = env.load_points()[:, 0, 2] - env.foot_pos[..., 2].mean(axis=1)
    shift = COP_OFFSET.func(env) - unloaded
    np.testing.assert_allclose(shift[:, 0], -60.0 * height / (env.mass * GRAVITY), rtol=1e-6)
    np.testing.assert_allclose(shift[:, 1], 0.0, atol=1e-9)


def test_a_warm_start_that_adds_terms_restarts_the_normalizer_count():
    """New columns start at mean 0, variance 1; the source's count would freeze them
    there, so a warm start that adds terms restarts it (and one that adds none keeps it)."""
    from simreal.policies.checkpoint import NEW_TERMS_COUNT, warm_start_state

    source = ActorCritic(6, 8, GROUPS, SMALL)
    obs, critic = synthetic(64)
    source.update_normalizers(obs, critic)
    state = source.state_dict()
    state["obs_normalizer.count"].fill_(1e7)
    state["critic_obs_normalizer.count"].fill_(1e7)
    student = ActorCritic(6, 8, GROUPS, SMALL, estimate_columns=[6, 7])
    cols = ([0, 1, 2, 3, 4, 5, -1, -1], list(range(8)))
    out = warm_start_state(student.state_dict(), state, (6, 8), (8, 8), cols)
    assert float(out["obs_normalizer.count"]) == NEW_TERMS_COUNT
    assert float(out["critic_obs_normalizer.count"]) == 1e7  # the critic's kept every term
    torch.testing.assert_close(out["obs_normalizer.mean"][:6], state["obs_normalizer.mean"])
    assert (out["obs_normalizer.var"][6:] == 1).all()
    same = warm_start_state(source.state_dict(), state, (6, 6), (8, 8))
    assert float(same["obs_normalizer.count"]) == 1e7


def test_a_teacher_told_the_force_is_g1_forces_expert_for_a_blind_student(oracle_run, tmp_path):
    """`task.teacher`: the expert action is the teacher's policy on the student's own
    (noisy) observation with the true torso force appended; a DAgger run distils it, and
    the student then evaluates without the teacher's file."""
    (teacher_ckpt,) = sorted((oracle_run / "checkpoints").glob("model_*.pt"))[-1:]
    cfg = G1ForceConfig(teacher=str(teacher_ckpt))
    env = make_env("g1-force", cfg, num_envs=3, seed=0)
    obs, _ = env.reset()
    env.step(np.zeros((3, 29)))
    env.external_force[:, 0] = [[-60.0, 0.0, 0.0], [0.0, 25.0, 0.0], [10.0, 0.0, -5.0]]
    obs, _ = env.observe()
    teacher = load_actor_critic(teacher_ckpt)
    told = np.concatenate([obs, TORSO_FORCE_ORACLE.func(env).astype(np.float32)], axis=1)
    with torch.no_grad():
        want = teacher.act_inference(torch.from_numpy(told)).numpy()
    np.testing.assert_allclose(env.expert_action(), want, atol=1e-6)
    # the force matters to the teacher: the same observation without it acts otherwise
    told[:, -3:] = 0.0
    with torch.no_grad():
        blind = teacher.act_inference(torch.from_numpy(told)).numpy()
    assert np.abs(blind - want).max() > 1e-4

    out = tmp_path / "student"
    sets = ["--set", f"task.teacher={teacher_ckpt}", "--set", "train.algorithm=dagger",
            "--set", "train.eval_episodes=2"]  # fmt: skip
    args = ["train", "g1-force", "--envs", "2", "--steps", "1", "--out", str(out)]
    assert main([*args, "--init-from", str(teacher_ckpt), *sets]) == 0
    (student,) = (out / "g1-force").iterdir()
    moved = tmp_path / "teacher_moved.pt"
    teacher_ckpt.rename(moved)
    try:
        report = tmp_path / "eval.json"
        assert main(["eval", str(student), "--episodes", "1", "--json", str(report)]) == 0
        assert "fall_rate" in json.loads(report.read_text())
    finally:
        moved.rename(teacher_ckpt)
    # a policy that was not told the force cannot teach
    (student_ckpt,) = sorted((student / "checkpoints").glob("model_*.pt"))[-1:]
    env = make_env("g1-force", G1ForceConfig(teacher=str(student_ckpt)), num_envs=1, seed=0)
    env.reset()
    with pytest.raises(ValueError, match="without actor_observes_force"):
        env.expert_action()


def test_teacher_options_are_checked_naming_what_is_wrong(tmp_path):
    with pytest.raises(ValueError, match="blind to the force"):
        G1ForceConfig(teacher="t.pt", actor_observes_force=True).validate()
    env = make_env("g1-force", G1ForceConfig(), num_envs=1, seed=0)
    env.reset()
    with pytest.raises(ValueError, match=r"task\.teacher=CHECKPOINT"):
        env.expert_action()
    missing = tmp_path / "nope.pt"
    env = make_env("g1-force", G1ForceConfig(teacher=str(missing)), num_envs=1, seed=0)
    env.reset()
    with pytest.raises(FileNotFoundError, match=r"nope\.pt"):
        env.expert_action()
