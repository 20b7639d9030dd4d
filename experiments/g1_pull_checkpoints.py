"""Which checkpoint of a g1-pull run to keep: every checkpoint's pulling forces on a
validation protocol, the pick made there, and the evaluation protocol's numbers beside it.

g1-pull's evaluation is deterministic and its peak metrics keep the best of 20 carts per
direction, so neighbouring checkpoints of one run can differ by 30 N or more (one run:
146.6 N backward at 3.4 M steps, 109.5 N at 5.1 M, the latter falling behind every cart
from 135 N). Choosing the checkpoint by the evaluation numbers themselves would report
the best draw of that noise. This script chooses on a validation protocol instead, other
carts at another speed (default: 14.5-290 N in 14.5 N steps at 0.25 m/s; evaluation:
15-300 N at 0.3 m/s), by the smaller of the two directions' shares of Thor's forces, and
prints the evaluation protocol's numbers of every checkpoint so the choice can be
checked.

    python experiments/g1_pull_checkpoints.py RUN [--every 4] [--last 12] [--json FILE]
        [--set task.eval_friction=0.7]   # conditions added to both protocols
        [--max-fall-rate 0.1]            # pick among checkpoints falling at most this often
    python experiments/g1_pull_checkpoints.py --pick-of REPORT --max-fall-rate 0.1
    python experiments/g1_pull_checkpoints.py --sweep-of results/experiments/g1-pull-coupled-chain/09-light/checkpoints.json
    python experiments/g1_pull_checkpoints.py --picks-of results/experiments/g1-pull-coupled-chain*/09-light/eval.json

Because neighbouring checkpoints differ so much, the report also gives the evaluation
protocol's mean and standard deviation over all swept checkpoints (`sweep`): when two
runs are compared (the decoupled and coupled actors), a gap between the picked
checkpoints smaller than the spread within a run does not rank the runs. `--sweep-of`
recomputes it from existing reports, pooled when several are given (all the checkpoints
of one actor's seeds). `--picks-of` is the declared comparison: the mean over
seeds of the picked policies' `simreal eval` numbers, one eval JSON per seed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from simreal.evaluation import evaluate_policy
from simreal.policies.checkpoint import add_sweep_options, swept_checkpoints
from simreal.reports import emit

THOR_BACKWARD_N, THOR_FORWARD_N = 167.7, 145.5
VALIDATION = ("task.eval_pull.speed_m_s=0.25", "task.eval_pull.max_resistance_n=290")
EPISODES = 40
PICK_FIELDS = ("peak_pull_force_backward_n", "peak_pull_force_forward_n", "fall_rate", "episodes")


def pulling(checkpoint: Path, overrides: tuple[str, ...]) -> dict:
    m = evaluate_policy(checkpoint, episodes=EPISODES, overrides=list(overrides))
    return {
        "backward_n": round(m["peak_pull_force_backward_n"], 1),
        "forward_n": round(m["peak_pull_force_forward_n"], 1),
        "fall_rate": m["fall_rate"],
    }


def score(row: dict) -> float:
    """The weaker direction's share of Thor's force (both must be reached)."""
    return min(row["backward_n"] / THOR_BACKWARD_N, row["forward_n"] / THOR_FORWARD_N)


def pick(rows: list[dict], max_fall_rate: float | None = None) -> dict:
    """The row with the best validation score; with `max_fall_rate`, among the rows whose
    validation fall rate is at most that (Thor's goal has falls too: a checkpoint that
    pulls hardest by falling behind the carts it cannot move is not the one to keep),
    and the fewest falls when none is."""

    def key(row: dict) -> tuple[float, float]:
        v = row["validation"]
        excess = 0.0 if max_fall_rate is None else max(v["fall_rate"] - max_fall_rate, 0.0)
        return -excess, score(v)

    return max(rows, key=key)


def spread(values: list[float], std=statistics.pstdev) -> dict:
    """Mean and standard deviation (population by default: the swept checkpoints are all
    of a run's; the seeds of `picks` are a sample, so it passes `statistics.stdev`)."""
    return {"mean": statistics.fmean(values), "std": std(values) if len(values) > 1 else 0.0}


def sweep(rows: list[dict]) -> dict:
    """Mean and population standard deviation of the evaluation numbers over the swept
    checkpoints (backward_n, forward_n, fall_rate), and how many there were."""
    out: dict = {"checkpoints": len(rows)}
    for key in ("backward_n", "forward_n", "fall_rate"):
        out[key] = spread([r["evaluation"][key] for r in rows])
    return out


def picks(evals: list[dict]) -> dict:
    """Over seeds, one `simreal eval` JSON of each seed's picked policy: the peak forces'
    mean and sample standard deviation, and the falls summed over all episodes."""
    return {
        "seeds": len(evals),
        "backward_n": spread([e["peak_pull_force_backward_n"] for e in evals], statistics.stdev),
        "forward_n": spread([e["peak_pull_force_forward_n"] for e in evals], statistics.stdev),
        "falls": sum(round(e["fall_rate"] * e["episodes"]) for e in evals),
        "episodes": sum(e["episodes"] for e in evals),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, nargs="?")
    parser.add_argument(
        "--sweep-of", type=Path, nargs="+", help="existing reports: print their pooled sweep"
    )
    parser.add_argument(
        "--picks-of", type=Path, nargs="+", help="eval JSONs of picked policies, one per seed"
    )
    parser.add_argument(
        "--pick-of", type=Path, help="an existing report: pick again (with --max-fall-rate)"
    )
    parser.add_argument(
        "--max-fall-rate",
        type=float,
        help="pick only among checkpoints falling at most this often on validation",
    )
    add_sweep_options(parser)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an evaluation condition for both protocols, e.g. task.eval_friction=0.7",
    )
    args = parser.parse_args()
    command = " ".join(["python", *sys.argv])
    if args.sweep_of:
        rows = [
            r for report in args.sweep_of for r in json.loads(report.read_text())["checkpoints"]
        ]
        emit({"command": command, "sweep": sweep(rows)}, args.json)
        return
    if args.picks_of:
        evals = [json.loads(path.read_text()) for path in args.picks_of]
        for path, e in zip(args.picks_of, evals, strict=True):
            missing = [k for k in PICK_FIELDS if k not in e]
            if missing:
                sys.exit(f"{path}: not a g1-pull `simreal eval` JSON, no {', '.join(missing)}")
        emit({"command": command, "picks": picks(evals)}, args.json)
        return
    if args.pick_of:
        rows = json.loads(args.pick_of.read_text())["checkpoints"]
        chosen = pick(rows, args.max_fall_rate)
        emit(
            {
                "command": command,
                "max_fall_rate": args.max_fall_rate,
                "picked_on_validation": chosen["checkpoint"],
                "picked_evaluation": chosen["evaluation"],
            },
            args.json,
        )
        return
    if args.run is None:
        parser.error("RUN is required (or --sweep-of REPORT, --picks-of EVAL, --pick-of REPORT)")

    try:
        checkpoints = swept_checkpoints(args.run, args.every, args.last, args.interval)
    except (FileNotFoundError, ValueError) as err:
        sys.exit(str(err))
    rows = []
    for ckpt in checkpoints:
        conditions = tuple(args.set)
        row = {
            "checkpoint": ckpt.name,
            "validation": pulling(ckpt, VALIDATION + conditions),
            "evaluation": pulling(ckpt, conditions),
        }
        rows.append(row)
        print(row, flush=True)
    chosen = pick(rows, args.max_fall_rate)
    emit(
        {
            "command": command,
            "validation_overrides": list(VALIDATION),
            "conditions": list(args.set),
            "episodes": EPISODES,
            "max_fall_rate": args.max_fall_rate,
            "checkpoints": rows,
            "picked_on_validation": chosen["checkpoint"],
            "picked_evaluation": chosen["evaluation"],
            "sweep": sweep(rows),
        },
        args.json,
    )


if __name__ == "__main__":
    main()
