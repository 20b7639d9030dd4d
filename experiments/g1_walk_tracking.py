"""Where a g1-walk policy's tracking error comes from: going the wrong speed, or swaying.

`simreal eval` reports the RMSE of the pelvis's instantaneous velocity against the
command. A walking pelvis sways and yaws with every step, so that RMSE mixes two things:
how far the velocity averaged over each held command is from the command (the policy not
going where it is told), and how much the velocity oscillates around that average (the
gait). The errors here pool every counted step of every episode, so they read somewhat
higher than `simreal eval`'s mean of per-episode RMSEs. This runs the task's evaluation
(same commands, ground, friction, settling time) and splits the squared error per command
segment into the two, for the planar velocity (and each of vx, vy) and the yaw rate; it
also fits the slope of the segment means against the commands (1: it follows them; 0: it
ignores them). And it says at what frequencies the yaw rate and the sideways velocity sway
while walking (the share of their variance in bands around the gait's frequency and
above, from windows of 256 control steps of uninterrupted walking), beside the action's
step-to-step change: a sway at the gait frequency is the step's twist or the weight
shifting from foot to foot, one above 3 Hz the policy's jitter.

    python experiments/g1_walk_tracking.py POLICY [--episodes 30] [--seed 0] [--json FILE]
        [--set task.FIELD=V]

POLICY: a run directory, a checkpoint or an ONNX file, as for `simreal eval`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from simreal.evaluation import load_policy, make_eval_env, with_task_overrides
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


BANDS_HZ = ((0.0, 0.9), (0.9, 1.7), (1.7, 3.3), (3.3, 6.0), (6.0, 12.0), (12.0, 25.0))
"""Yaw-rate sway bands: slow drift, the 0.8 s gait's stride frequency (1.25 Hz), its
step frequency (2.5 Hz), and above. A 256-step window (5.12 s at 50 Hz) resolves 0.2 Hz
and its Hann taper spreads a line over +-0.4 Hz, inside these bands."""


def sway_spectrum(signal: np.ndarray, walking: np.ndarray, dt: float, window: int = 256):
    """Share of a signal's variance (about each window's mean) per band of BANDS_HZ, over
    Hann windows of `window` steps, half overlapping, in which the robot walked
    throughout; signal (the yaw rate, a velocity component), walking (T, N). None when no
    window qualifies."""
    taper = np.hanning(window)
    power = []
    for i in range(signal.shape[1]):
        for start in range(0, signal.shape[0] - window + 1, window // 2):
            if walking[start : start + window, i].all():
                x = signal[start : start + window, i]
                power.append(np.abs(np.fft.rfft((x - x.mean()) * taper)) ** 2)
    if not power:
        return None
    mean = np.mean(power, axis=0)[1:]
    freq = np.fft.rfftfreq(window, dt)[1:]
    return {
        f"{lo:g}-{hi:g}_hz": float(mean[(freq >= lo) & (freq < hi)].sum() / mean.sum())
        for lo, hi in BANDS_HZ
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("policy", type=Path)
    p.add_argument("--episodes", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path)
    p.add_argument(
        "--set", action="append", default=[], metavar="task.FIELD=V", help="as for simreal eval"
    )
    args = p.parse_args(argv)
    policy, config = load_policy(args.policy)
    config = with_task_overrides(config, args.set, None)
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
    yaw_series, vel_series, walk_series, actions = [], [], [], []
    for _ in range(steps - 1):
        action = np.asarray(policy(obs))
        step = env.step(action)
        obs = step.obs
        yaw = env.base_yaw_rate().copy()
        vel = env.to_heading(env.engine.qvel[:, 0:3])[:, :2]
        yaw_series.append(yaw)
        vel_series.append(vel)
        walk_series.append(env.walking() & alive & ~np.asarray(step.terminated))
        actions.append(action)
        alive &= ~np.asarray(step.terminated)
        changed = np.any(env.command != last, axis=1)
        segment[changed] += 1
        since = np.where(changed, 0, since + 1)
        last = env.command.copy()
        counted = alive & (since >= settle)
        for i in np.flatnonzero(counted):
            rows.append((i, segment[i], *env.command[i], *vel[i], yaw[i]))
    data = np.array(rows)
    key = data[:, 0] * 10_000 + data[:, 1]
    report = {
        "command": "python experiments/g1_walk_tracking.py " + " ".join(sys.argv[1:]),
        "policy": str(args.policy),
        "episodes": n,
        "fallen": int((~alive).sum()),
        "planar_velocity_m_s": split_errors(data[:, 2:4], data[:, 5:7], key),
        "vx_m_s": split_errors(data[:, 2:3], data[:, 5:6], key),
        "vy_m_s": split_errors(data[:, 3:4], data[:, 6:7], key),
        "yaw_rate_rad_s": split_errors(data[:, 4:5], data[:, 7:8], key),
        "yaw_sway_band_share": sway_spectrum(
            np.array(yaw_series), np.array(walk_series), env.control_dt
        ),
        "vy_sway_band_share": sway_spectrum(
            np.array(vel_series)[..., 1], np.array(walk_series), env.control_dt
        ),
        "action_change_rms": float(np.sqrt(np.mean(np.square(np.diff(actions, axis=0))))),
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
