"""bench/gym_suite.py's bookkeeping: pooled statistics over seeds and episodes, the ratio
table, resuming from run files, candidate settings reaching simreal's runs (a short
Pendulum run; the suite's own runs take hours: not a test)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _repo import load_script

gym_suite = load_script("bench/gym_suite.py")


def run(impl, seed, mean, std, wall, task="Walker2d-v5"):
    return {
        "task": task,
        "impl": impl,
        "seed": seed,
        "eval_return_mean": mean,
        "eval_return_std": std,
        "train_wall_s": wall,
        "curve": [[1000, mean / 2], [2000, mean]],
    }


def test_pooled_mean_and_std_over_every_episode():
    # seed A: episodes {1, 3}; seed B: {5, 7} -> all four: mean 4, population std sqrt(5)
    runs = [run("sb3", 0, 2.0, 1.0, 1.0), run("sb3", 1, 6.0, 1.0, 1.0)]
    mean, std = gym_suite.pooled(runs)
    assert mean == pytest.approx(4.0)
    assert std == pytest.approx(math.sqrt(5.0))


def test_summary_ratios_and_table(tmp_path):
    runs = {
        ("Walker2d-v5", "simreal"): [run("simreal", 0, 3000.0, 10.0, 500.0)],
        ("Walker2d-v5", "sb3"): [run("sb3", 0, 2000.0, 20.0, 1000.0)],
    }
    summary = gym_suite.summarize(runs, ["Walker2d-v5"])
    row = summary["Walker2d-v5"]
    assert row["return_ratio"] == pytest.approx(1.5)
    assert row["wall_ratio"] == pytest.approx(0.5)
    assert row["paired_seeds"] == [0]
    text = gym_suite.table(summary, 1_000_000, "python bench/gym_suite.py")
    assert "| Walker2d-v5 | 0 | 3000 ± 10 [3000] | 2000 ± 20 [2000] | 1.50 |" in text
    gym_suite.plot("Walker2d-v5", runs, tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_side_by_side_wall_ratio_uses_only_pairs_trained_at_once():
    sim = [run("simreal", s, 1.0, 0.0, wall) for s, wall in ((0, 400.0), (1, 600.0), (2, 100.0))]
    sb3 = [run("sb3", s, 1.0, 0.0, wall) for s, wall in ((0, 800.0), (1, 600.0), (2, 1000.0))]
    for r in sim[:2] + sb3[:2]:
        r["side_by_side"] = True  # seed 2 ran one after the other: not a pair
    row = gym_suite.summarize({("Ant-v5", "simreal"): sim, ("Ant-v5", "sb3"): sb3}, ["Ant-v5"])
    row = row["Ant-v5"]
    assert row["side_by_side_seeds"] == [0, 1]
    assert row["side_by_side_wall_ratio"] == pytest.approx(0.75)  # mean of 0.5 and 1.0
    assert "| 0.75 [0,1] |" in gym_suite.table({"Ant-v5": row}, 1000, "cmd")


def test_report_only_rebuilds_from_run_files(tmp_path):
    files = tmp_path / "runs"
    files.mkdir()
    for r in (run("simreal", 0, 10.0, 1.0, 5.0), run("sb3", 0, 20.0, 1.0, 10.0)):
        (files / f"{r['task']}_{r['impl']}_s0.json").write_text(json.dumps(r))
    assert gym_suite.main(["--tasks", "Walker2d-v5", "--out", str(tmp_path), "--report-only"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["tasks"]["Walker2d-v5"]["return_ratio"] == pytest.approx(0.5)
    assert (tmp_path / "table.md").read_text().count("| Walker2d-v5 |") == 1


def test_running_mean_matches_simreals_100_episode_mean():
    assert gym_suite.running_mean([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]


def test_simreal_runs_take_candidate_settings(tmp_path):
    """`--simreal-set`: the settings reach `simreal train` (its run config) and the run file
    records them."""
    import yaml

    result = gym_suite.run_simreal(
        "Pendulum-v1", 0, 512, 1, tmp_path, ("train.ppo.normalize_returns=false",)
    )
    assert result["simreal_set"] == ["train.ppo.normalize_returns=false"]
    config = yaml.safe_load((Path(result["run_dir"]) / "config.yaml").read_text())
    assert config["train"]["ppo"]["normalize_returns"] is False
    assert result["env_steps"] >= 512 and result["eval_episodes"] == 1
