"""experiments/g1_walk_chain.py: the replay of the g1-walk headline's stages reads each
stage's own command and budget, and every replayed command applies to today's configs (a
renamed field would fail hours into the chain, not at its start)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from _repo import REPO, load_script

from simreal.config import apply_overrides
from simreal.policies import TrainConfig
from simreal.policies.checkpoint import save_checkpoint
from simreal.policies.distributed import _flatten
from simreal.tasks import get_task
from simreal.training import split_overrides

SCRIPT = REPO / "experiments" / "g1_walk_chain.py"  # it imports g1_pull_chain's helpers


def words_after(cmd: list[str], flag: str) -> list[str]:
    return [cmd[i + 1] for i, w in enumerate(cmd) if w == flag]


def test_the_lineage_is_the_headlines_ancestry():
    """Each stage's recorded --init-from names the stage before it (by run name), and the
    headline's own config is the last stage's command."""
    chain = load_script(SCRIPT)
    names = [s.name for s in chain.STAGES]
    assert names[0] == "run1" and names[-1] == "run10"
    for before, stage in zip(chain.STAGES[:-1], chain.STAGES[1:], strict=True):
        (init,) = words_after(stage.historical_command(), "--init-from")
        assert f"{before.name}/" in init.replace("g1walk", "run"), (stage.name, init)
    headline = yaml.safe_load((REPO / "results" / "g1-walk" / "config.yaml").read_text())
    assert shlex.split(headline["command"]) == chain.STAGES[-1].historical_command()
    # every stage to its end: the headline itself is run10's iteration 225 (77.7 M steps)
    assert sum(s.steps for s in chain.STAGES) == 79_527_936


def test_replayed_commands_apply_to_todays_configs(tmp_path):
    chain = load_script(SCRIPT)
    previous = None
    for index, stage in enumerate(chain.STAGES, start=1):
        out = tmp_path / f"{index:02d}"
        cmd = chain.replay_command(stage, "coupled", out, previous, seed_offset=100)
        history = stage.historical_command()
        assert cmd[:3] == ["simreal", "train", "g1-walk"]
        assert words_after(cmd, "--arch") == ["coupled"]
        assert words_after(cmd, "--steps") == [str(stage.steps)]
        assert words_after(cmd, "--out") == [str(out)]
        assert words_after(cmd, "--seed") == [str(int(words_after(history, "--seed")[0]) + 100)]
        assert words_after(cmd, "--init-from") == ([] if previous is None else [str(previous)])
        assert "--device" not in cmd and "--minutes" in cmd
        assert words_after(cmd, "--envs") == words_after(history, "--envs")
        assert words_after(cmd, "--set") == words_after(history, "--set")
        task_items, train_items = split_overrides(words_after(cmd, "--set"))
        apply_overrides(get_task("g1-walk").config_cls(), task_items, "task.")
        apply_overrides(TrainConfig(), train_items, "train.")
        previous = out / "g1-walk" / "run"


def test_a_started_stage_resumes_and_a_finished_one_is_skipped(tmp_path):
    chain = load_script(SCRIPT)
    stage = chain.STAGES[1]
    run = tmp_path / "02-run2" / "g1-walk" / "20261129-000000-1"
    first = tmp_path / "01-run1" / "g1-walk" / "20261129-000000-0"
    cmd = chain.next_command(tmp_path, 2, stage, "coupled", first, 0)
    assert words_after(cmd, "--init-from") == [str(first)]
    save_checkpoint(run / "checkpoints", 10, {"env_steps": stage.steps - 1})
    cmd = chain.next_command(tmp_path, 2, stage, "coupled", first, 0)
    assert cmd[:4] == ["simreal", "train", "--resume", str(run)]
    save_checkpoint(run / "checkpoints", 20, {"env_steps": stage.steps})
    assert chain.next_command(tmp_path, 2, stage, "coupled", first, 0) is None


def test_save_keeps_one_checkpoint_and_the_copy_resumes(tmp_path):
    """--save: every stage's config and metrics, the last started stage's last checkpoint
    only; put back, the finished stage counts as done by its metrics and the next resumes."""
    chain = load_script(SCRIPT)
    root, dest = tmp_path / "root", tmp_path / "saved"
    first, second = chain.STAGES[:2]
    runs = [
        root / "01-run1" / "g1-walk" / "20261129-000000-0",
        root / "02-run2" / "g1-walk" / "20261129-000000-1",
    ]
    for run, stage, done in zip(runs, (first, second), (1.0, 0.5), strict=True):
        steps = int(stage.steps * done)
        (run / "config.yaml").parent.mkdir(parents=True)
        (run / "config.yaml").write_text("task: g1-walk\n")
        (run / "metrics.csv").write_text(f"iteration,env_steps\n1,{steps}\n")
        for iteration in (1, 2):
            save_checkpoint(run / "checkpoints", iteration, {"env_steps": steps})
    (dest / runs[0].relative_to(root) / "checkpoints").mkdir(parents=True)
    stale = dest / runs[0].relative_to(root) / "checkpoints" / "model_000001.pt"
    stale.write_bytes(b"an older save's checkpoint of a stage since finished")
    saved = chain.save_stages(root, dest, chain.STAGES, latest_stage_only=True)
    assert [p.relative_to(dest) for p in saved] == [
        runs[1].relative_to(root) / "checkpoints" / "model_000002.pt"
    ]
    assert sorted(p.name for p in dest.rglob("*.pt")) == ["model_000002.pt"]
    assert (dest / runs[0].relative_to(root) / "metrics.csv").is_file()
    assert chain.reached_steps(dest / runs[0].relative_to(root)) == first.steps
    cmd = chain.next_command(dest, 2, second, "coupled", None, 0)
    assert cmd[:4] == ["simreal", "train", "--resume", str(dest / runs[1].relative_to(root))]
    assert chain.next_command(dest, 1, first, "coupled", None, 0) is None


REPLAY_SETS = {"train.max_env_steps", "train.max_minutes", "train.device", "train.model.arch"}
"""What a replay sets itself: the historical stage's budget, any device, the actor."""


def test_every_replay_trains_its_stages_recorded_config(tmp_path):
    """Each replayed command (walk stages and the g1-force tail), built as `simreal train`
    builds a run config, equals the config the historical stage recorded in every field
    both have, but the budget, device and actor the replay sets: a default that drifted
    since would silently change hours of training. (Fields added since are absent from the
    record; their defaults keep the old behaviour by the project's rule.)"""
    from simreal.cli import _request, build_parser
    from simreal.training import TrainRequest, run_config

    chain = load_script(SCRIPT)
    for stage in chain.ALL_STAGES:
        cmd = chain.replay_command(stage, "coupled", tmp_path / stage.name, None, 0)
        args = build_parser().parse_args(cmd[1:])
        replay = run_config(_request(TrainRequest, args, ignore=("resume",), command="replay"))
        recorded = yaml.safe_load((stage.source / "config.yaml").read_text())
        now = _flatten({part: replay[part] for part in ("task_config", "train")})
        then = _flatten({part: recorded[part] for part in ("task_config", "train")})
        differ = {k for k in set(now) & set(then) if now[k] != then[k]} - REPLAY_SETS
        assert not differ, (stage.name, {k: (now[k], then[k]) for k in differ})
        assert replay["train"]["model"]["arch"] == "coupled"
        assert replay["train"]["max_env_steps"] == stage.steps


def test_a_recorded_set_value_with_spaces_is_one_word():
    """g1-force's command was recorded unquoted (`--set task.forces.ramp_s=[0.5, 2.0]`)."""
    chain = load_script(SCRIPT)
    sets = words_after(chain.G1_FORCE.historical_command(), "--set")
    assert "task.forces.ramp_s=[0.5, 2.0]" in sets
    assert "task.forces.active_prob=[0.8, 0.3, 0.3]" in sets
    assert all(s.partition(".")[0] in ("task", "train") for s in sets)
    assert chain.split_command("simreal train t --set a=[1, 2] --seed 3 --set b=4") == [
        "simreal",
        "train",
        "t",
        "--set",
        "a=[1, 2]",
        "--seed",
        "3",
        "--set",
        "b=4",
    ]


def fake_run(root: Path, index: int, stage, iterations, env_steps: int) -> Path:
    run = root / f"{index:02d}-{stage.name}" / stage.task / "20261201-000000-0"
    (run / "config.yaml").parent.mkdir(parents=True)
    (run / "config.yaml").write_text(f"task: {stage.task}\n")
    (run / "metrics.csv").write_text(f"iteration,env_steps\n{iterations[-1]},{env_steps}\n")
    for iteration in iterations:
        save_checkpoint(run / "checkpoints", iteration, {"env_steps": env_steps})
    return run


def test_g1_force_starts_from_run10_at_the_headlines_iteration(tmp_path):
    """The g1-force headline started from run10's iteration 225 (results/g1-walk's pick),
    so the tail starts from this chain's run10 checkpoint there, or the last before it."""
    chain = load_script(SCRIPT)
    index = len(chain.ALL_STAGES)
    (init,) = words_after(chain.G1_FORCE.historical_command(), "--init-from")
    assert init.endswith(f"model_{chain.G1_FORCE.init_iteration:06d}.pt")
    run10 = fake_run(tmp_path, index - 1, chain.STAGES[-1], (200, 222, 230, 301), 7_397_376)
    start = chain.warm_start(tmp_path, index, chain.G1_FORCE)
    assert start == run10 / "checkpoints" / "model_000222.pt"
    cmd = chain.next_command(tmp_path, index, chain.G1_FORCE, "coupled", start, 0)
    assert cmd[:3] == ["simreal", "train", "g1-force"]
    assert words_after(cmd, "--init-from") == [str(start)]
    assert words_after(cmd, "--steps") == [str(chain.G1_FORCE.steps)]
    # a walk stage starts from the previous stage's run (its last checkpoint)
    run10a = fake_run(tmp_path, index - 2, chain.STAGES[-2], (117,), 2_875_392)
    assert chain.warm_start(tmp_path, index - 1, chain.STAGES[-1]) == run10a
    for early in (run10 / "checkpoints").glob("model_0002*.pt"):
        early.unlink()
    with pytest.raises(FileNotFoundError, match="at or before iteration 225"):
        chain.warm_start(tmp_path, index, chain.G1_FORCE)


def test_a_stage_whose_predecessor_never_ran_is_not_started_from_scratch(tmp_path):
    chain = load_script(SCRIPT)
    with pytest.raises(RuntimeError, match="run4, which has not run"):
        chain.warm_start(tmp_path, 5, chain.STAGES[4])
    assert chain.warm_start(tmp_path, 1, chain.STAGES[0]) is None


def test_save_keeps_the_checkpoint_g1_force_starts_from(tmp_path):
    """Once the walk is done, --save keeps only the run10 checkpoint the g1-force stage will
    start from (not run10's last); once g1-force runs, only its own; once it is done, none."""
    chain = load_script(SCRIPT)
    root, dest = tmp_path / "root", tmp_path / "saved"
    index = len(chain.ALL_STAGES)
    fake_run(root, index - 1, chain.STAGES[-1], (222, 301), chain.STAGES[-1].steps)
    saved = chain.save(root, dest)
    assert [p.name for p in saved] == ["model_000222.pt"]
    assert sorted(p.name for p in dest.rglob("*.pt")) == ["model_000222.pt"]
    assert chain.next_command(dest, index - 1, chain.STAGES[-1], "coupled", None, 0) is None
    assert chain.warm_start(dest, index, chain.G1_FORCE).name == "model_000222.pt"
    fake_run(root, index, chain.G1_FORCE, (5,), 1000)
    saved = chain.save(root, dest)
    assert [p.name for p in saved] == ["model_000005.pt"]
    assert sorted(p.name for p in dest.rglob("*.pt")) == ["model_000005.pt"]
    # the chain done: the files stay, no checkpoint (nothing is left to resume)
    forced = chain.run_dir(root, index, chain.G1_FORCE)
    (forced / "metrics.csv").write_text(f"iteration,env_steps\n9,{chain.G1_FORCE.steps}\n")
    save_checkpoint(forced / "checkpoints", 9, {"env_steps": chain.G1_FORCE.steps})
    assert chain.save(root, dest) == []
    assert not list(dest.rglob("*.pt"))
    assert chain.reached_steps(dest / forced.relative_to(root)) == chain.G1_FORCE.steps
