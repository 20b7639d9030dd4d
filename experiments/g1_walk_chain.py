"""The g1-walk recipe as one command: every stage behind the committed g1-walk policy,
replayed with another actor (the coupled baseline of issue 31) or another seed.

The headline (results/g1-walk) came out of ten warm-started stages, run1 from scratch and
nine continuations (results/experiments/g1-walk-run1 and g1-walk-recipe/runN). Each
stage's config.yaml holds the command it ran; its metrics.csv the env steps it reached.
Those files are the recipe's single source of truth: this script reads them and, for each
stage, runs the same command with

- `--arch ARCH` (coupled: one actor for the 29 joints),
- `--init-from` the previous stage of *this* chain (its last checkpoint, as every stage of
  the headline chain started from the last checkpoint of the one before),
- `--steps` the env steps the historical stage reached, `--minutes` unbounded,
- `--device` dropped (run7g ran on a lent H200's GPU learner; the replay keeps its 1024
  simulations, so each iteration sees the same batch, on whatever device `simreal train`
  picks here),
- `--seed` the historical stage's seed plus `--seed-offset` (0: the same seeds).

Stages are resumable (the helpers of experiments/g1_pull_chain.py): a stage whose run
reached its budget is skipped, one short of it resumes, a killed chain picks up where it
stopped when run again. ROOT/NN-name/g1-walk/RUN is each stage's run.

    python experiments/g1_walk_chain.py --arch coupled --root runs/g1walk-coupled-chain \
        [--until run5] [--dry-run]
    python experiments/g1_walk_chain.py --root runs/g1walk-coupled-chain --summary 50 [--json F]
    python experiments/g1_walk_chain.py --root runs/g1walk-coupled-chain --save DEST

After the walk, `--until g1-force` goes on to the g1-force headline's training's
first stage (results/g1-force/stage1: its command and env-step budget, 24.6 M; the
headline went on from there with a sagittal stage) with the same actor: the
coupled g1-force baseline of issue 30, "trained the same way". That run warm-started from
the g1-walk headline, run10's checkpoint at iteration 225 (results/g1-walk's pick), not
from run10's last, so the replay starts from this chain's run10 checkpoint at that
iteration (the last one saved at or before it; checkpoints are written by wall time).

runs/ may not outlive a machine: `--save DEST` keeps what going on needs (one checkpoint, the
last started stage's: it resumes that stage or warm-starts the next; and once the walk is
done, the run10 checkpoint the g1-force stage starts from) and every stage's config.yaml,
metrics.csv and curve; a finished stage in such a copy counts as done by its metrics.csv.
"""

from __future__ import annotations

import argparse
import csv
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml
from g1_pull_chain import run_dir, save_stages, stage_dir, stage_end, trained_steps

from simreal.policies.checkpoint import checkpoint_at
from simreal.reports import emit

RESULTS = Path(__file__).resolve().parent.parent / "results"
LINEAGE = (
    ("run1", "experiments/g1-walk-run1"),
    ("run2", "experiments/g1-walk-recipe/run2"),
    ("run3", "experiments/g1-walk-recipe/run3"),
    ("run4", "experiments/g1-walk-recipe/run4"),
    ("run5", "experiments/g1-walk-recipe/run5"),
    ("run6", "experiments/g1-walk-recipe/run6"),
    ("run7g", "experiments/g1-walk-recipe/run7g"),
    ("run9", "experiments/g1-walk-recipe/run9"),
    ("run10a", "experiments/g1-walk-recipe/run10a"),
    ("run10", "g1-walk"),
)
"""The headline's ancestry, oldest first, under results/ (each config.yaml's --init-from
names the one before; run7, run8 were side branches, not ancestors). run10 is the headline
itself: its config.yaml and metrics.csv live in results/g1-walk only."""

DROPPED = {"--init-from", "--out", "--minutes", "--steps", "--device", "--arch", "--seed"}
"""Flags of a historical command the replay sets itself."""


@dataclass(frozen=True)
class Stage:
    name: str
    source: Path
    task: str = "g1-walk"
    init_iteration: int | None = None
    """Warm start from the previous stage's checkpoint at this iteration (the last saved at
    or before it) instead of its last one: the historical run started from a picked
    checkpoint."""

    @property
    def steps(self) -> int:
        """Env steps the historical stage reached (its metrics.csv's last row)."""
        with (self.source / "metrics.csv").open() as f:
            return int(list(csv.DictReader(f))[-1]["env_steps"])

    def historical_command(self) -> list[str]:
        return split_command(yaml.safe_load((self.source / "config.yaml").read_text())["command"])


STAGES = tuple(Stage(name, RESULTS / path) for name, path in LINEAGE)
G1_FORCE = Stage("g1-force", RESULTS / "g1-force" / "stage1", task="g1-force", init_iteration=225)
"""The g1-force headline's first stage (results/g1-force/stage1), warm-started from the
g1-walk headline (run10, iteration 225); `--until g1-force` only."""
ALL_STAGES = (*STAGES, G1_FORCE)


def split_command(text: str) -> list[str]:
    """A recorded command's words. Commands were recorded joined by spaces, unquoted, so a
    `--set` value with spaces (`task.forces.ramp_s=[0.5, 2.0]`) comes back as several words:
    every word up to the next flag belongs to the `--set` before it."""
    words: list[str] = []
    for word in shlex.split(text):
        if len(words) >= 2 and words[-2] == "--set" and not word.startswith("--"):
            words[-1] += " " + word
        else:
            words.append(word)
    return words


def replay_command(
    stage: Stage, arch: str, out: Path, previous: Path | None, seed_offset: int
) -> list[str]:
    """The historical command of `stage` with the replay's own actor, warm start, budget,
    seed and output directory (see the module docstring)."""
    words = stage.historical_command()
    if words[:3] != ["simreal", "train", stage.task]:
        raise ValueError(f"{stage.source}/config.yaml: not a `simreal train {stage.task}` command")
    kept, seed, i = [], None, 3
    while i < len(words):
        flag = words[i]
        if flag in DROPPED:
            if flag == "--seed":
                seed = int(words[i + 1])
            i += 2
            continue
        kept.append(flag)
        i += 1
    if seed is None:
        raise ValueError(f"{stage.source}/config.yaml: the command names no --seed")
    cmd = ["simreal", "train", stage.task, "--arch", arch, "--seed", str(seed + seed_offset)]
    cmd += ["--steps", str(stage.steps), "--minutes", "100000", "--out", str(out)]
    if previous is not None:
        cmd += ["--init-from", str(previous)]
    return cmd + kept


def reached_steps(run: Path) -> int:
    """Env steps a stage's run reached: its last checkpoint's, or, in a saved copy that
    kept no checkpoint of a finished stage (`--save`), its metrics.csv's last row."""
    steps = trained_steps(run)
    metrics = run / "metrics.csv"
    if steps == 0 and metrics.is_file():
        with metrics.open() as f:
            rows = list(csv.DictReader(f))
        steps = int(rows[-1]["env_steps"]) if rows else 0
    return steps


def finished(root: Path, index: int, stage: Stage) -> bool:
    """Whether stage `index` (1-based) has a run that reached the stage's env steps."""
    run = run_dir(root, index, stage)
    return run is not None and reached_steps(run) >= stage.steps


def next_command(
    root: Path, index: int, stage: Stage, arch: str, previous: Path | None, seed_offset: int
) -> list[str] | None:
    """What moves stage `index` (1-based) on: None when its run reached the budget."""
    run = run_dir(root, index, stage)
    if run is not None:
        if reached_steps(run) >= stage.steps:
            return None
        return ["simreal", "train", "--resume", str(run), "--minutes", "100000"]
    return replay_command(stage, arch, stage_dir(root, index, stage), previous, seed_offset)


def warm_start(root: Path, index: int, stage: Stage) -> Path | None:
    """What stage `index` (1-based, in ALL_STAGES) warm-starts from: the previous stage's
    run (its last checkpoint) or its checkpoint at `stage.init_iteration`; None for the
    first stage."""
    if index == 1:
        return None
    before = ALL_STAGES[index - 2]
    run = run_dir(root, index - 1, before)
    if run is None:
        raise RuntimeError(f"{stage.name} warm-starts from {before.name}, which has not run")
    if stage.init_iteration is None:
        return run
    return checkpoint_at(run / "checkpoints", stage.init_iteration)


def save(root: Path, dest: Path) -> list[Path]:
    """`--save`: every started stage's files and the last started stage's last checkpoint
    (`save_stages`); once the walk is done and the g1-force stage has not started, the run10
    checkpoint g1-force will start from instead (the walk's last is needed by nothing then);
    once the g1-force stage is done too, no checkpoint (nothing is left to resume)."""
    index = len(ALL_STAGES)
    keep = None
    if finished(root, index - 1, STAGES[-1]) and run_dir(root, index, G1_FORCE) is None:
        keep = (warm_start(root, index, G1_FORCE),)
    elif finished(root, index, G1_FORCE):
        keep = ()
    return save_stages(root, dest, ALL_STAGES, latest_stage_only=True, checkpoints=keep)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", choices=("decoupled", "coupled"), default="coupled")
    p.add_argument("--root", type=Path, required=True, help="where the stages' runs go")
    p.add_argument(
        "--until",
        choices=[s.name for s in ALL_STAGES],
        default=STAGES[-1].name,
        help="the last stage to run (default: the walk's last, run10; g1-force goes on to "
        "the g1-force headline's training)",
    )
    p.add_argument("--seed-offset", type=int, default=0)
    p.add_argument("--dry-run", action="store_true", help="print the next command only")
    p.add_argument("--summary", type=int, metavar="N", help="where each stage ended")
    p.add_argument("--json", type=Path, help="with --summary: write the summary there")
    p.add_argument(
        "--save",
        type=Path,
        metavar="DEST",
        help="copy what going on needs into DEST (ROOT's layout: every stage's config.yaml, "
        "metrics.csv and curve, the last started stage's last checkpoint) and exit; "
        "`cp -r DEST/. ROOT/` puts it back",
    )
    a = p.parse_args(argv)
    if a.save:
        for path in save(a.root, a.save):
            print(path)
        return 0
    if a.summary:
        ends = {
            s.name: stage_end(stage_dir(a.root, i, s), a.summary)
            for i, s in enumerate(ALL_STAGES, start=1)
        }
        emit({"command": shlex.join(["python", *sys.argv]), "stages": ends}, a.json)
        return 0
    last = [s.name for s in ALL_STAGES].index(a.until)
    for index, stage in list(enumerate(ALL_STAGES, start=1))[: last + 1]:
        started = run_dir(a.root, index, stage) is not None  # a resume needs no warm start
        previous = None if started else warm_start(a.root, index, stage)
        cmd = next_command(a.root, index, stage, a.arch, previous, a.seed_offset)
        if cmd is not None:
            print(shlex.join(cmd), flush=True)
            if a.dry_run:
                return 0
            subprocess.run(cmd, check=True)
            if not finished(a.root, index, stage):
                sys.exit(
                    f"stage {stage.name} stopped short of {stage.steps} steps; rerun to resume"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
