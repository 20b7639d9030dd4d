"""`simreal eval --log` and `simreal replay`: a logged evaluation episode, plotted, rendered and
re-simulated; re-simulating a simulated log in the same engine reproduces it exactly."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest
import torch
from rosbags.rosbag2 import Reader

from simreal.cli import main
from simreal.config import to_plain
from simreal.deploy.logs import read_rollout, record_episode, resimulate
from simreal.policies.config import ModelConfig
from simreal.policies.export import export_onnx
from simreal.policies.models import ActorCritic
from simreal.tasks import make_env
from simreal.tasks.quad_hover import QuadHoverConfig

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def printed_json(text: str) -> dict:
    return json.loads(text[text.index("{") : text.rindex("}") + 1])


@pytest.fixture(scope="module")
def onnx_policy(tmp_path_factory):
    """An untrained quad-hover policy, exported as `simreal export` would."""
    torch.manual_seed(0)
    cfg = QuadHoverConfig()
    env = make_env("quad-hover", cfg, 1)
    model = ActorCritic(env.num_obs, env.num_critic_obs, env.action_groups, ModelConfig())
    meta = {"task": "quad-hover", "gym": False, **env.deployment_metadata()}
    meta["task_config"] = to_plain(cfg)
    return export_onnx(model, tmp_path_factory.mktemp("policy") / "policy.onnx", meta)


@pytest.fixture(scope="module")
def eval_log(onnx_policy, tmp_path_factory):
    """(log directory, eval metrics) of `simreal eval POLICY --episodes 2 --log DIR`."""
    log = tmp_path_factory.mktemp("eval") / "episode"
    metrics_file = log.with_name("metrics.json")
    argv = ["eval", str(onnx_policy), "--episodes", "2", "--log", str(log)]
    assert main([*argv, "--json", str(metrics_file)]) == 0
    return log, json.loads(metrics_file.read_text())


def short_episode_env(**changes) -> tuple:
    changes = {"evaluation": True, "episode_s": 1.0, **changes}
    cfg = dataclasses.replace(QuadHoverConfig(), **changes)
    return make_env("quad-hover", cfg, 1), cfg


def hover_policy(obs: np.ndarray) -> np.ndarray:
    """Climbs towards the target height, with a little roll to move sideways."""
    climb = np.clip(2.0 * obs[:, 2:3] - 0.5 * obs[:, 14:15], -1.0, 1.0)
    return (climb + np.array([0.02, 0.0, -0.02, 0.0])).astype(np.float32)


def test_eval_log_writes_a_bag_of_the_first_episode(eval_log):
    log, metrics = eval_log
    assert metrics["log"] == str(log)
    assert sorted(p.name for p in log.iterdir()) == ["episode_0.mcap", "metadata.yaml"]
    assert not log.with_name("episode.partial").exists()
    with Reader(log) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
    steps = counts["/lowcmd"]
    assert steps == metrics["episode_length_mean"]  # the same deterministic episode
    for topic in ("/joint_states", "/imu", "/base_pose", "/base_twist", "/wrench"):
        assert counts[topic] == steps
    for topic in ("/policy/observation", "/policy/action", "/loop_timing"):
        assert counts[topic] == steps
    meta = read_rollout(log).meta
    assert (meta.task, meta.robot, meta.engine, meta.source) == (
        "quad-hover",
        "crazyflie",
        "mjbatch",
        "sim",
    )
    assert meta.task_config["evaluation"] is True
    assert meta.joint_names == ("motor0", "motor1", "motor2", "motor3")
    assert len(meta.initial_state["qpos"]) == 7


def test_eval_log_refuses_a_directory_with_files(onnx_policy, tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    assert main(["eval", str(onnx_policy), "--episodes", "1", "--log", str(taken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simreal eval: error:") and str(taken) in err
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]


def test_replay_prints_a_summary_and_plots(eval_log, tmp_path, capsys):
    log, metrics = eval_log
    png = tmp_path / "rollout.png"
    assert main(["replay", str(log), "--plot", str(png)]) == 0
    report = printed_json(capsys.readouterr().out)
    steps = int(metrics["episode_length_mean"])
    assert report["messages"]["/joint_states"] == steps
    assert report["control_steps"] == steps
    assert report["duration_s"] == pytest.approx((steps - 1) / 30.0)
    assert report["loop_period_mean_s"] == pytest.approx(1 / 30.0)
    assert report["loop_period_p99_s"] == pytest.approx(1 / 30.0)
    assert 0 < report["compute_mean_s"] <= report["compute_p99_s"] < 0.1
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_resim_of_an_unmodified_log_has_no_gap(eval_log, tmp_path, capsys):
    log, _ = eval_log
    out = tmp_path / "gap.json"
    assert main(["replay", str(log), "--resim", "--json", str(out)]) == 0
    printed = printed_json(capsys.readouterr().out)
    gap = json.loads(out.read_text())["resim"]
    assert printed["resim"] == gap
    assert gap["engine"] == "mjbatch"
    assert gap["steps"] > 20 and gap["compared_samples"] == gap["steps"] + 1
    assert gap["base_position_rmse_m"] < 1e-6
    assert gap["base_position_max_error_m"] < 1e-6
    assert max(gap["joint_velocity_rmse"].values()) < 1e-6
    assert "diverged_at_s" not in gap


def test_resim_of_a_heavier_drone_shows_a_gap(tmp_path):
    """A log of a drone 30 % heavier than the task's model replays far from its log."""
    env, cfg = short_episode_env()
    mass = env.engine.model_field("body_mass")
    mass[:, 1] *= 1.3
    env.engine.commit_model()
    log = record_episode(
        env,
        hover_policy,
        tmp_path / "heavy",
        task="quad-hover",
        task_config=to_plain(cfg),
        engine="mjbatch",
    )
    nominal, _ = short_episode_env()
    gap = resimulate(nominal, read_rollout(log)).report
    assert gap["base_position_rmse_m"] > 0.05
    assert gap["base_position_rmse_xyz_m"][2] > 10 * gap["base_position_rmse_xyz_m"][0]

    same_env, _ = short_episode_env()
    same = record_episode(
        same_env,
        hover_policy,
        tmp_path / "same",
        task="quad-hover",
        task_config=to_plain(cfg),
        engine="mjbatch",
    )
    assert resimulate(nominal, read_rollout(same)).report["base_position_rmse_m"] < 1e-9


def test_replay_video_renders_the_logged_poses(tmp_path, capsys):
    """Every logged pose a frame by default; with --video-fps the pose logged at or
    before each frame's time (a long log becomes a short render); a rate that is not
    positive is refused, naming the option."""
    env, cfg = short_episode_env(episode_s=0.3)
    log = record_episode(
        env,
        hover_policy,
        tmp_path / "short",
        task="quad-hover",
        task_config=to_plain(cfg),
        engine="mjbatch",
    )
    video = tmp_path / "motion.mp4"
    assert main(["replay", str(log), "--video", str(video)]) == 0
    report = printed_json(capsys.readouterr().out)
    assert report["video_frames"] == report["messages"]["/base_pose"] == 9
    assert video.stat().st_size > 1000
    poses = read_rollout(log).series["base_position"].t
    assert main(["replay", str(log), "--video", str(video), "--video-fps", "10"]) == 0
    report = printed_json(capsys.readouterr().out)
    expected = int(np.floor((poses[-1] - poses[0]) * 10 + 1e-9)) + 1
    assert report["video_frames"] == expected < len(poses)
    assert main(["replay", str(log), "--video", str(video), "--video-fps", "0"]) == 2
    assert "--video-fps 0" in capsys.readouterr().err


def test_replay_of_a_truncated_bag_names_the_file(eval_log, tmp_path, capsys):
    log, _ = eval_log
    broken = tmp_path / "episode"
    shutil.copytree(log, broken)
    mcap_file = broken / "episode_0.mcap"
    mcap_file.write_bytes(mcap_file.read_bytes()[:5000])
    assert main(["replay", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simreal replay: error:")
    assert f"{mcap_file}: truncated before its first complete chunk" in err


def test_replay_of_a_directory_that_is_no_log(tmp_path, capsys):
    assert main(["replay", str(tmp_path)]) == 2
    assert f"{tmp_path}: has no metadata.yaml" in capsys.readouterr().err
