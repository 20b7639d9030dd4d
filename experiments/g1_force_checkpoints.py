"""Which checkpoint of a g1-force run to keep: each checkpoint's sustained pushes held in
place on a validation ladder, the pick made there, and the evaluation ladder beside it.

The sustained protocol (`task.eval_push.mode=sustained`) is deterministic, and its keys
keep the largest rung held, so neighbouring checkpoints differ by whole rungs. Picking
on the evaluation ladder itself would report the best draw of that noise; this script
picks on another ladder (default 9.5 N rungs up to 190 N; evaluation: 10 N rungs to 200
N), by the weaker direction held in place (the pelvis within 0.5 m through the hold,
`max_sustained_push_{backward,forward}_in_place_n`), ties broken by the weaker direction
survived (`--pick survived`: the other way round). Heading-frame pushes, the protocol's
default.

    python experiments/g1_force_checkpoints.py RUN [--every 4] [--last 6] [--json FILE]
        [--pick in_place|survived]
        [--set task.eval_friction=0.7]   # conditions added to both ladders
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simreal.evaluation import evaluate_policy
from simreal.policies.checkpoint import add_sweep_options, swept_checkpoints
from simreal.reports import emit

SUSTAINED = ("task.eval_push.mode=sustained",)
VALIDATION = (*SUSTAINED, "task.eval_push.max_n=190")
EVALUATION = (*SUSTAINED, "task.eval_push.max_n=200")
EPISODES = 40
KEYS = {
    "backward_in_place_n": "max_sustained_push_backward_in_place_n",
    "forward_in_place_n": "max_sustained_push_forward_in_place_n",
    "backward_n": "max_sustained_push_backward_n",
    "forward_n": "max_sustained_push_forward_n",
    "hold_drift_m": "hold_drift_m",
}


def holding(checkpoint: Path, overrides: tuple[str, ...]) -> dict:
    m = evaluate_policy(checkpoint, episodes=EPISODES, overrides=list(overrides))
    return {short: round(m[key], 3) for short, key in KEYS.items()}


def score(row: dict, pick: str = "in_place") -> tuple[float, float]:
    """(weaker direction held in place, weaker direction survived), N; with `pick`
    "survived" the other way round (a policy that may step with the push, as the
    issue's `max_sustained_push_*_n` count it)."""
    in_place = min(row["backward_in_place_n"], row["forward_in_place_n"])
    survived = min(row["backward_n"], row["forward_n"])
    return (survived, in_place) if pick == "survived" else (in_place, survived)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    add_sweep_options(parser)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a condition for both"
    )
    parser.add_argument(
        "--pick",
        choices=("in_place", "survived"),
        default="in_place",
        help="pick by the weaker direction held in place (default) or survived",
    )
    args = parser.parse_args()
    try:
        checkpoints = swept_checkpoints(args.run, args.every, args.last, args.interval)
    except (FileNotFoundError, ValueError) as err:
        sys.exit(str(err))
    conditions = tuple(args.set)
    rows = []
    for ckpt in checkpoints:
        row = {
            "checkpoint": ckpt.name,
            "validation": holding(ckpt, VALIDATION + conditions),
            "evaluation": holding(ckpt, EVALUATION + conditions),
        }
        rows.append(row)
        print(row, flush=True)
    chosen = max(rows, key=lambda r: score(r["validation"], args.pick))
    emit(
        {
            "command": " ".join(["python", *sys.argv]),
            "validation_overrides": list(VALIDATION),
            "evaluation_overrides": list(EVALUATION),
            "conditions": list(conditions),
            "episodes": EPISODES,
            "picked_by": args.pick,
            "checkpoints": rows,
            "picked_on_validation": chosen["checkpoint"],
            "picked_evaluation": chosen["evaluation"],
        },
        args.json,
    )


if __name__ == "__main__":
    main()
