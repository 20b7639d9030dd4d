"""The training loop (OnPolicyRunner) and its checkpoints: determinism, resume, atomic
writes, interrupts, devices and what a checkpoint may hold."""

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
)
from simreal.tasks import make_env
from simreal.tasks.quad_hover import QuadHoverConfig
from simreal.tasks.quad_swarm import QuadSwarmConfig

pytestmark = pytest.mark.usefixtures("work_in_tmp")


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


def test_checkpoints_hold_plain_data_and_a_pickled_object_is_refused(tmp_path):
    runner = quad_runner(0, tmp_path / "run", iterations=1)
    runner.learn()
    path = runner.checkpoint_dir / "model_000001.pt"
    raw = torch.load(path, weights_only=True)  # no allowances at all
    assert raw["model_cfg"] == dataclasses.asdict(runner.cfg.model)
    assert load_checkpoint(path)["model_cfg"] == runner.cfg.model
    pickled = dict(raw, model_cfg=runner.cfg.model)  # the config as an object: code to run
    torch.save(pickled, tmp_path / "model_000002.pt")
    with pytest.raises(CheckpointError, match="not a readable simreal checkpoint"):
        load_checkpoint(tmp_path / "model_000002.pt")


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
