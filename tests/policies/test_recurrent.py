"""A recurrent actor (model.memory_size): acting, replaying its memory in updates (PPO and
DAgger), export with its state, the runtime carrying that state, and its resets."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
import torch

from simreal.cli import main
from simreal.deploy.runtime import OnnxPolicy, PolicyMetadataError, reset_policy
from simreal.policies import OnPolicyRunner, TrainConfig
from simreal.policies.checkpoint import warm_start_state
from simreal.policies.config import DAggerConfig, ModelConfig, PPOConfig
from simreal.policies.dagger import DAgger
from simreal.policies.export import export_onnx
from simreal.policies.models import ActorCritic
from simreal.policies.ppo import PPO
from simreal.policies.storage import RolloutStorage
from simreal.tasks.overlap import make_overlapped_env
from simreal.tasks.quad_hover import QuadHoverConfig

GROUPS = {"lower": (0, 1, 2), "waist": (3,), "upper": (4, 5)}
N_OBS = 10
MEMORY = ModelConfig(actor_hidden=(32,), critic_hidden=(16,), memory_size=16)
METADATA: dict[str, object] = {
    "task": "toy-task",
    "robot": "toy",
    "observation_names": [["joint_pos", 6], ["base_ang_vel", 3], ["phase", 1]],
    "action_groups": {name: list(idx) for name, idx in GROUPS.items()},
    "joint_names": [f"j{i}" for i in range(6)],
    "default_joint_pos": [0.0] * 6,
    "action_scale": [0.25] * 6,
    "kp": [40.0] * 6,
    "kd": [1.0] * 6,
    "control_dt": 0.02,
    "sim_dt": 0.005,
    "decimation": 4,
    "action_clip": 1.0,
}


pytestmark = pytest.mark.usefixtures("work_in_tmp")


class _Step:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def _ended(n: int, rows) -> _Step:
    terminated = np.zeros(n, dtype=bool)
    terminated[list(rows)] = True
    none = np.zeros(n, dtype=bool)
    return _Step(
        reward=np.ones(n, dtype=np.float32),
        terminated=terminated,
        truncated=none,
        final_critic_obs=None,
    )


def _obs(n: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(n, N_OBS)).astype(np.float32))


def recurrent_model(seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(N_OBS, N_OBS, GROUPS, MEMORY)


def test_a_feed_forward_call_on_a_recurrent_actor_is_refused():
    model = recurrent_model()
    with pytest.raises(TypeError, match=r"memory_size=16.*step"):
        model.act_inference(_obs(2, 0))
    with pytest.raises(ValueError, match="memory_size"):
        ActorCritic(N_OBS, N_OBS, GROUPS, MEMORY, estimate_columns=(0,))


def test_the_memory_carries_what_an_earlier_step_saw():
    model = recurrent_model()
    obs = _obs(2, 0)
    h = model.initial_state(2)
    first, h1 = model.step(obs, h)
    again, _ = model.step(obs, h1)
    assert not torch.allclose(first, again)  # the same observation, another memory


def test_ppo_updates_replay_the_memory_exactly_as_it_acted_across_episode_ends():
    """With the normalizer fixed during the rollout, every minibatch's replayed means equal
    the means the actor acted with, step for step, across episode ends inside the rollout
    and across rollouts (each starts from the memory the last one left)."""
    model = recurrent_model()
    cfg = PPOConfig(num_steps_per_env=6, num_minibatches=2, normalizer_update="rollout")
    ppo = PPO(model, cfg, RolloutStorage(6, 8, N_OBS, N_OBS, 6), seed=0)
    for rollout in range(2):
        with torch.inference_mode():
            for t in range(6):
                obs = _obs(8, 10 * rollout + t)
                ppo.act(obs, obs)
                ppo.record(_ended(8, [t, (t + 3) % 8]))
            ppo.finish_rollout(obs)
        batches = list(ppo.storage.minibatches(2, torch.Generator().manual_seed(rollout)))
        assert [b.h0.shape for b in batches] == [(4, 16), (4, 16)]
        assert batches[0].obs.shape == (6 * 4, N_OBS) and batches[0].dones.shape == (6, 4)
        if rollout:
            assert ppo.storage.h0.abs().sum() > 0  # memory handed over from the last rollout
        for b in batches:
            replayed = model.sequence_distribution(*b.sequences())
            torch.testing.assert_close(replayed.mean, b.old_mean, rtol=0, atol=1e-6)
        losses = ppo.update()
        assert losses["kl"] > 0
    # an episode end zeroes that simulation's memory before its next step
    assert torch.all(ppo.memory[[5, 0]] == 0) and ppo.memory[1].abs().sum() > 0


def _cue_rollout(dagger: DAgger, num_envs: int, steps: int, episode: int, seed: int):
    """Episodes of `episode` steps; the cue (+-1 per simulation) shows in observation
    column 0 at an episode's first step only; the expert acts the cue at every step."""
    rng = np.random.default_rng(seed)
    cue = torch.zeros(num_envs, 1)
    with torch.inference_mode():
        for t in range(steps):
            obs = torch.from_numpy(rng.normal(scale=0.3, size=(num_envs, N_OBS)).astype(np.float32))
            if t % episode == 0:
                cue = torch.from_numpy(
                    rng.choice([-1.0, 1.0], size=(num_envs, 1)).astype(np.float32)
                )
                obs[:, :1] = cue
            else:
                obs[:, :1] = 0.0
            dagger.act(obs, obs, cue.expand(num_envs, 6))
            ended = range(num_envs) if t % episode == episode - 1 else []
            dagger.record(_ended(num_envs, ended))


def _cue_error(model: ActorCritic, seed: int) -> float:
    """Mean squared action error after the cue has gone (episode steps 1-3)."""
    rng = np.random.default_rng(seed)
    cue = torch.from_numpy(rng.choice([-1.0, 1.0], size=(64, 1)).astype(np.float32))
    h = model.initial_state(64) if model.recurrent else None
    errors = []
    with torch.inference_mode():
        for t in range(4):
            obs = torch.from_numpy(rng.normal(scale=0.3, size=(64, N_OBS)).astype(np.float32))
            obs[:, :1] = cue if t == 0 else 0.0
            if h is None:
                action = model.act_inference(obs)
            else:
                action, h = model.step(obs, h)
            if t:
                errors.append(float((action - cue).square().mean()))
    return float(np.mean(errors))


@pytest.mark.parametrize("memory_size", [16, 0])
def test_dagger_teaches_a_recurrent_actor_what_a_feed_forward_one_cannot_learn(memory_size):
    """The expert's action depends on a cue seen only at the episode's start: the
    recurrent student learns it from trajectories (episode ends inside the rollouts); a
    feed-forward student, trained the same way, can only guess."""
    torch.manual_seed(0)
    cfg = ModelConfig(actor_hidden=(32,), critic_hidden=(16,), memory_size=memory_size)
    model = ActorCritic(N_OBS, N_OBS, GROUPS, cfg)
    dagger_cfg = DAggerConfig(
        steps_per_iteration=8, gradient_steps=40, batch_size=128, buffer_rows=4 * 8 * 32,
        learning_rate=3e-3, expert_iterations=0, action_noise=0.0,
    )  # fmt: skip
    ppo = PPO(model, PPOConfig(), RolloutStorage(1, 32, N_OBS, N_OBS, 6), seed=0)
    dagger = DAgger(model, dagger_cfg, ppo.optimizer, N_OBS, 6, seed=0, num_envs=32)
    before = _cue_error(model, 99)
    for iteration in range(12):
        _cue_rollout(dagger, 32, 8, episode=4, seed=iteration)
        dagger.update()
    after = _cue_error(model, 99)
    if memory_size:
        assert dagger._trajectories.filled == 4  # the buffer holds the latest 4 rollouts
        assert after < 0.1 < before
    else:
        assert after > 0.7  # a guess: the cue is +-1, the best blind answer 0 scores 1


def test_the_onnx_policy_carries_and_resets_the_memory_as_training_does(tmp_path):
    model = recurrent_model()
    path = export_onnx(model, tmp_path / "r.onnx", METADATA)
    policy = OnnxPolicy(path)
    assert policy.metadata.memory_size == 16
    assert json.loads(policy.raw_metadata["memory_size"]) == 16
    h = model.initial_state(3)
    for t in range(5):
        obs = _obs(3, t)
        with torch.inference_mode():
            expected, h = model.step(obs, h)
        np.testing.assert_allclose(policy(obs.numpy()), expected.numpy(), atol=1e-5)
        done = np.array([t == 2, False, t == 3])
        reset_policy(policy, done)
        h = h * torch.from_numpy(~done).float().unsqueeze(1)
    policy.reset()  # a new start: every row forgets
    with torch.inference_mode():
        fresh, _ = model.step(_obs(3, 7), model.initial_state(3))
    np.testing.assert_allclose(policy(_obs(3, 7).numpy()), fresh.numpy(), atol=1e-5)
    one = policy(_obs(1, 8).numpy()[0])  # one robot: (n_obs,) in, (n_actions,) out
    assert one.shape == (6,)


def test_a_graph_whose_memory_differs_from_its_metadata_is_refused(tmp_path):
    path = export_onnx(recurrent_model(), tmp_path / "r.onnx", METADATA)
    proto = onnx.load(path)
    for entry in proto.metadata_props:
        if entry.key == "memory_size":
            entry.value = "8"
    onnx.save(proto, tmp_path / "bad.onnx")
    with pytest.raises(PolicyMetadataError, match=r"memory_size=8.*memory of 16"):
        OnnxPolicy(tmp_path / "bad.onnx")


def test_a_feed_forward_policy_warm_starts_a_recurrent_one_that_acts_as_it_did():
    """The memory's columns of the actor's first layer start at zero: the new actor acts
    exactly as its source, whatever it remembers, until training moves them."""
    torch.manual_seed(0)
    source = ActorCritic(N_OBS, N_OBS, GROUPS, ModelConfig(actor_hidden=(32,), critic_hidden=(16,)))
    source.obs_normalizer.update(_obs(64, 1) * 3 + 1)
    target = recurrent_model(seed=5)
    weights = warm_start_state(
        target.state_dict(), source.state_dict(), (N_OBS, N_OBS), (N_OBS, N_OBS)
    )
    target.load_state_dict(weights)
    obs = _obs(4, 2)
    with torch.inference_mode():
        _, h = target.step(_obs(4, 3), target.initial_state(4))  # some memory
        action, _ = target.step(obs, h)
        torch.testing.assert_close(action, source.act_inference(obs))


def test_a_recurrent_quad_hover_policy_trains_resumes_exports_and_evaluates(tmp_path, capsys):
    """Through the CLI: PPO with memory, a resume, the export (obs, h) and an evaluation of
    the ONNX file that matches the checkpoint's (the runtime carries the memory)."""
    run = tmp_path / "runs"
    common = ["--envs", "16", "--set", "train.model.memory_size=8", "--set",
              "train.ppo.num_minibatches=4", "--out", str(run)]  # fmt: skip
    assert main(["train", "quad-hover", "--steps", "1024", *common]) == 0
    (run_dir,) = (run / "quad-hover").iterdir()
    assert main(["train", "--resume", str(run_dir), "--steps", "2048"]) == 0
    assert main(["export", str(run_dir)]) == 0
    policy = OnnxPolicy(run_dir / "policy.onnx")
    assert policy.metadata.memory_size == 8
    out = {}
    for name, source in (("onnx", run_dir / "policy.onnx"), ("torch", run_dir)):
        out[name] = tmp_path / f"{name}.json"
        assert main(["eval", str(source), "--episodes", "4", "--json", str(out[name])]) == 0
    onnx_metrics, torch_metrics = (json.loads(out[k].read_text()) for k in ("onnx", "torch"))
    assert onnx_metrics["episodes"] == 4
    assert onnx_metrics["return_mean"] == pytest.approx(torch_metrics["return_mean"], rel=1e-3)


def test_a_recurrent_runner_acting_group_by_group_replays_each_groups_memory(tmp_path):
    """train.env_groups > 1 (each group acts as soon as its own step ends): every group's
    memory rows are carried, stored and replayed as its own (checked at each update,
    before it moves the actor)."""
    torch.manual_seed(0)
    cfg = TrainConfig(num_envs=8, max_env_steps=8 * 32 * 2, env_groups=2,
                      model=ModelConfig(memory_size=8),
                      ppo=PPOConfig(normalizer_update="rollout"))  # fmt: skip
    env = make_overlapped_env("quad-hover", QuadHoverConfig(), 8, 2, seed=0)
    runner = OnPolicyRunner(env, cfg, tmp_path)
    assert runner._acts_per_group()
    storage, model, update = runner.ppo.storage, runner.model, runner.ppo.update
    checked = []

    def check_then_update(*args, **kwargs):
        with torch.inference_mode():
            for b in storage.minibatches(2, torch.Generator().manual_seed(0)):
                replayed = model.sequence_distribution(*b.sequences()).mean
                torch.testing.assert_close(replayed, b.old_mean, rtol=0, atol=1e-6)
        checked.append(float(storage.h0.abs().sum()))
        return update(*args, **kwargs)

    runner.ppo.update = check_then_update
    runner.learn()
    assert len(checked) == 2 and checked[0] == 0 and checked[1] > 0


def test_the_deploy_node_starts_a_recurrent_policy_with_an_empty_memory(tmp_path):
    """Entering ACTIVE (the first start, or again after damping) zeroes what the policy
    remembers of the last time it ran."""
    from _g1_policy import export_g1_policy

    from simreal.deploy.g1.node import DeployConfig, G1Node, load_g1_policy
    from simreal.deploy.g1.safety import Mode

    node = G1Node(
        load_g1_policy(export_g1_policy(tmp_path / "g1.onnx", memory_size=8)), DeployConfig()
    )
    assert node.policy.metadata.memory_size == 8
    node.policy(np.ones(node.meta.n_obs, dtype=np.float32))
    assert node.policy.memory.h.shape == (1, 8) and np.abs(node.policy.memory.h).sum() > 0
    node._on_enter(Mode.ACTIVE)
    assert node.policy.memory.h is None
