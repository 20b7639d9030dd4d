"""Why g1-force's force curriculum does not rise: the fall rate of a policy under its
training conditions, with one factor switched off at a time.

The curriculum raises the force cap only while the training fall rate stays under
`forces.raise_below_fall_rate` (0.15). This runs `--sims` simulations of one full
training episode each (20 s, training randomization, the force schedule at the cap
`--cap`) for the policy as trained and with, in turn, no impulsive pushes
(`randomization.push_vel_m_s=0`), no external forces (every `active_prob` 0), and
neither; the fall rates say which one keeps the curriculum down.

    python experiments/g1_force_falls.py results/g1-force/policy.onnx [--sims 64] [--cap 50]
        [--json results/experiments/g1-force-falls/falls.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from simreal.deploy.runtime import OnnxPolicy
from simreal.policies.evaluate import evaluate
from simreal.tasks import make_env
from simreal.tasks.g1_force import G1ForceConfig

CONDITIONS = {
    "as_trained": {},
    "no_pushes": {"push_vel_m_s": 0.0},
    "no_forces": {"active_prob": (0.0, 0.0, 0.0)},
    "no_pushes_no_forces": {"push_vel_m_s": 0.0, "active_prob": (0.0, 0.0, 0.0)},
}


def condition_config(name: str, cap: float) -> G1ForceConfig:
    cfg = G1ForceConfig()
    changes = CONDITIONS[name]
    randomization = cfg.randomization
    if "push_vel_m_s" in changes:
        randomization = dataclasses.replace(randomization, push_vel_m_s=changes["push_vel_m_s"])
    forces = dataclasses.replace(cfg.forces, cap_start_n=cap)
    if "active_prob" in changes:
        forces = dataclasses.replace(forces, active_prob=changes["active_prob"])
    return dataclasses.replace(cfg, randomization=randomization, forces=forces)


def fall_rate(policy: OnnxPolicy, cfg: G1ForceConfig, sims: int, seed: int) -> dict:
    """Falls in the first training episode of every simulation (`policies.evaluate`, which
    counts first episodes only), and their mean length."""
    env = make_env("g1-force", cfg, sims, seed=seed)
    out = evaluate(env, policy)
    return {
        "fall_rate": out["fall_rate"],
        "mean_episode_s": out["episode_length_mean"] * cfg.control_dt,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", type=Path)
    parser.add_argument("--sims", type=int, default=64)
    parser.add_argument("--cap", type=float, default=50.0, help="force cap (N) of the schedule")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    policy = OnnxPolicy(args.policy)
    out = {
        "policy": str(args.policy),
        "sims": args.sims,
        "force_cap_n": args.cap,
        "seed": args.seed,
        "raise_below_fall_rate": G1ForceConfig().forces.raise_below_fall_rate,
        "conditions": {
            name: fall_rate(policy, condition_config(name, args.cap), args.sims, args.seed)
            for name in CONDITIONS
        },
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
