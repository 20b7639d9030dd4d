"""The `simreal` command: listing, argument errors, and train -> export -> eval end to end."""

from __future__ import annotations

import argparse
import csv
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
import yaml
from _repo import REPO
from onnx import TensorProto, helper, numpy_helper

from simreal.cli import build_parser, main
from simreal.config import to_plain
from simreal.policies.logger import CSV_FIELDS
from simreal.tasks.quad_hover import QuadHoverConfig

EVAL_KEYS = ("return_mean", "return_std", "episode_length_mean", "final_position_error_m")


pytestmark = pytest.mark.usefixtures("work_in_tmp")


def printed_json(text: str) -> dict:
    return json.loads(text[text.index("{") : text.rindex("}") + 1])


def test_tasks_lists_quad_hover(capsys):
    assert main(["tasks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(re.match(r"quad-hover\s+\S", line) for line in lines)


@pytest.mark.slow
def test_python_m_simreal_tasks(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "simreal", "tasks"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert any(re.match(r"quad-hover\s+\S", line) for line in result.stdout.splitlines())


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: simreal" in capsys.readouterr().out


def test_unknown_task_exits_2_and_lists_the_registered_ones(tmp_path, capsys):
    assert main(["train", "no-such-task", "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "no-such-task" in err
    assert "quad-hover" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("task.episode_s=abc", "task.episode_s"),
        ("train.ppo.gamma=2", "train.ppo.gamma"),
        ("task.action_rpm_scale=0", "action_rpm_scale"),
        ("task.no_such_field=1", "no_such_field"),
        ("train.num_envs=many", "train.num_envs"),
    ],
)
def test_a_bad_override_exits_2_naming_the_field(tmp_path, capsys, override, named):
    argv = ["train", "quad-hover", "--envs", "4", "--steps", "128", "--set", override]
    assert main([*argv, "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert named in err
    assert err.startswith("simreal train: error:")
    assert not (tmp_path / "runs").exists()  # nothing started


def test_a_run_records_the_command_it_was_given_quoted(tmp_path):
    """config.yaml's command is the argv `main` parsed (not the test runner's), quoted, so a
    `--set` value with spaces splits back into one word: a recorded run can be replayed
    (experiments/g1_walk_chain.py reads its stages' commands)."""
    out = tmp_path / "runs"
    argv = ["train", "quad-hover", "--envs", "4", "--steps", "64", "--out", str(out)]
    argv += ["--set", "task.target=[0.0, 0.0, 1.0]"]
    assert main(argv) == 0
    (run,) = (out / "quad-hover").iterdir()
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert shlex.split(config["command"]) == ["simreal", *argv]


def test_eval_of_something_that_is_not_a_policy_exits_2(tmp_path, capsys):
    assert main(["eval", str(tmp_path / "nothing-here")]) == 2
    assert "nothing-here" in capsys.readouterr().err


def test_eval_refuses_an_onnx_file_without_simreal_metadata(tmp_path, capsys):
    weights = numpy_helper.from_array(np.zeros((22, 4), dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["obs", "w"], ["actions"])],
        "plain",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 22])],
        [helper.make_tensor_value_info("actions", TensorProto.FLOAT, ["batch", 4])],
        initializer=[weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "plain.onnx"
    onnx.save(model, path)
    assert main(["eval", str(path), "--episodes", "1"]) == 2
    captured = capsys.readouterr()
    assert "not a simreal policy" in captured.err
    assert str(path) in captured.err
    assert captured.out == ""


def test_train_export_eval_end_to_end(tmp_path, capsys):
    out = tmp_path / "runs"
    argv = ["train", "quad-hover", "--envs", "64", "--steps", "20000", "--out", str(out)]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    (run,) = (out / "quad-hover").iterdir()
    assert re.fullmatch(r"\d{8}-\d{6}-0", run.name)
    assert stdout.rstrip().endswith(str(run))
    summary = printed_json(stdout)
    assert summary["env_steps"] == 20480  # ten iterations of 64 x 32 steps
    assert summary["stopped_by"] == "step budget 20000"
    assert summary["best_eval_return"] is not None  # evaluated at iteration 10

    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["task"] == "quad-hover" and config["engine"] == "mjbatch"
    assert config["train"]["num_envs"] == 64
    assert config["train"]["max_env_steps"] == 20000
    assert config["task_config"] == to_plain(QuadHoverConfig())
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["model_000010.pt"]
    with (run / "metrics.csv").open() as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert tuple(reader.fieldnames[: len(CSV_FIELDS)]) == CSV_FIELDS
    assert "reward/hover" in reader.fieldnames
    assert [int(r["iteration"]) for r in rows] == list(range(1, 11))
    for r in rows:  # collection splits into physics, task layer and policy
        split = [float(r[k]) for k in ("time_physics_s", "time_task_s", "time_policy_s")]
        assert split[0] > 0.0 and min(split) >= 0.0
        assert sum(split) == pytest.approx(float(r["time_collect_s"]), abs=5e-4)
    assert (run / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    events = list(run.glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0].stat().st_size > 0

    assert main(["export", str(run)]) == 0
    onnx_path = run / "policy.onnx"
    assert capsys.readouterr().out.strip() == str(onnx_path)
    props = {p.key: p.value for p in onnx.load(onnx_path).metadata_props}
    assert props["task"] == "quad-hover" and props["robot"] == "crazyflie"

    json_file = tmp_path / "metrics.json"
    assert main(["eval", str(run), "--episodes", "2", "--json", str(json_file)]) == 0
    from_checkpoint = printed_json(capsys.readouterr().out)
    assert json.loads(json_file.read_text()) == from_checkpoint
    assert main(["eval", str(onnx_path), "--episodes", "2"]) == 0
    from_onnx = printed_json(capsys.readouterr().out)
    for metrics in (from_checkpoint, from_onnx):
        assert metrics["episodes"] == 2
        for key in EVAL_KEYS:
            assert np.isfinite(metrics[key]), key
        # Deterministic policy, identical starts: equal returns up to rounding (a batched
        # matrix product may round identical rows differently, ~1e-8, and 240 steps of
        # flight amplify that a little).
        assert metrics["return_std"] <= 1e-4 * abs(metrics["return_mean"]) + 1e-6
    assert from_onnx["return_mean"] == pytest.approx(from_checkpoint["return_mean"], rel=1e-4)
    assert from_onnx["episode_length_mean"] == from_checkpoint["episode_length_mean"]


def test_eval_is_repeatable(tmp_path, capsys):
    """Two evaluations of the same checkpoint print the same numbers."""
    out = tmp_path / "runs"
    assert main(["train", "quad-hover", "--envs", "8", "--steps", "256", "--out", str(out)]) == 0
    (run,) = (out / "quad-hover").iterdir()
    capsys.readouterr()
    results = []
    for _ in range(2):
        assert main(["eval", str(run), "--episodes", "3", "--seed", "4"]) == 0
        results.append(printed_json(capsys.readouterr().out))
    assert results[0] == results[1]
    assert Path(results[0]["policy"]) == run
    (ckpt,) = (run / "checkpoints").iterdir()  # one checkpoint of a run: the same policy
    assert main(["eval", str(ckpt), "--episodes", "3", "--seed", "4"]) == 0
    from_file = printed_json(capsys.readouterr().out)
    assert from_file["return_mean"] == results[0]["return_mean"]


def test_eval_set_changes_the_task_config(tmp_path, capsys):
    policy = str(REPO / "results/quad-track/policy.onnx")
    code = main(["eval", policy, "--episodes", "1", "--set", "task.eval_kind=circle"])
    assert code == 0
    circle = json.loads(capsys.readouterr().out)
    code = main(["eval", policy, "--episodes", "1"])
    figure8 = json.loads(capsys.readouterr().out)
    assert circle["position_rmse_m"] != figure8["position_rmse_m"]
    assert main(["eval", policy, "--set", "task.no_such_field=1"]) == 2
    assert "no_such_field" in capsys.readouterr().err


def test_eval_video_writes_an_mp4_of_the_first_episode(tmp_path, capsys):
    import imageio.v2 as imageio

    policy = str(REPO / "results/quad-hover/policy.onnx")
    video = tmp_path / "hover.mp4"
    args = ["eval", policy, "--episodes", "1", "--video", str(video), "--set", "task.episode_s=0.5"]
    assert main(args) == 0
    metrics = json.loads(capsys.readouterr().out)
    frames = imageio.mimread(video)
    assert len(frames) == metrics["video_frames"] >= 10
    assert frames[0].shape[:2] == (480, 640)
    assert not np.array_equal(frames[0], frames[-1])  # the drone climbs


def test_export_takes_a_named_checkpoint(tmp_path, capsys):
    """`simreal export RUN/checkpoints/model_N.pt` exports that checkpoint, not the latest
    (a run's checkpoint picked by validation may be an earlier one)."""
    out = tmp_path / "runs"
    assert main(["train", "quad-hover", "--envs", "8", "--steps", "256", "--out", str(out)]) == 0
    (run,) = (out / "quad-hover").iterdir()
    (latest,) = (run / "checkpoints").iterdir()
    state = torch.load(latest, weights_only=False)
    state["model"] = {k: torch.zeros_like(v) for k, v in state["model"].items()}
    earlier = run / "checkpoints" / "model_000000.pt"
    torch.save(state, earlier)
    capsys.readouterr()
    assert main(["export", str(earlier), "--onnx", str(tmp_path / "earlier.onnx")]) == 0
    assert main(["export", str(run), "--onnx", str(tmp_path / "latest.onnx")]) == 0

    def weights(path: Path) -> list[np.ndarray]:
        return [numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer]

    zeroed, trained = weights(tmp_path / "earlier.onnx"), weights(tmp_path / "latest.onnx")
    assert sum(np.count_nonzero(w) for w in zeroed) < sum(np.count_nonzero(w) for w in trained)
    stray = tmp_path / "model_000010.pt"
    stray.write_bytes(latest.read_bytes())
    assert main(["export", str(stray)]) != 0
    assert "RUN/checkpoints/" in capsys.readouterr().err


def _parsers(parser: argparse.ArgumentParser, path: str = "simreal"):
    """Every parser of the command tree, with the command words that reach it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{path} {name}")


def test_every_option_and_argument_of_every_command_has_help():
    missing = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, parser in _parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()
    ]
    assert missing == []


def test_help_lists_every_command_on_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    summaries = {c.dest: c.help for c in sub._choices_actions}
    assert set(summaries) == set(sub.choices)
    for name, summary in summaries.items():
        assert any(re.fullmatch(rf"\s+{name}\s+{re.escape(summary)}", line) for line in lines), name


def test_out_names_a_folder_in_every_command():
    """`--out` is a folder wherever it is spelled so; file outputs are named for what they
    hold (--onnx, --overlay, --json, --video, --plot)."""
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if "--out" in action.option_strings:
                assert action.metavar == "DIR", path


def test_replay_engine_takes_the_same_choices_as_train_and_eval(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["replay", str(tmp_path), "--resim", "--engine", "no-such-engine"])
    assert "invalid choice: 'no-such-engine'" in capsys.readouterr().err
    choices = {
        path: action.choices
        for path, parser in _parsers(build_parser())
        for action in parser._actions
        if "--engine" in action.option_strings
    }
    assert set(choices) == {"simreal train", "simreal eval", "simreal replay"}
    assert all(tuple(c) == tuple(choices["simreal train"]) for c in choices.values())


def test_a_run_starts_from_python_with_a_train_request(tmp_path):
    """The CLI's helpers take typed requests: no parsed command line needed."""
    from simreal.training import TrainRequest, new_run

    request = TrainRequest(
        task="quad-hover",
        envs=8,
        steps=256,
        seed=3,
        out=tmp_path,
        overrides=("train.ppo.gamma=0.98",),
    )
    runner, run_dir = new_run(request)
    runner.learn()
    assert run_dir.parent == tmp_path / "quad-hover" and run_dir.name.endswith("-3")
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["train"]["ppo"]["gamma"] == 0.98
    assert config["train"]["num_envs"] == 8
    assert config["command"].startswith("TrainRequest(task='quad-hover'")
    assert runner.env_steps == 256
    with pytest.raises(ValueError, match="task name or --gym"):
        TrainRequest()


def test_bench_without_a_name_lists_every_benchmark_on_one_line(capsys):
    bench = REPO / "bench"
    names = sorted(p.stem for p in bench.glob("*.py") if not p.name.startswith("_"))
    assert main(["bench"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == names
    assert all(len(line.split()) > 2 for line in lines)  # a summary beside each name


def test_bench_with_an_unknown_name_lists_the_available_ones(capsys):
    assert main(["bench", "g1_pull_chain"]) == 2  # an experiment, not a benchmark
    err = capsys.readouterr().err
    assert "unknown benchmark 'g1_pull_chain'" in err and "scale" in err
