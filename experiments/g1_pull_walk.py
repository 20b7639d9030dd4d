"""Does a g1-pull policy walk yet? Falls and progress under training conditions and
without each kind of randomization, before the pulling-force metrics can say anything.

`simreal eval` judges a g1-pull policy by the largest force it holds for 2 s while the
pelvis moves, in evaluation conditions (no randomization, no observation noise, loads of
37.5-300 N). A policy that is still learning to walk scores 0 N there whatever it can
already do. This probe runs the policy's mean action with light loads (cart resistance
`--resistance` N, commanded speeds as in training) under: the run's own training
randomization (`train`), the same with one part removed (`no_obs_noise`, `no_latency`,
`no_randomization`), and the evaluation protocol at the same light load (`eval`). For
each: the share of simulations that fall within `--seconds`, and the pelvis progress
along the pull direction as a share of the commanded distance (walking simulations).

    python experiments/g1_pull_walk.py RUN [--sims 32] [--seconds 8] [--resistance 20]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch

from simreal.config import from_plain
from simreal.evaluation import load_policy
from simreal.reports import emit
from simreal.tasks import get_task, make_env


def conditions(base) -> dict:
    r = base.randomization
    quiet = {"gyro_noise": 0.0, "gravity_noise": 0.0, "joint_pos_noise": 0.0}
    return {
        "train": base,
        "no_obs_noise": dataclasses.replace(
            base, randomization=dataclasses.replace(r, joint_vel_noise=0.0, **quiet)
        ),
        "no_latency": dataclasses.replace(
            base, randomization=dataclasses.replace(r, latency_substeps=(0.0, 0.0))
        ),
        "no_randomization": dataclasses.replace(base, randomize=False),
        "eval": dataclasses.replace(base, evaluation=True),
    }


def probe(policy, cfg, sims: int, seconds: float, resistance: float, seed: int) -> dict:
    cfg = dataclasses.replace(
        cfg,
        load=dataclasses.replace(cfg.load, resistance_spread=(1.0, 1.0)),
        eval_pull=dataclasses.replace(cfg.eval_pull, max_resistance_n=resistance),
    )
    env = make_env("g1-pull", cfg, sims, "mjbatch", seed)
    env.curriculum.restore(resistance)
    obs, _ = env.reset()
    steps = round(seconds / env.control_dt)
    x0 = env.engine.qpos[:, 0].copy()
    fell = np.zeros(sims, dtype=bool)
    for _ in range(steps):
        step = env.step(policy(obs))
        obs = step.obs
        fell |= step.terminated
    progress = (env.engine.qpos[:, 0] - x0) * env.direction
    walk_s = max(steps * env.control_dt - cfg.command.start_delay_s, 0.0)
    commanded = env.speed * walk_s
    walking = ~fell & (env.speed > 0.1)
    share = progress[walking] / commanded[walking]
    return {
        "fall_rate": float(fell.mean()),
        "walking_sims": int(walking.sum()),
        "progress_share_median": float(np.median(share)) if share.size else None,
        "progress_share_mean": float(share.mean()) if share.size else None,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path)
    p.add_argument("--sims", type=int, default=32)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--resistance", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    policy, config = load_policy(args.run)
    if config["task"] != "g1-pull":
        raise SystemExit(f"{args.run}: a {config['task']} policy; this probe is for g1-pull")
    base = from_plain(get_task("g1-pull").config_cls, config["task_config"], "task.")
    report = {
        "command": "python experiments/g1_pull_walk.py " + " ".join(sys.argv[1:]),
        **{
            name: probe(policy, cfg, args.sims, args.seconds, args.resistance, args.seed)
            for name, cfg in conditions(base).items()
        },
    }
    emit(report, args.json)


if __name__ == "__main__":
    main()
