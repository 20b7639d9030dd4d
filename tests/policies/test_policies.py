"""PPO and its parts: the decoupled actor, normalization, GAE, determinism, checkpoints."""

from __future__ import annotations

import csv
import dataclasses
import os
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from simreal.cli import main
from simreal.policies import OnPolicyRunner, TrainConfig
from simreal.policies.checkpoint import (
    CheckpointError,
    atomic_write_bytes,
    latest_checkpoint,
    load_actor_critic,
    load_checkpoint,
    warm_start_state,
)
from simreal.policies.config import DAggerConfig, ModelConfig, PPOConfig
from simreal.policies.dagger import DAgger
from simreal.policies.models import ActorCritic, GroupedActor
from simreal.policies.normalizer import EmpiricalNormalization
from simreal.policies.ppo import PPO
from simreal.policies.storage import RolloutStorage
from simreal.tasks import make_env
from simreal.tasks.quad_hover import QuadHoverConfig
from simreal.tasks.quad_swarm import QuadSwarmConfig

GROUPS = {"lower": (0, 1, 2), "waist": (3,), "upper": (4, 5)}
N_OBS = 10
SMALL = ModelConfig(actor_hidden=(16, 16), critic_hidden=(16,))


pytestmark = pytest.mark.usefixtures("work_in_tmp")


def observations(n: int, seed: int = 0) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(n, N_OBS)).astype(np.float32))


def grouped_actor(groups=GROUPS) -> GroupedActor:
    torch.manual_seed(0)
    return GroupedActor(N_OBS, groups, SMALL)


def test_decoupled_actor_has_one_unshared_network_per_group():
    actor = grouped_actor()
    assert list(actor.nets) == ["lower", "waist", "upper"]
    storages = {
        name: {p.untyped_storage().data_ptr() for p in net.parameters()}
        for name, net in actor.nets.items()
    }
    identities = {name: {id(p) for p in net.parameters()} for name, net in actor.nets.items()}
    names = list(GROUPS)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not identities[a] & identities[b], (a, b)
            assert not storages[a] & storages[b], (a, b)
    for name, idx in GROUPS.items():
        net = actor.nets[name]
        assert net[0].in_features == N_OBS  # every group sees the whole observation
        assert net[-1].out_features == len(idx)
        assert actor.log_std[name].shape == (len(idx),)
    # The actor's parameters are exactly the three networks and the three log-stds.
    owned = set().union(*identities.values()) | {id(p) for p in actor.log_std.values()}
    assert {id(p) for p in actor.parameters()} == owned


def test_perturbing_the_waist_network_moves_only_action_slot_3():
    actor = grouped_actor()
    obs = observations(7)
    with torch.no_grad():
        before = actor(obs)
        actor.nets["waist"][-1].bias += 0.5
        after = actor(obs)
    change = (after - before).abs()
    assert torch.all(change[:, 3] > 0.49)
    torch.testing.assert_close(
        after[:, [0, 1, 2, 4, 5]], before[:, [0, 1, 2, 4, 5]], rtol=0, atol=0
    )


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
"""Where the learner can run here: the CUDA cases run where a GPU is (bench/gpu_checks.sh
runs them on one); CI has none."""


@pytest.mark.parametrize("device", DEVICES)
def test_stacked_groups_give_the_per_group_networks_outputs_and_gradients(device):
    """The batched evaluation of the group MLPs (one product per layer over stacked
    weights, narrow groups padded) equals running each MLP on its own, forward and
    backward, with the actions in the environment's order."""
    groups = {"lower": (5, 0, 2), "waist": (3,), "upper": (4, 1)}  # interleaved slots
    actor = grouped_actor(groups).to(device)
    obs = observations(33).to(device)
    outputs, grads = {}, {}
    for stack in (False, True):
        actor.stack = stack
        actor.zero_grad()
        out = actor(obs)
        (out * torch.arange(1.0, 7.0, device=device)).sum().backward()
        outputs[stack] = out.detach()
        grads[stack] = {
            n: p.grad.clone() for n, p in actor.named_parameters() if p.grad is not None
        }
    torch.testing.assert_close(outputs[True], outputs[False], rtol=1e-6, atol=1e-6)
    assert grads[True].keys() == grads[False].keys() and len(grads[True]) > 6
    for name in grads[False]:
        torch.testing.assert_close(grads[True][name], grads[False][name], rtol=1e-5, atol=1e-6)
    assert actor.can_stack and actor.stack is True
    assert "stacked_slots" not in actor.state_dict()  # checkpoints keep their keys


def test_each_group_has_its_own_action_std():
    actor = grouped_actor()
    std = actor.std()
    torch.testing.assert_close(std, torch.full((6,), SMALL.init_std))
    with torch.no_grad():
        actor.log_std["waist"].fill_(float(np.log(3.0)))
    expected = torch.full((6,), SMALL.init_std)
    expected[3] = 3.0
    torch.testing.assert_close(actor.std(), expected)


def test_max_std_bounds_the_std_and_stops_its_gradient_above():
    cfg = ModelConfig(actor_hidden=(16, 16), critic_hidden=(16,), init_std=0.3, max_std=0.4)
    actor = GroupedActor(N_OBS, GROUPS, cfg)
    with torch.no_grad():
        actor.log_std["waist"].fill_(float(np.log(3.0)))
    std = actor.std()
    assert std[3].item() == pytest.approx(0.4) and std[0].item() == pytest.approx(0.3)
    std.sum().backward()
    assert actor.log_std["waist"].grad.abs().max() == 0.0
    assert actor.log_std["lower"].grad.abs().min() > 0.0
    with pytest.raises(ValueError, match="max_std"):
        ModelConfig(init_std=0.5, max_std=0.4).validate()


def test_non_contiguous_groups_land_in_their_slots():
    actor = grouped_actor({"a": (0, 2), "b": (1,)})
    with torch.no_grad():
        for name, bias in (("a", [10.0, 20.0]), ("b", [30.0])):
            actor.nets[name][-1].weight.zero_()
            actor.nets[name][-1].bias.copy_(torch.tensor(bias))
        actor.log_std["a"].copy_(torch.log(torch.tensor([2.0, 4.0])))
        actor.log_std["b"].copy_(torch.log(torch.tensor([3.0])))
        out = actor(observations(4))
    torch.testing.assert_close(out, torch.tensor([[10.0, 30.0, 20.0]]).expand(4, 3))
    torch.testing.assert_close(actor.std(), torch.tensor([2.0, 3.0, 4.0]))


def test_groups_must_cover_every_action_once():
    with pytest.raises(ValueError, match="exactly once"):
        GroupedActor(N_OBS, {"a": (0, 1), "b": (1, 2)}, SMALL)
    with pytest.raises(ValueError, match="exactly once"):
        GroupedActor(N_OBS, {"a": (0,), "b": (2,)}, SMALL)


def test_coupled_arch_builds_one_network_for_all_actions():
    coupled = ActorCritic(N_OBS, 12, GROUPS, ModelConfig(arch="coupled"))
    assert list(coupled.actor.nets) == ["all"]
    assert coupled.actor.nets["all"][-1].out_features == 6
    assert coupled.actor.std().shape == (6,)
    assert coupled.act_inference(observations(3)).shape == (3, 6)
    decoupled = ActorCritic(N_OBS, 12, GROUPS, ModelConfig(arch="decoupled"))
    assert list(decoupled.actor.nets) == list(GROUPS)


def test_a_loss_on_slot_3_only_reaches_the_waist_network():
    torch.manual_seed(0)
    model = ActorCritic(N_OBS, 12, GROUPS, SMALL)
    obs = observations(8)
    dist = model.distribution(obs)
    actions = dist.mean.detach() + 0.3
    loss = -dist.log_prob(actions)[:, 3].sum()
    loss.backward()
    for name, net in model.actor.nets.items():
        grads = [p.grad for p in net.parameters()]
        if name == "waist":
            assert all(g is not None and g.abs().sum() > 0 for g in grads)
        else:
            assert all(g is None or torch.all(g == 0) for g in grads), name
    assert model.actor.log_std["waist"].grad.abs().sum() > 0
    for name in ("lower", "upper"):
        grad = model.actor.log_std[name].grad
        assert grad is None or torch.all(grad == 0)


def test_empirical_normalization_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    batches = [
        rng.normal(loc=[1.0, -3.0, 100.0], scale=[0.5, 2.0, 10.0], size=(n, 3)).astype(np.float32)
        for n in (5, 64, 1, 200, 17)
    ]
    norm = EmpiricalNormalization(3)
    for batch in batches:
        norm.update(torch.from_numpy(batch))
    seen = np.concatenate(batches).astype(np.float64)
    np.testing.assert_allclose(norm.mean.numpy(), seen.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(norm.var.numpy(), seen.var(axis=0), rtol=1e-4)
    assert float(norm.count) == len(seen)
    x = torch.from_numpy(batches[1])
    expected = (seen[5:69] - seen.mean(0)) / np.sqrt(seen.var(0) + norm.eps)
    np.testing.assert_allclose(norm(x).numpy(), np.clip(expected, -10, 10), rtol=1e-4, atol=1e-4)


def test_the_normalizer_variance_floor_comes_from_the_model_config():
    """model.normalizer_var_floor reaches both normalizers; at 1.0 a near-constant column
    (a mostly-zero contact force) is never amplified, where the default floor swings it
    by up to 10; a floor <= 0 is refused naming the field."""
    sparse = torch.zeros(1000, N_OBS)
    sparse[::50, 0] = 1.0  # on 2 % of the steps
    outputs = {}
    for floor in (0.01, 1.0):
        model = ActorCritic(N_OBS, 12, GROUPS, ModelConfig(normalizer_var_floor=floor))
        assert model.obs_normalizer.eps == model.critic_obs_normalizer.eps == floor
        model.obs_normalizer.update(sparse)
        outputs[floor] = float(
            model.obs_normalizer(sparse[:1])[0, 0] - model.obs_normalizer(sparse[1:2])[0, 0]
        )
    assert outputs[0.01] > 5.0 and outputs[1.0] <= 1.0
    with pytest.raises(ValueError, match="normalizer_var_floor"):
        ModelConfig(normalizer_var_floor=0.0).validate()


def test_a_warm_start_folds_dropped_columns_under_the_source_models_variance_floor():
    """Dropping observation columns folds what they fed the first layer at 0 into its
    bias, normalized as the source normalized them (its own floor, here 1.0)."""
    torch.manual_seed(0)
    cfg = dataclasses.replace(SMALL, normalizer_var_floor=1.0)
    source = ActorCritic(N_OBS + 2, 14, GROUPS, cfg)
    source.obs_normalizer.update(torch.randn(64, N_OBS + 2) * 0.3 + 0.5)
    source.critic_obs_normalizer.update(torch.randn(64, 14) * 0.3 + 0.5)
    target = ActorCritic(N_OBS, 12, GROUPS, cfg)
    state = warm_start_state(
        target.state_dict(), source.state_dict(), (N_OBS + 2, N_OBS), (14, 12),
        source_var_floor=1.0,
    )  # fmt: skip
    target.load_state_dict(state)
    x = torch.randn(5, N_OBS)
    with torch.no_grad():
        got = target.distribution(x).mean
        want = source.distribution(torch.cat([x, torch.zeros(5, 2)], dim=1)).mean
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


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


ITERATION_STEPS = 16 * 32


def quad_runner(seed: int, log_dir: Path, iterations: int = 2, env=None) -> OnPolicyRunner:
    cfg = TrainConfig(num_envs=16, max_env_steps=iterations * ITERATION_STEPS, seed=seed)
    env = env or make_env("quad-hover", QuadHoverConfig(), num_envs=16, seed=seed)
    return OnPolicyRunner(env, cfg, log_dir, eval_env=None, reward_terms=["hover"])


def trained_parameters(seed: int, log_dir: Path) -> dict[str, torch.Tensor]:
    runner = quad_runner(seed, log_dir)
    runner.learn()
    assert runner.iteration == 2
    return {k: v.clone() for k, v in runner.model.state_dict().items()}


def test_training_is_deterministic_given_the_seed(tmp_path):
    first = trained_parameters(0, tmp_path / "a")
    second = trained_parameters(0, tmp_path / "b")
    other = trained_parameters(1, tmp_path / "c")
    assert first.keys() == second.keys() == other.keys()
    for key in first:
        torch.testing.assert_close(first[key], second[key], rtol=0, atol=0, msg=key)
    assert any(not torch.equal(first[k], other[k]) for k in first)
    initial = quad_runner(0, tmp_path / "d").model.state_dict()
    assert any(not torch.equal(first[k], initial[k]) for k in first)  # it did learn


def no_temporary_files(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.startswith(".") or "tmp" in p.name]


def test_checkpoints_are_written_atomically(tmp_path):
    runner = quad_runner(0, tmp_path / "run")
    runner.learn()
    checkpoints = runner.checkpoint_dir
    assert sorted(p.name for p in checkpoints.iterdir()) == ["model_000002.pt"]
    assert no_temporary_files(tmp_path) == []
    state = load_checkpoint(checkpoints / "model_000002.pt")
    assert state["iteration"] == 2 and state["env_steps"] == 2 * ITERATION_STEPS
    model = load_actor_critic(checkpoints / "model_000002.pt")
    obs = torch.from_numpy(runner.env.reset()[0])
    torch.testing.assert_close(model.act_inference(obs), runner.model.act_inference(obs))


def test_a_failed_atomic_write_keeps_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "model_000001.pt"
    atomic_write_bytes(path, b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_latest_checkpoint_orders_by_iteration_not_by_name(tmp_path):
    for iteration in (9, 10, 100):
        (tmp_path / f"model_{iteration}.pt").write_bytes(b"")
    (tmp_path / "notes.pt").write_bytes(b"")
    assert latest_checkpoint(tmp_path).name == "model_100.pt"
    assert latest_checkpoint(tmp_path / "missing") is None


def metrics_rows(run: Path) -> tuple[list[str], list[dict[str, str]]]:
    text = (run / "metrics.csv").read_text()
    return text.splitlines(), list(csv.DictReader(text.splitlines()))


def test_resume_continues_the_run_and_appends_to_its_metrics(tmp_path, capsys):
    argv = ["train", "quad-hover", "--envs", "16", "--steps", str(2 * ITERATION_STEPS)]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    (run,) = (tmp_path / "quad-hover").iterdir()
    lines_before, rows_before = metrics_rows(run)
    assert [r["iteration"] for r in rows_before] == ["1", "2"]
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--steps", str(4 * ITERATION_STEPS)]) == 0
    assert str(run) in capsys.readouterr().out
    lines_after, rows_after = metrics_rows(run)
    assert lines_after[: len(lines_before)] == lines_before  # appended, not rewritten
    assert sum(line.startswith("iteration,") for line in lines_after) == 1
    assert [r["iteration"] for r in rows_after] == ["1", "2", "3", "4"]
    steps = [int(r["env_steps"]) for r in rows_after]
    assert steps == [ITERATION_STEPS * i for i in (1, 2, 3, 4)]
    wall = [float(r["wall_time_s"]) for r in rows_after]
    assert wall == sorted(wall)
    latest = latest_checkpoint(run / "checkpoints")
    assert latest.name == "model_000004.pt"
    assert load_checkpoint(latest)["iteration"] == 4
    assert no_temporary_files(run) == []


def test_metrics_csv_takes_the_task_episode_outcomes_when_episodes_first_end(tmp_path):
    from simreal.policies.logger import TrainingLogger

    logger = TrainingLogger(tmp_path, ["alive"], ("force_cap_n",))
    logger.log({"iteration": 1, "env_steps": 10, "reward/alive": 0.5})  # no episode ended
    logger.log({"iteration": 2, "env_steps": 20, "episode/fall_rate": 0.25})
    logger.log({"iteration": 3, "env_steps": 30, "episode/hold_drift_rate": 1.0})
    logger.close()
    lines, rows = metrics_rows(tmp_path)
    header = lines[0].split(",")
    assert header[-2:] == ["episode/fall_rate", "episode/hold_drift_rate"]
    assert [r["iteration"] for r in rows] == ["1", "2", "3"] and rows[0]["reward/alive"] == "0.5"
    assert [r["episode/fall_rate"] for r in rows] == ["", "0.25", ""]
    assert [r["episode/hold_drift_rate"] for r in rows] == ["", "", "1.0"]
    resumed = TrainingLogger(tmp_path, ["alive"], ("force_cap_n",), resumed_at=3)
    resumed.log({"iteration": 4, "env_steps": 40, "episode/fall_rate": 0.0})
    resumed.close()
    assert metrics_rows(tmp_path)[0][:4] == lines and no_temporary_files(tmp_path) == []


def test_the_learner_runs_where_train_device_says_and_a_run_moves_on_resume(tmp_path, capsys):
    """`--device cpu` puts the model and the rollout storage on the CPU and records the
    choice; a resume may move the run (checkpoints are device-independent: saved state
    loads onto the CPU first). On this machine auto is the CPU; `--device cuda` without
    CUDA is refused before anything is written."""
    import torch

    from simreal import training

    argv = ["train", "quad-hover", "--envs", "16", "--steps", str(ITERATION_STEPS)]
    assert main([*argv, "--out", str(tmp_path), "--device", "cpu"]) == 0
    (run,) = (tmp_path / "quad-hover").iterdir()
    assert yaml.safe_load((run / "config.yaml").read_text())["train"]["device"] == "cpu"
    runner = training.resume_run(run, steps=2 * ITERATION_STEPS, minutes=None, device="auto")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert runner.device.type == expected
    assert {p.device.type for p in runner.model.parameters()} == {expected}
    assert runner.ppo.storage.obs.device.type == expected
    if not torch.cuda.is_available():
        capsys.readouterr()
        assert main([*argv, "--out", str(tmp_path / "gpu"), "--device", "cuda"]) == 2
        assert "train.device=cuda" in capsys.readouterr().err
        assert not (tmp_path / "gpu").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_gpu_trained_run_resumes_on_the_cpu_and_exports(tmp_path):
    """The other direction of the test above: trained with the learner on the GPU, the
    run resumes with `--device cpu` and its ONNX export runs on ONNX Runtime's CPU."""
    from simreal import training
    from simreal.evaluation import export_run

    argv = ["train", "quad-hover", "--envs", "16", "--steps", str(ITERATION_STEPS)]
    assert main([*argv, "--out", str(tmp_path), "--device", "cuda"]) == 0
    (run,) = (tmp_path / "quad-hover").iterdir()
    runner = training.resume_run(run, steps=2 * ITERATION_STEPS, minutes=None, device="cpu")
    assert {p.device.type for p in runner.model.parameters()} == {"cpu"}
    assert export_run(run).exists()


def test_host_to_device_shares_the_arrays_on_the_cpu():
    from simreal.policies.runner import HostToDevice

    obs, critic = np.ones((4, 3), np.float32), np.zeros((4, 5), np.float32)
    a, b = HostToDevice(torch.device("cpu"))(obs, critic)
    obs[0, 0] = 7.0
    assert a[0, 0].item() == 7.0 and b.shape == (4, 5)


def test_a_run_killed_after_its_last_checkpoint_resumes_with_one_row_per_iteration(tmp_path):
    """A kill (no chance to save) leaves metrics rows past the last checkpoint; the resumed
    run trains those iterations again and its metrics.csv keeps only the new rows."""
    argv = ["train", "quad-hover", "--envs", "16", "--steps", str(3 * ITERATION_STEPS)]
    argv += ["--set", "train.checkpoint_interval=1", "--out", str(tmp_path)]
    assert main(argv) == 0
    (run,) = (tmp_path / "quad-hover").iterdir()
    (run / "checkpoints" / "model_000003.pt").unlink()  # killed before saving iteration 3
    _, rows_before = metrics_rows(run)
    assert [r["iteration"] for r in rows_before] == ["1", "2", "3"]
    assert main(["train", "--resume", str(run), "--steps", str(4 * ITERATION_STEPS)]) == 0
    _, rows_after = metrics_rows(run)
    assert [r["iteration"] for r in rows_after] == ["1", "2", "3", "4"]
    assert rows_after[:2] == rows_before[:2]
    assert float(rows_after[2]["wall_time_s"]) <= float(rows_after[3]["wall_time_s"])
    assert no_temporary_files(run) == []


class StopOnStep:
    """A VecEnv that, on its `calls`-th step, raises KeyboardInterrupt (Ctrl-C mid-rollout)
    or, with `sigterm`, sends this process a real SIGTERM (a scheduler stopping the run);
    it counts the steps taken after that."""

    def __init__(self, env, calls: int, sigterm: bool = False):
        self.env, self.calls, self.sigterm, self.steps, self.after = env, calls, sigterm, 0, 0

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self):
        return self.env.reset()

    def step(self, action):
        self.steps += 1
        if self.steps == self.calls:
            if not self.sigterm:
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGTERM)
        self.after += self.steps > self.calls
        return self.env.step(action)


def test_keyboard_interrupt_leaves_a_loadable_latest_checkpoint(tmp_path):
    env = StopOnStep(make_env("quad-hover", QuadHoverConfig(), num_envs=16), calls=32 + 10)
    runner = quad_runner(0, tmp_path / "run", iterations=5, env=env)
    with pytest.raises(KeyboardInterrupt):
        runner.learn()
    assert runner.stopped_by == "interrupted"
    latest = latest_checkpoint(runner.checkpoint_dir)
    assert latest is not None and latest.name == "model_000001.pt"
    assert load_checkpoint(latest)["iteration"] == 1
    model = load_actor_critic(latest)
    for key, value in runner.model.state_dict().items():
        torch.testing.assert_close(model.state_dict()[key], value, rtol=0, atol=0, msg=key)
    assert no_temporary_files(tmp_path) == []
    _, rows = metrics_rows(runner.log_dir)
    assert [r["iteration"] for r in rows] == ["1"]
    again = quad_runner(0, tmp_path / "run", iterations=5)
    assert again.resume() == latest and again.iteration == 1


def test_sigterm_during_the_periodic_evaluation_stops_at_once_with_a_checkpoint(tmp_path):
    cfg = TrainConfig(num_envs=16, max_env_steps=5 * ITERATION_STEPS, seed=0, eval_interval=1)
    evaluation = make_env("quad-hover", QuadHoverConfig(evaluation=True), num_envs=4, seed=1)
    eval_env = StopOnStep(evaluation, calls=5, sigterm=True)
    env = make_env("quad-hover", QuadHoverConfig(), num_envs=16, seed=0)
    runner = OnPolicyRunner(env, cfg, tmp_path / "run", eval_env=eval_env, reward_terms=["hover"])
    before = signal.getsignal(signal.SIGTERM)
    handlers_while_saving = []
    save = runner.save

    def save_and_look():
        handlers_while_saving.append(signal.getsignal(signal.SIGTERM))
        return save()

    runner.save = save_and_look
    with pytest.raises(KeyboardInterrupt):
        runner.learn()
    assert eval_env.after == 0 and runner.stopped_by == "interrupted"
    # a scheduler repeating its SIGTERM must not cut the checkpoint being written short
    assert handlers_while_saving == [signal.SIG_IGN]
    assert signal.getsignal(signal.SIGTERM) is before  # the trainer's handler is gone again
    assert load_checkpoint(latest_checkpoint(runner.checkpoint_dir))["iteration"] == 1


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


def test_a_checkpoint_with_one_adam_group_resumes_into_actor_and_critic_groups(tmp_path):
    runner = quad_runner(0, tmp_path / "old", iterations=1)
    runner.learn()
    params = list(runner.model.parameters())
    legacy = torch.optim.Adam(params, lr=runner.ppo.learning_rate)
    legacy.load_state_dict(
        {
            "state": runner.ppo.optimizer.state_dict()["state"],
            "param_groups": [{**legacy.state_dict()["param_groups"][0]}],
        }
    )
    path = latest_checkpoint(runner.checkpoint_dir)
    state = load_checkpoint(path)
    state["optimizer"] = legacy.state_dict()
    torch.save(state, path)
    resumed = quad_runner(0, tmp_path / "old", iterations=2)
    resumed.resume()
    actor, critic = resumed.ppo.optimizer.param_groups
    assert len(actor["params"]) + len(critic["params"]) == len(params)
    moments = resumed.ppo.optimizer.state[critic["params"][0]]["exp_avg"]
    torch.testing.assert_close(
        moments, runner.ppo.optimizer.state[params[len(actor["params"])]]["exp_avg"]
    )


def test_a_resumed_run_carries_on_at_its_curriculum_level_and_logs_it(tmp_path):
    def swarm_runner() -> OnPolicyRunner:
        env = make_env("quad-swarm", QuadSwarmConfig(num_drones=2), num_envs=4, seed=0)
        cfg = TrainConfig(num_envs=4, max_env_steps=1, seed=0)  # one iteration
        return OnPolicyRunner(env, cfg, tmp_path / "run", eval_env=None, reward_terms=[])

    runner = swarm_runner()
    runner.env.level = 2  # as if training had unlocked two densities
    runner.learn()
    lines, rows = metrics_rows(runner.log_dir)
    assert "curriculum/density_high" in lines[0].split(",")
    assert float(rows[-1]["curriculum/density_high"]) == runner.env.density_high == 0.4
    resumed = swarm_runner()
    assert resumed.env.level == 0
    resumed.resume()
    assert resumed.env.level == 2


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


def test_checkpoints_also_come_on_a_wall_clock_interval(tmp_path):
    rare = TrainConfig(num_envs=16, max_env_steps=3 * ITERATION_STEPS, checkpoint_interval=1000)
    env = make_env("quad-hover", QuadHoverConfig(), num_envs=16, seed=0)
    runner = OnPolicyRunner(env, rare, tmp_path / "rare", eval_env=None)
    runner.learn()  # 60 s never passes: only the checkpoint at the end
    assert sorted(p.name for p in runner.checkpoint_dir.iterdir()) == ["model_000003.pt"]
    often = TrainConfig(
        num_envs=16, max_env_steps=3 * ITERATION_STEPS, checkpoint_interval=1000,
        checkpoint_every_s=1e-9,
    )  # fmt: skip
    runner = OnPolicyRunner(env, often, tmp_path / "often", eval_env=None)
    runner.learn()
    names = sorted(p.name for p in runner.checkpoint_dir.iterdir())
    assert names == ["model_000001.pt", "model_000002.pt", "model_000003.pt"]


@pytest.mark.parametrize("seconds", [0.0, -1.0, float("nan"), float("inf")])
def test_checkpoint_interval_in_seconds_must_be_positive_and_finite(seconds):
    with pytest.raises(ValueError, match="checkpoint_every_s"):
        TrainConfig(checkpoint_every_s=seconds).validate()


def test_resume_falls_back_past_a_corrupt_checkpoint_and_says_so(tmp_path, capsys):
    cfg = TrainConfig(num_envs=16, max_env_steps=3 * ITERATION_STEPS, checkpoint_interval=1)
    env = make_env("quad-hover", QuadHoverConfig(), num_envs=16, seed=0)
    OnPolicyRunner(env, cfg, tmp_path, eval_env=None).learn()
    folder = tmp_path / "checkpoints"
    (folder / "model_000003.pt").write_bytes(b"torn")
    state = torch.load(folder / "model_000002.pt", weights_only=True)
    del state["optimizer"], state["generator"]
    torch.save(state, folder / "model_000002.pt")
    capsys.readouterr()
    runner = OnPolicyRunner(env, cfg, tmp_path, eval_env=None)
    assert runner.resume().name == "model_000001.pt" and runner.iteration == 1
    err = capsys.readouterr().err
    assert "model_000003.pt: not a readable simreal checkpoint" in err
    assert "model_000002.pt: checkpoint lacks optimizer, generator" in err
    assert "resuming from model_000001.pt" in err
    (folder / "model_000001.pt").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"no readable checkpoint.*model_000003"):
        OnPolicyRunner(env, cfg, tmp_path, eval_env=None).resume()


def test_every_missing_key_is_named(tmp_path):
    path = tmp_path / "model_000001.pt"
    torch.save({"iteration": 1}, path)
    with pytest.raises(CheckpointError, match=r"lacks model, model_spec, model_cfg$"):
        load_actor_critic(path)


class _RunsCode:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_checkpoint_cannot_run_code_when_loaded(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "model_000001.pt"
    torch.save({"model": _RunsCode(marker)}, path)
    with pytest.raises(CheckpointError, match="not a readable simreal checkpoint"):
        load_checkpoint(path)
    assert not marker.exists()


def test_new_checkpoints_hold_plain_data_and_old_ones_still_load(tmp_path):
    runner = quad_runner(0, tmp_path / "run", iterations=1)
    runner.learn()
    path = runner.checkpoint_dir / "model_000001.pt"
    raw = torch.load(path, weights_only=True)  # no allowances at all
    assert raw["model_cfg"] == dataclasses.asdict(runner.cfg.model)
    old = dict(raw, model_cfg=runner.cfg.model)  # as written before: the object pickled
    torch.save(old, tmp_path / "model_000002.pt")
    assert load_checkpoint(tmp_path / "model_000002.pt")["model_cfg"] == runner.cfg.model
    model = load_actor_critic(tmp_path / "model_000002.pt")
    obs = torch.from_numpy(runner.env.reset()[0])
    torch.testing.assert_close(model.act_inference(obs), runner.model.act_inference(obs))


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


def test_the_rollout_runs_pytorch_on_its_own_thread_count(tmp_path, monkeypatch):
    """`rollout_torch_threads` while collecting, `torch_threads` for the update: PyTorch's
    spinning threads otherwise take the cores the physics threads need next."""
    runner = quad_runner(0, tmp_path, iterations=2)
    runner.cfg.torch_threads, runner.cfg.rollout_torch_threads = 3, 1
    calls: list[tuple[str, int]] = []
    set_threads = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: calls.append(("set", n)))
    update = runner.algorithm.update

    def tracked_update(*args, **kwargs):
        calls.append(("update", 0))
        return update(*args, **kwargs)

    monkeypatch.setattr(runner.algorithm, "update", tracked_update)
    try:
        runner.learn()
    finally:
        set_threads(1)
    sets = [n for kind, n in calls if kind == "set"]
    assert sets == [1, 3, 1, 3]  # per iteration: the rollout's count, then the update's
    assert [kind for kind, _ in calls] == ["set", "set", "update"] * 2
