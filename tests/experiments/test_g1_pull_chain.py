"""experiments/g1_pull_chain.py: the recipe behind the committed g1-pull policy must stay runnable
with today's configs (a renamed field would fail hours into a replay, not at its start)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _repo import REPO, load_script

from simreal.config import apply_overrides
from simreal.policies import TrainConfig
from simreal.policies.checkpoint import save_checkpoint
from simreal.tasks import get_task
from simreal.training import split_overrides

SCRIPT = REPO / "experiments" / "g1_pull_chain.py"


def test_every_stage_applies_to_todays_configs():
    chain = load_script(SCRIPT)
    assert [s.name for s in chain.HISTORICAL][-1] == "steady"
    assert sum(s.steps for s in chain.HISTORICAL) == 85_204_992  # the READMEs: 85.2 M
    assert chain.STAGES[-1].name == "light"
    for stage in chain.STAGES:
        task_items, train_items = split_overrides(list(stage.overrides))
        spec = get_task(stage.task)
        apply_overrides(spec.config_cls(), task_items, "task.")
        apply_overrides(TrainConfig(), train_items, "train.")


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [1, 2])
def test_dry_run_starts_the_first_stage(tmp_path, nproc):
    cmd = [sys.executable, str(SCRIPT), "--arch", "coupled", "--root", str(tmp_path)]
    out = subprocess.run(
        [*cmd, "--dry-run", "--nproc", str(nproc)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout.split()
    launcher = ["simreal", "train"] if nproc == 1 else ["torchrun", "--standalone"]
    assert out[: len(launcher)] == launcher
    assert out[out.index("--envs") + 1] == str(256 // nproc)
    assert out[out.index("--arch") + 1] == "coupled"
    assert "--init-from" not in out  # stage 1 trains from scratch


@pytest.mark.slow
def test_first_warm_starts_from_the_stage_before(tmp_path):
    """--first light on a root holding only steady's run (results/experiments/g1-pull-coupled-chain's case)
    starts light from it; without that run it names what is missing."""
    cmd = [sys.executable, str(SCRIPT), "--arch", "coupled", "--root", str(tmp_path)]
    cmd += ["--first", "light", "--dry-run", "--seed", "1", "--set", "train.ppo.ratio=joint"]
    missing = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    assert missing.returncode != 0 and "08-steady" in missing.stderr
    run = tmp_path / "08-steady" / "g1-pull" / "20261124-211730-0"
    save_checkpoint(run / "checkpoints", 2950, {"env_steps": 18_124_800})
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO).stdout
    words = out.split()
    assert words[words.index("--init-from") + 1] == str(run)
    assert words[words.index("--out") + 1] == str(tmp_path / "09-light")
    assert "task.load.resistance_spread=[0.0,1.0]" in words
    assert words[words.index("--seed") + 1] == "1"
    # light's own per-group ratio, then the override after it (the last one wins), then --out
    assert words.index("train.ppo.ratio=per_group") < words.index("train.ppo.ratio=joint")
    assert words[-3:-2] == ["train.ppo.ratio=joint"]


def test_save_keeps_what_a_resume_needs(tmp_path):
    """--save copies each started stage's config, metrics and last checkpoint only, in
    REPO's layout, and replaces the copy of an older checkpoint."""
    chain = load_script(SCRIPT)
    root, dest = tmp_path / "root", tmp_path / "saved"
    run = root / "01-force" / "g1-force" / "20261124-000000-0"
    (run / "checkpoints").mkdir(parents=True)
    for name in ("config.yaml", "metrics.csv", "events.out.tfevents.1"):
        (run / name).write_text(name)
    for iteration in (50, 100):
        (run / "checkpoints" / f"model_{iteration:06d}.pt").write_bytes(b"x" * iteration)
    assert chain.save_stages(root, dest) == [
        dest / run.relative_to(root) / "checkpoints" / "model_000100.pt"
    ]
    (run / "checkpoints" / "model_000150.pt").write_bytes(b"y")
    chain.save_stages(root, dest)
    saved = dest / run.relative_to(root)
    assert sorted(p.name for p in saved.rglob("*") if p.is_file()) == [
        "config.yaml",
        "metrics.csv",
        "model_000150.pt",
    ]


def test_stage_end_reads_either_layout(tmp_path):
    """--summary's stage ends: means over the last N iterations, the curriculum level at
    the last one; the CSV under the stage's run (a chain root) or flat (a results copy)."""
    chain = load_script(SCRIPT)
    header = "iteration,env_steps,train_return,train_episode_length,curriculum/load_resistance_n\n"
    rows = "".join(f"{i},{i * 100},{i * 10},{i + 500},{20 + i}\n" for i in range(1, 6))
    nested = tmp_path / "root" / "03-ref" / "g1-pull" / "20261125-000000-0"
    flat = tmp_path / "copy" / "03-ref"
    for where in (nested, flat):
        where.mkdir(parents=True)
        (where / "metrics.csv").write_text(header + rows)
    expected = {
        "env_steps": 500,
        "iterations": 2,
        "train_return": 45.0,
        "episode_length": 504.5,
        "curriculum/load_resistance_n": 25.0,
    }
    assert chain.stage_end(tmp_path / "root" / "03-ref", last=2) == expected
    assert chain.stage_end(flat, last=2) == expected
    assert chain.stage_end(tmp_path / "root" / "04-walk", last=2) is None


def test_stage_end_of_a_stage_just_begun(tmp_path):
    """A stage's first iterations finish no episode and log an empty return: --summary
    averages only the iterations that logged one, and reports None before any has (it
    crashed on a chain saved a minute into a stage)."""
    chain = load_script(SCRIPT)
    header = "iteration,env_steps,train_return,train_episode_length\n"
    stage = tmp_path / "05-rail"
    stage.mkdir()
    (stage / "metrics.csv").write_text(header + "1,100,,\n2,200,,\n")
    end = chain.stage_end(stage, last=50)
    assert end == {"env_steps": 200, "iterations": 0, "train_return": None, "episode_length": None}
    (stage / "metrics.csv").write_text(header + "1,100,,\n2,200,,\n3,300,6.0,40\n4,400,8.0,60\n")
    end = chain.stage_end(stage, last=3)
    assert end == {"env_steps": 400, "iterations": 2, "train_return": 7.0, "episode_length": 50.0}
