"""experiments/convert_configs.py: old saved task configs rewritten once in today's form
(the loaders have no shims for them), and every committed one already is."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import yaml

from simreal.config import from_plain, to_plain
from simreal.tasks.lane_keep import LaneKeepConfig
from simreal.tasks.quad_hover import QuadHoverConfig

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "experiments" / "convert_configs.py"


def load():
    spec = importlib.util.spec_from_file_location("convert_configs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_per_step_weights_become_per_second_with_the_same_step_weights():
    m = load()
    old = {"control_hz": 30, "reward_weights": {"hover": 1.0, "ang_vel": -0.002}}
    new = m.convert_task_config("quad-hover", old)
    assert new["reward_weights"] == {"hover": 30.0, "ang_vel": -0.06}
    assert new["reward_weights_unit"] == "per_second"
    cfg = from_plain(QuadHoverConfig, new, "task.")
    assert {k: w * cfg.control_dt for k, w in cfg.reward_weights.items()} == old["reward_weights"]
    # without control_hz the config ran at the class's default rate (lane-keep: 20 Hz)
    assert m.convert_task_config("lane-keep", {"reward_weights": {"failure": -20.0}})[
        "reward_weights"
    ] == {"failure": -400.0}


def test_a_lane_keep_config_from_before_the_detector_becomes_ground_truth():
    """Its policy read the exact lane state, so it is evaluated on what it trained on."""
    m = load()
    plain = to_plain(LaneKeepConfig())
    del plain["perception"]
    new = m.convert_task_config("lane-keep", plain)
    assert list(new).index("perception") == list(to_plain(LaneKeepConfig())).index("perception")
    cfg = from_plain(LaneKeepConfig, new, "task.")
    assert cfg.perception.lane_state_source == "ground_truth"


def test_a_converted_run_config_is_rewritten_and_then_left_alone(tmp_path):
    m = load()
    path = tmp_path / "run" / "config.yaml"
    path.parent.mkdir()
    config = {"task": "quad-hover", "task_config": {"reward_weights": {"hover": 1.0}}}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    assert m.main([str(tmp_path), "--check"]) == 1
    assert m.main([str(tmp_path)]) == 0
    text = path.read_text()
    assert yaml.safe_load(text)["task_config"]["reward_weights"] == {"hover": 30.0}
    assert m.main([str(tmp_path), "--check"]) == 0 and path.read_text() == text
    (tmp_path / "other.yaml").write_text(json.dumps({"not": "a run"}))
    assert m.main([str(tmp_path), "--check"]) == 0


def test_every_committed_config_is_in_todays_form():
    """results/: run configs and exported policies' metadata (nothing left to convert)."""
    assert load().main([str(REPO / "results"), "--check"]) == 0
