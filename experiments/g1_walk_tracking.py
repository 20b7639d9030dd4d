"""Where a g1-walk policy's tracking error comes from: going the wrong speed, or swaying.

`simreal eval` reports the RMSE of the pelvis's instantaneous velocity against the
command. A walking pelvis sways and yaws with every step, so that RMSE mixes two things:
how far the velocity averaged over each held command is from the command (the policy not
going where it is told), and how much the velocity oscillates around that average (the
gait). The errors here pool every counted step of every episode, so they read somewhat
higher than `simreal eval`'s mean of per-episode RMSEs. This runs the task's evaluation
(same commands, ground, friction, settling time) and splits the squared error per command
segment into the two, for the planar velocity and the yaw rate; it also fits the slope of
the segment means against the commands (1: it follows them; 0: it ignores them).

    python experiments/g1_walk_tracking.py POLICY [--episodes 30] [--seed 0] [--json FILE]

POLICY: a run directory, a checkpoint or an ONNX file, as for `simreal eval`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from simreal.evaluation import load_policy, make_eval_env
from simreal.reports import emit


def split_errors(cmd: np.ndarray, vel: np.ndarray, segment: np.ndarray) -> dict:
    """cmd, vel (T, D) over counted steps, segment (T,) ids of held commands: mean squared
    error, its part from segment means off the command (bias) and from the oscillation
    around them (sway), and the least-squares slope of segment means on commands (per
    component)."""
    total = float(np.mean(np.sum(np.square(vel - cmd), axis=1)))
    ids, inverse = np.unique(segment, return_inverse=True)
    means = np.stack([vel[inverse == k].mean(0) for k in range(len(ids))])
    seg_cmd = np.stack([cmd[inverse == k][0] for k in range(len(ids))])
    bias = float(np.mean(np.sum(np.square(means[inverse] - cmd), axis=1)))
    sway = float(np.mean(np.sum(np.square(vel - means[inverse]), axis=1)))
    slope = [
        float(np.dot(seg_cmd[:, d], means[:, d]) / max(np.dot(seg_cmd[:, d], seg_cmd[:, d]), 1e-9))
        for d in range(cmd.shape[1])
    ]
    return {
        "rmse": total**0.5,
        "bias_rms": bias**0.5,
        "sway_rms": sway**0.5,
        "slope": slope,
        "segments": len(ids),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("policy", type=Path)
    p.add_argument("--episodes", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    policy, config = load_policy(args.policy)
    env = make_eval_env(config, args.episodes, config.get("engine", "mjbatch"), args.seed, None)
    if config["task"] != "g1-walk":
        raise SystemExit(
            f"{args.policy}: a {config['task']} policy; this splits g1-walk's tracking"
        )
    obs, _ = env.reset()
    settle = round(env.cfg.eval_walk.settle_s / env.control_dt)
    n, steps = env.num_envs, round(env.cfg.eval_episode_s / env.control_dt)
    alive = np.ones(n, dtype=bool)
    segment = np.zeros(n, dtype=int)
    since = np.zeros(n, dtype=int)
    last = env.command.copy()
    rows: list[tuple] = []
    for _ in range(steps - 1):
        step = env.step(policy(obs))
        obs = step.obs
        alive &= ~np.asarray(step.terminated)
        changed = np.any(env.command != last, axis=1)
        segment[changed] += 1
        since = np.where(changed, 0, since + 1)
        last = env.command.copy()
        vel = env.to_heading(env.engine.qvel[:, 0:3])[:, :2]
        counted = alive & (since >= settle)
        for i in np.flatnonzero(counted):
            rows.append((i, segment[i], *env.command[i], *vel[i], env.base_yaw_rate()[i]))
    data = np.array(rows)
    key = data[:, 0] * 10_000 + data[:, 1]
    report = {
        "command": "python experiments/g1_walk_tracking.py " + " ".join(sys.argv[1:]),
        "policy": str(args.policy),
        "episodes": n,
        "fallen": int((~alive).sum()),
        "planar_velocity_m_s": split_errors(data[:, 2:4], data[:, 5:7], key),
        "yaw_rate_rad_s": split_errors(data[:, 4:5], data[:, 7:8], key),
        "conditions": {
            "foot_friction": env.cfg.eval_friction,
            "terrain": env.cfg.terrain.kind,
            "settle_s": env.cfg.eval_walk.settle_s,
            "seed": args.seed,
        },
    }
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
