"""experiments/g1_pull_checkpoints.py: the sweep statistics that put a pick's gap in context."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _repo import REPO

pytestmark = pytest.mark.slow  # each test runs the script as a process

SCRIPT = REPO / "experiments" / "g1_pull_checkpoints.py"


def row(name: str, backward: float, forward: float, falls: float) -> dict:
    evaluation = {"backward_n": backward, "forward_n": forward, "fall_rate": falls}
    return {"checkpoint": name, "validation": evaluation, "evaluation": evaluation}


def run(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=True, cwd=REPO
    )
    return json.loads(done.stdout)


def test_sweep_of_a_report(tmp_path):
    """--sweep-of reads a report and gives each metric's mean and population std over the
    swept checkpoints."""
    report = tmp_path / "checkpoints.json"
    rows = [row("model_000100.pt", 180.0, 150.0, 0.0), row("model_000200.pt", 80.0, 130.0, 0.5)]
    report.write_text(json.dumps({"checkpoints": rows}))
    sweep = run("--sweep-of", str(report))["sweep"]
    assert sweep["checkpoints"] == 2
    assert sweep["backward_n"] == pytest.approx({"mean": 130.0, "std": 50.0})
    assert sweep["forward_n"] == pytest.approx({"mean": 140.0, "std": 10.0})
    assert sweep["fall_rate"] == pytest.approx({"mean": 0.25, "std": 0.25})


def test_sweep_of_several_reports_pools_their_checkpoints(tmp_path):
    """One actor's seeds: --sweep-of with several reports is the sweep of all their rows."""
    first, second = tmp_path / "s0.json", tmp_path / "s1.json"
    first.write_text(json.dumps({"checkpoints": [row("model_000100.pt", 180.0, 150.0, 0.0)]}))
    second.write_text(json.dumps({"checkpoints": [row("model_000100.pt", 80.0, 130.0, 0.5)]}))
    sweep = run("--sweep-of", str(first), str(second))["sweep"]
    assert sweep["checkpoints"] == 2
    assert sweep["backward_n"] == pytest.approx({"mean": 130.0, "std": 50.0})


def test_picks_of_eval_jsons(tmp_path):
    """--picks-of: the declared comparison, the mean over seeds of the picked policies'
    peak forces with the seeds' sample std, and the falls counted over all episodes."""
    paths = []
    for seed, (backward, forward, fall_rate) in enumerate(
        [(170.0, 130.0, 0.05), (180.0, 140.0, 0.0)]
    ):
        path = tmp_path / f"eval-{seed}.json"
        path.write_text(
            json.dumps(
                {
                    "episodes": 40,
                    "fall_rate": fall_rate,
                    "peak_pull_force_backward_n": backward,
                    "peak_pull_force_forward_n": forward,
                }
            )
        )
        paths.append(str(path))
    picks = run("--picks-of", *paths)["picks"]
    assert picks["seeds"] == 2
    assert picks["backward_n"] == pytest.approx({"mean": 175.0, "std": 50.0**0.5})
    assert picks["forward_n"] == pytest.approx({"mean": 135.0, "std": 50.0**0.5})
    assert (picks["falls"], picks["episodes"]) == (2, 80)


def test_run_or_report_is_required():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode != 0 and "RUN is required" in done.stderr


def test_picks_of_names_a_file_that_is_not_a_pull_eval(tmp_path):
    bad = tmp_path / "hover-eval.json"
    bad.write_text(json.dumps({"episodes": 10, "fall_rate": 0.0}))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--picks-of", str(bad)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode != 0
    assert str(bad) in done.stderr and "peak_pull_force_backward_n" in done.stderr


def test_pick_of_a_report_with_a_fall_rate_limit(tmp_path):
    """--pick-of picks again from a report's rows: the strongest checkpoint without a limit,
    the strongest of those falling at most --max-fall-rate with one, the one falling least
    when none does."""
    report = tmp_path / "checkpoints.json"
    rows = [
        row("model_000100.pt", 180.0, 160.0, 0.2),
        row("model_000200.pt", 170.0, 150.0, 0.05),
        row("model_000300.pt", 160.0, 150.0, 0.0),
    ]
    report.write_text(json.dumps({"checkpoints": rows}))
    assert run("--pick-of", str(report))["picked_on_validation"] == "model_000100.pt"
    limited = run("--pick-of", str(report), "--max-fall-rate", "0.1")
    assert limited["picked_on_validation"] == "model_000200.pt"
    assert limited["picked_evaluation"]["fall_rate"] == 0.05
    report.write_text(
        json.dumps({"checkpoints": [rows[0], row("model_000400.pt", 190.0, 160.0, 0.3)]})
    )
    assert run("--pick-of", str(report), "--max-fall-rate", "0.1")["picked_on_validation"] == (
        "model_000100.pt"
    )
