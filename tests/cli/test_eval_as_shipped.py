"""Every committed policy evaluates from a fresh clone, with no preparation: no `runs/`
directory, no generated datasets."""

from __future__ import annotations

import pytest
from _repo import REPO

from simreal import evaluation
from simreal.config import apply_overrides
from simreal.tasks.dex_track import DexTrackConfig, DexTrackEnv

SLOW = {"dex-track"}
"""Generating dex-track's 64 held-out references takes about 20 s."""
COMMITTED = [
    pytest.param(path, marks=[pytest.mark.slow] if path.parent.name in SLOW else [])
    for path in sorted(REPO.glob("results/*/policy.onnx"))
]


def test_an_empty_override_is_the_empty_string():
    cfg = apply_overrides(DexTrackConfig(references="runs/dex-refs"), ["references="], "task.")
    assert cfg.references == ""


def test_training_on_a_missing_dataset_names_the_command_that_writes_it(tmp_path):
    cfg = DexTrackConfig(references=str(tmp_path / "dex-refs"))
    with pytest.raises(FileNotFoundError, match="simreal dex references --out"):
        DexTrackEnv(cfg, num_envs=1, num_threads=1)


def test_evaluation_on_a_missing_dataset_generates_the_held_out_split(tmp_path, capsys):
    missing = DexTrackConfig(
        references=str(tmp_path / "dex-refs"), heldout_references=2, evaluation=True
    )
    generated = DexTrackConfig(heldout_references=2, evaluation=True)
    a = DexTrackEnv(missing, num_envs=2, num_threads=1)
    assert "generating the 2 held-out references" in capsys.readouterr().err
    b = DexTrackEnv(generated, num_envs=2, num_threads=1)
    assert a.refs.names == b.refs.names
    assert (a.refs.object_pos == b.refs.object_pos).all()


@pytest.mark.parametrize("policy", COMMITTED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_committed_policy_evaluates_from_a_clone(policy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no runs/ here: the configs' relative paths are absent
    metrics = evaluation.evaluate_policy(policy, episodes=1)
    assert metrics["episodes"] == 1
    assert metrics["return_mean"] == metrics["return_mean"]  # not NaN
