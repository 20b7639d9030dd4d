"""The G1 pulling recipe as one command: every stage behind the committed g1-pull policy,
with its flags and its env-step budget, replayed from scratch for either actor.

The decoupled policy in results/experiments/g1-pull-idealized (trained on the idealized body;
results/g1-pull's policy is its continuation on the realistic body) came out of a chain of warm starts
(g1-force from scratch, a longer g1-force stage, then six g1-pull stages
that added the stepping reference, the walking rewards, the rail heading, the
per-simulation load curriculum, the tow reward, heavier carts, and last the even-pull
reward with FAT2's wider lean). Each stage's command is in the config.yaml of its
results/experiments/ folder (g1-force-run1..3, g1-pull-run1..4); the budgets below are the env steps each stage actually ran
(85.2 M in all). This script replays that chain, so that

- `--arch decoupled` reproduces the committed policy's recipe with one command, and
- `--arch coupled` trains the coupled baseline with the same budget and seed: one actor for
  all 29 joints instead of the lower / waist / upper actors, everything else equal.

A ninth stage, light, follows the historical eight: steady's recipe with
carts from none to the level, for the light-cart falls both actors' steady policies show,
and each action group's own PPO ratio.
`--first light` runs it on a root that holds only 08-steady's run, `--seed N` with another
seed; `--until steady` stops where the historical chain did.

It is a replay with today's code, not the historical runs bit for bit: stage 1 uses the
critic learning rate of 1e-3 from the start (g1-force-run1 changed it by hand at 9.2 M
steps), and the first stages ran while actions were clipped at +-1 (today +-5).
`--nproc 2` runs each new stage as 2 torchrun ranks of 128 simulations (the same
256-simulation batch, twice the throughput on this 2-core machine); the historical
stages ran as one process except g1-pull-run4's (2 ranks).

Stages are resumable: a stage whose run reached its budget is skipped; one that has a
checkpoint short of it is resumed (`simreal train --resume`); the next stage warm-starts
from the last checkpoint of the one before. Stopping (Ctrl-C, SIGTERM) saves a
checkpoint. runs/ may not survive on a shared machine: `--save DEST` copies
what a resume needs (each stage's config.yaml, metrics.csv, curve and last checkpoint) into
DEST with ROOT's layout, and `cp -r DEST/. ROOT/` puts it back to go on later.
`--summary N` prints where each stage ended (train return and episode length over its last
N iterations, its curriculum level), from a chain root or a saved copy, so two chains can
be compared stage by stage.

    python experiments/g1_pull_chain.py --arch coupled --root runs/chain-coupled
        [--until STAGE] [--dry-run] [--json FILE] [--budget-scale X] [--nproc 2]
    python experiments/g1_pull_chain.py --arch coupled --root runs/chain-coupled --save DEST
    python experiments/g1_pull_chain.py --arch coupled --root runs/chain-coupled --summary N

`--budget-scale 0.0001` shrinks every budget (one PPO iteration per stage): a smoke run
of the whole chain's mechanics in a few minutes.

With --json, the last finished stage's policy is exported and evaluated (40 episodes,
`simreal eval`), and the report names the stages, their budgets and the pulling metrics.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from simreal.reports import emit

ENVS = 256  # the batch every historical stage used (one process, or 2 ranks x 128)
SEED = 0
"""The seed of both chains; `--seed` runs another (into another ROOT)."""

PULL_BASE = (
    "task.gait_reference_rad=0.3",
    "train.ppo.critic_learning_rate=0.001",
    "train.ppo.schedule=fixed",
    "train.ppo.learning_rate=0.0002",
)
WALK = (
    *PULL_BASE,
    "task.reward_weights.alive=0.2",
    "task.reward_weights.upright=0.2",
    "task.reward_weights.base_height=0.2",
    "task.reward_weights.fat2_tilt=0.5",
    "train.model.init_std=0.4",
    "train.model.max_std=0.4",
    "task.randomization.push_vel_m_s=0.0",
)
RAIL = (
    *WALK,
    "task.load.curriculum=per_sim",
    "task.command.speed_m_s=[0.15,0.4]",
    "task.load.min_progress_fraction=0.33",
    "task.lin_vel_sigma_m_s=0.15",
    "task.reward_weights.heading=2.0",
)

TOW = (*RAIL, "task.reward_weights.tow=2.0")
HEAVY = (*TOW, "task.load.resistance_spread=[0.7,1.0]")
STEADY_TERMS = ("task.reward_weights.tow_steady=2.0", "task.fat2_max_tilt_rad=0.6")
LIGHT = (
    *TOW,
    "task.load.resistance_spread=[0.0,1.0]",
    *STEADY_TERMS,
    "train.ppo.ratio=per_group",
)
""" "light" brings back the carts heavy and steady stopped sampling: with each simulation's
level near 190 N and the spread at [0.7, 1.0], training saw almost nothing under 130 N, and
both chains' steady policies fell behind light carts (under 30-90 N). A spread of [0, 1]
keeps the top of the ladder (the level still rises) while every lighter cart comes back.

Its PPO ratio is per action group: the decoupled actor's light stage did
better with it than with the joint ratio on every measure (docs/g1-pull.md). The coupled actor has one action group, so it trains exactly as before. `--set
train.ppo.ratio=joint` gives the earlier joint-ratio light stage back."""


@dataclass(frozen=True)
class Stage:
    name: str
    task: str
    steps: int
    """Env steps this stage trains (what the historical stage ran)."""
    overrides: tuple[str, ...]
    source: str
    """Where the historical stage's command and results are."""


STAGES = (
    Stage(
        "force",
        "g1-force",
        15_513_600,
        ("train.ppo.critic_learning_rate=0.001",),
        "results/experiments/g1-force-run1, g1-force-run2",
    ),
    Stage(
        "force-2",
        "g1-force",
        8_355_840,
        ("train.ppo.critic_learning_rate=0.001",),
        "results/experiments/g1-force-run3, results/g1-force",
    ),
    Stage(
        "ref",
        "g1-pull",
        1_658_880,
        PULL_BASE,
        "results/experiments/g1-pull-run2/README.md, step 1",
    ),
    Stage(
        "walk",
        "g1-pull",
        11_999_232,
        (*WALK, "task.reward_weights.track_lin_vel=2.0"),
        "results/experiments/g1-pull-run2",
    ),
    Stage("rail", "g1-pull", 5_836_800, RAIL, "results/experiments/g1-pull-run3/README.md, step 1"),
    Stage("tow", "g1-pull", 6_156_288, TOW, "results/experiments/g1-pull-run3"),
    Stage("heavy", "g1-pull", 17_559_552, HEAVY, "results/experiments/g1-pull-run4"),
    Stage(
        "steady",
        "g1-pull",
        18_124_800,
        (*HEAVY, *STEADY_TERMS),
        "results/experiments/g1-pull-idealized",
    ),
    Stage("light", "g1-pull", 7_372_800, LIGHT, "results/experiments/g1-pull-*-chain*/09-light"),
)
HISTORICAL = STAGES[:8]
"""The stages of the historical chain (results/experiments/g1-pull-idealized, 85.2 M steps);
"light" came after."""


def budget(stage: Stage, scale: float) -> int:
    return max(1, round(stage.steps * scale))


def stage_dir(root: Path, index: int, stage: Stage) -> Path:
    """ROOT/NN-name: where stage `index` (1-based) keeps its run."""
    return root / f"{index:02d}-{stage.name}"


def run_dir(root: Path, index: int, stage: Stage) -> Path | None:
    """The stage's run directory under ROOT/NN-name/TASK/, None before it started."""
    parent = stage_dir(root, index, stage) / stage.task
    runs = sorted(p for p in parent.glob("*") if p.is_dir()) if parent.is_dir() else []
    if len(runs) > 1:
        raise RuntimeError(f"{parent}: {len(runs)} run directories, expected one")
    return runs[0] if runs else None


def trained_steps(run: Path) -> int:
    """Env steps of the run's last checkpoint (0 without one)."""
    from simreal.policies.checkpoint import latest_checkpoint, load_checkpoint

    ckpt = latest_checkpoint(run / "checkpoints")
    return int(load_checkpoint(ckpt)["env_steps"]) if ckpt is not None else 0


def launcher(nproc: int) -> list[str]:
    """`simreal train`, or the same under torchrun with `nproc` ranks on this machine."""
    if nproc == 1:
        return ["simreal", "train"]
    return ["torchrun", "--standalone", "--nproc-per-node", str(nproc), "-m", "simreal", "train"]


def recorded_world_size(run: Path) -> int:
    """The rank count a run was started with (config.yaml's world_size; 1 without it)."""
    from simreal.rundir import read_config

    return int(read_config(run).get("world_size", 1))


def stage_command(
    root: Path,
    index: int,
    stage: Stage,
    arch: str,
    previous: Path | None,
    steps: int,
    nproc: int,
    seed: int = SEED,
    extra: tuple[str, ...] = (),
) -> list[str] | None:
    """The command that moves the stage on, None when it is done. A started stage resumes
    with the rank count it started with; a new one gets `nproc` ranks of ENVS / nproc
    simulations each (the same 256-simulation batch). `extra` overrides come after the
    stage's own (a variant of the recipe, e.g. train.ppo.ratio=per_group)."""
    run = run_dir(root, index, stage)
    if run is not None:
        if trained_steps(run) >= steps:
            return None
        return [*launcher(recorded_world_size(run)), "--resume", str(run), "--minutes", "100000"]
    cmd = [*launcher(nproc), stage.task, "--arch", arch, "--seed", str(seed)]
    cmd += ["--envs", str(ENVS // nproc), "--steps", str(steps), "--minutes", "100000"]
    if previous is not None:
        cmd += ["--init-from", str(previous)]
    for item in (*stage.overrides, *extra):
        cmd += ["--set", item]
    return [*cmd, "--out", str(stage_dir(root, index, stage))]


SAVED_FILES = ("config.yaml", "metrics.csv", "curve.png")


def save_stages(
    root: Path,
    dest: Path,
    stages: tuple = STAGES,
    latest_stage_only: bool = False,
    checkpoints: tuple[Path, ...] | None = None,
) -> list[Path]:
    """Copy every started stage's resumable state from ROOT to DEST (same layout): its
    config.yaml, metrics.csv, curve and last checkpoint; older checkpoints and TensorBoard
    events stay behind. `latest_stage_only`: the checkpoint of the last started stage only
    (what a resume or the next stage's warm start needs; the finished stages' metrics.csv
    tell they are done). `checkpoints`: exactly these checkpoints under ROOT instead of any
    last one (a later stage's warm start from a picked checkpoint of a finished stage).
    Returns the checkpoints copied."""
    from simreal.policies.checkpoint import atomic_write_bytes, latest_checkpoint

    copied = []
    started = [(i, s) for i, s in enumerate(stages, start=1) if run_dir(root, i, s) is not None]
    # the latest stage first: a save cut short never leaves DEST without a checkpoint
    for index, stage in reversed(started):
        run = run_dir(root, index, stage)
        target = dest / run.relative_to(root)
        if checkpoints is not None:
            ckpts = [p for p in checkpoints if p.parent == run / "checkpoints"]
        elif not latest_stage_only or (index, stage) == started[-1]:
            ckpts = [c for c in (latest_checkpoint(run / "checkpoints"),) if c is not None]
        else:
            ckpts = []
        sources = [run / name for name in SAVED_FILES if (run / name).is_file()]
        for source in [*sources, *ckpts]:
            # atomic, so a save cut short never leaves a torn checkpoint to resume from
            atomic_write_bytes(target / source.relative_to(run), source.read_bytes())
        kept = {c.name for c in ckpts}
        for stale in (target / "checkpoints").glob("model_*.pt"):
            if stale.name not in kept:  # only after the new ones are in place
                stale.unlink()
        copied += [target / "checkpoints" / c.name for c in reversed(ckpts)]
    return copied[::-1]


def stage_end(stage_dir: Path, last: int) -> dict | None:
    """Where a stage ended, from its metrics.csv: train return and episode length averaged
    over those of the last `last` iterations that finished an episode (a stage's first
    iterations log none; None while no iteration has), and the curriculum level at its
    last one. The CSV is found under the stage's run (ROOT's layout) or directly in
    `stage_dir` (a flat copy such as results/experiments/g1-pull-coupled-chain); None before the stage
    logged anything."""
    found = sorted(stage_dir.rglob("metrics.csv")) if stage_dir.is_dir() else []
    if not found:
        return None
    with found[0].open() as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    tail = [r for r in rows[-last:] if r["train_return"]]

    def mean(column: str) -> float | None:
        return statistics.fmean(float(r[column]) for r in tail) if tail else None

    end = {
        "env_steps": int(rows[-1]["env_steps"]),
        "iterations": len(tail),
        "train_return": mean("train_return"),
        "episode_length": mean("train_episode_length"),
    }
    return end | {k: float(v) for k, v in rows[-1].items() if k.startswith("curriculum/") and v}


def warm_start(root: Path, first: int) -> Path | None:
    """The run stage `first` (0-based) warm-starts from: None for the first stage, else the
    stage before it, which must have a checkpoint in ROOT. This lets a finished chain whose
    early checkpoints were not kept (results/experiments/g1-pull-coupled-chain keeps only 08-steady's) take
    a stage appended after it."""
    if first == 0:
        return None
    stage = STAGES[first - 1]
    run = run_dir(root, first, stage)
    if run is None or trained_steps(run) == 0:
        raise SystemExit(
            f"--first {STAGES[first].name}: no checkpoint of stage {stage.name} "
            f"under {stage_dir(root, first, stage)}"
        )
    return run


def evaluate(run: Path, out: Path) -> dict:
    policy = out / "policy.onnx"
    subprocess.run(["simreal", "export", str(run), "--onnx", str(policy)], check=True)
    report = out / "eval.json"
    subprocess.run(
        ["simreal", "eval", str(policy), "--episodes", "40", "--json", str(report)], check=True
    )
    return json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=("decoupled", "coupled"), required=True)
    parser.add_argument("--root", type=Path, required=True, help="where the stages' runs go")
    parser.add_argument("--until", choices=[s.name for s in STAGES], default=STAGES[-1].name)
    parser.add_argument("--dry-run", action="store_true", help="print the next commands only")
    parser.add_argument("--json", type=Path, help="export + evaluate the last finished stage")
    parser.add_argument("--budget-scale", type=float, default=1.0, help="smoke runs: < 1")
    parser.add_argument(
        "--nproc", type=int, default=1, choices=(1, 2, 4), help="torchrun ranks per new stage"
    )
    parser.add_argument(
        "--first",
        choices=[s.name for s in STAGES[1:]],
        help="start here: the stage before must be in ROOT already (a saved copy put back)",
    )
    parser.add_argument("--seed", type=int, default=SEED, help="the new stages' seed")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="an override added to every new stage (repeatable), e.g. train.ppo.ratio=per_group",
    )
    parser.add_argument("--save", type=Path, help="copy the stages' resumable state there, exit")
    parser.add_argument(
        "--summary", type=int, metavar="N", help="print where each stage ended (last N iterations)"
    )
    args = parser.parse_args()

    if args.summary:
        dirs = [stage_dir(args.root, i, s) for i, s in enumerate(STAGES, start=1)]
        ends = {d.name: stage_end(d, args.summary) for d in dirs}
        emit({"command": " ".join(["python", *sys.argv]), "stages": ends}, args.json)
        return
    if args.save:
        for path in save_stages(args.root, args.save):
            print(path)
        return
    names = [s.name for s in STAGES]
    last = names.index(args.until)
    first = names.index(args.first) if args.first else 0
    previous = warm_start(args.root, first)
    todo = list(enumerate(STAGES, start=1))[first : last + 1]
    for index, stage in todo:
        steps = budget(stage, args.budget_scale)
        cmd = stage_command(
            args.root,
            index,
            stage,
            args.arch,
            previous,
            steps,
            args.nproc,
            args.seed,
            tuple(args.set),
        )
        if cmd is not None:
            print(" ".join(cmd), flush=True)
            if args.dry_run:
                return
            subprocess.run(cmd, check=True)
            run = run_dir(args.root, index, stage)
            if run is None or trained_steps(run) < steps:
                sys.exit(f"stage {stage.name} stopped short of {steps} steps; rerun to resume")
        previous = run_dir(args.root, index, stage)
    if args.json:
        assert previous is not None
        metrics = evaluate(previous, args.root)
        stages = [
            {
                "name": s.name,
                "task": s.task,
                "budget": budget(s, args.budget_scale),
                "trained": trained_steps(run_dir(args.root, i, s)),
            }
            for i, s in todo
        ]
        report = {
            "command": " ".join(["python", *sys.argv]),
            "arch": args.arch,
            "stages": stages,
            "total_steps": sum(s["trained"] for s in stages),
            "run": str(previous),
            **{
                k: metrics[k]
                for k in ("peak_pull_force_backward_n", "peak_pull_force_forward_n", "fall_rate")
                if k in metrics
            },
        }
        emit(report, args.json)


if __name__ == "__main__":
    main()
