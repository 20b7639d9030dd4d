"""Tune lane-keep's classical baselines on training roads only, then report them.

Stanley (cross-track gain) and pure pursuit (look-ahead per speed, shortest look-ahead)
are each run over a small grid on 100 roads of the training bank (`task.road_set=train`;
the same perception, obstacles and off-centre starts as the final evaluation), and the
gains with the lowest pooled lateral RMSE are kept. The held-out roads are not touched
here: the chosen gains are the defaults of `BaselineConfig` (tasks/lane_keep/config.py),
and `simreal eval baseline:NAME --task lane-keep --episodes 100` gives the final numbers.

    python experiments/lane_keep_baselines.py [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys

from simreal.policies.evaluate import evaluate
from simreal.tasks import get_task, make_env

GRID = {
    "stanley": {"stanley_gain": (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0), "stanley_soft_mps": (1.0,)},
    "pure_pursuit": {"pursuit_gain_s": (0.3, 0.45, 0.6, 0.9), "pursuit_min_m": (2.0, 4.0)},
}
KEYS = ("lateral_rmse_pooled_m", "lateral_error_p95_m", "collision_rate", "off_road_rate")


def score(name: str, gains: dict[str, float], roads: int, seed: int) -> dict:
    cfg = get_task("lane-keep").config_cls()
    cfg = dataclasses.replace(
        cfg,
        evaluation=True,
        road_set="train",
        eval_roads=roads,
        baselines=dataclasses.replace(cfg.baselines, **gains),
    )
    env = make_env("lane-keep", cfg, roads, seed=seed)
    result = evaluate(env, env.baseline_policy(name))
    return {"baseline": name, **gains, **{k: result[k] for k in KEYS}}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--roads", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    args = p.parse_args(argv)
    rows, best = [], {}
    for name, grid in GRID.items():
        for values in itertools.product(*grid.values()):
            row = score(name, dict(zip(grid, values, strict=True)), args.roads, args.seed)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if name not in best or row[KEYS[0]] < best[name][KEYS[0]]:
                best[name] = row
    report = {
        "command": "python experiments/lane_keep_baselines.py " + " ".join(sys.argv[1:]),
        "road_set": "train",
        "rows": rows,
        "best": best,
    }
    print(json.dumps(best, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
