"""How well the torso force can be told from what the G1 measures: a regression test.

Finding 8 of results/experiments/g1-force-lean showed that a g1-force actor told the true
torso force stands under it, and one not told does not. A deployable policy must estimate
that force from its own observation. This tool rolls out a teacher (a checkpoint trained
with `task.actor_observes_force`, acting on the true force) in its training conditions
(random forces, randomized robot, observation noise on), records the policy observation
the robot has (the oracle columns removed) and the true torso force (heading frame), and
fits small MLP regressors on held-out simulations from the last K observations, for each
K of `--history`. It reports the force's RMSE (N) and R^2 per axis beside a constant
guess: how much of the load one observation already tells, and how much a short history
adds.

A teacher told the force reacts to it, so its observation carries what it was told: its
last action (an observation term) and the posture it takes. Regressed on such data, the
force looks easy to read, and an estimator trained that way reads nothing once the
policy acting no longer knows the force. `--blind` has the teacher act with the force read
as zero and `--drop last_action` hides its actions from the regressors: what remains is
the body's own response to the load.

    python experiments/g1_force_estimability.py RUN/checkpoints/model_000390.pt \
        --blind --drop last_action --history 1 5 25 --json F
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from simreal.config import apply_overrides, from_plain
from simreal.evaluation import load_policy
from simreal.reports import emit
from simreal.tasks import get_task, make_env
from simreal.tasks.g1_force.env import COP_OFFSET, TORSO_FORCE_ORACLE, blind_to_force
from simreal.tasks.terms import first_columns, term_columns


def fixed_cap(cap_n: float) -> list[str]:
    """Task overrides that hold every simulation's force cap at `cap_n` (N): a probe
    measures at one load scale, not wherever the curriculum would drift."""
    return [f"forces.cap_start_n={cap_n}", f"forces.cap_min_n={cap_n}", f"forces.cap_max_n={cap_n}"]


def collect(
    policy_path: Path,
    sims: int,
    seconds: float,
    cap_n: float,
    seed: int,
    blind: bool,
    sets: list[str] = (),
    target: str = "force",
    torque: bool = False,
) -> dict:
    """(T, N, n_obs) deployable observations, (T, N, d) the `target` (TARGETS), (T, N)
    episode ends and, with `torque`, (T, N, 29) the motors' torques.
    `blind`: the teacher acts with the true force read as zero, so that its posture does
    not carry what it was told (see the module docstring)."""
    policy, config = load_policy(policy_path)
    spec = get_task("g1-force")
    cfg = from_plain(spec.config_cls, config["task_config"], "task.")
    if not cfg.actor_observes_force:
        raise ValueError(f"{policy_path}: a teacher trained with task.actor_observes_force")
    cfg = apply_overrides(cfg, [*fixed_cap(cap_n), *sets])
    env = make_env("g1-force", cfg, sims, "mjbatch", seed)
    start = first_columns(env.observation_layout)[TORSO_FORCE_ORACLE.name]
    told = policy
    if blind:
        policy = blind_to_force(policy, env)
    obs, _ = env.reset()
    steps = round(seconds / env.control_dt)
    xs, taus, fs, dones = [], [], [], []
    for _ in range(steps):
        xs.append(np.delete(obs, np.s_[start : start + 3], axis=1))
        if torque:  # what the motors apply now: the robot's tau_est
            taus.append(env.joint_torque())
        action = policy(obs)
        if target == "force":  # the true force, before any noise
            fs.append(obs[:, start : start + 3].copy())
        elif target == "action":  # what the teacher told the force does here
            fs.append(action if policy is told else told(obs))
        else:
            fs.append(100.0 * COP_OFFSET.func(env))  # cm
        step = env.step(action)
        obs = step.obs
        dones.append(np.asarray(step.terminated) | np.asarray(step.truncated))
    return {
        "layout": [t for t in env.observation_layout if t[0] != TORSO_FORCE_ORACLE.name],
        "obs": np.stack(xs),
        "joint_torque": np.stack(taus) if torque else None,
        "target": np.stack(fs),
        "done": np.stack(dones),
        "control_dt": env.control_dt,
        "conditions": {
            "engine": "mjbatch",
            "randomized": bool(cfg.randomize),
            "observation_noise": bool(cfg.randomize),
            "self_collision": cfg.self_collision,
            "foot_friction": list(cfg.randomization.friction),
            "force_cap_n": cap_n,
            "seed": seed,
            "teacher_told_the_force": not blind,
            "task_overrides": list(sets),
        },
    }


TARGETS = {
    "force": ("n", "force", "torso force, N"),
    "cop": ("cm", "cop_offset", "quasi-static CoP offset, cm"),
    "action": ("action", "action", "the teacher's action told the force, 29 joints"),
}
"""`--target`: the unit of its scores, its name in the report and what it is."""


def measured_torque(tau: np.ndarray, noise: float, gain_error: float, seed: int) -> np.ndarray:
    """(T, N, 29) torques as a motor's current reading gives them: a per-simulation,
    per-joint gain error (the torque constant, uniform within +-gain_error) and white
    noise (N m)."""
    rng = np.random.default_rng(seed + 1)
    gain = 1.0 + rng.uniform(-gain_error, gain_error, tau.shape[1:])
    return tau * gain + noise * rng.standard_normal(tau.shape)


def episode_starts(done: np.ndarray) -> np.ndarray:
    """(T, N): the step at which each step's episode began (`done` (T, N): episode ends)."""
    first = np.zeros(done.shape, dtype=int)
    start = np.zeros(done.shape[1], dtype=int)
    for t in range(done.shape[0]):
        first[t] = start
        start = np.where(done[t], t + 1, start)
    return first


def windows(obs: np.ndarray, done: np.ndarray, k: int, pool: str = "stack") -> np.ndarray:
    """(T, N, k * n_obs): the last k observations at every step, oldest first; before an
    episode's k-th step the missing ones repeat its first (as a fresh history buffer does).
    pool="mean": (T, N, 2 * n_obs), the current observation and the mean of the last k
    (which averages the sensors' noise out, as a low-pass filter on the robot would)."""
    t_max = obs.shape[0]
    first = episode_starts(done)
    cols = []
    for lag in range(k - 1, -1, -1):
        idx = np.maximum(np.arange(t_max)[:, None] - lag, first)
        cols.append(np.take_along_axis(obs, idx[..., None], axis=0))
    if pool == "mean":
        return np.concatenate([cols[-1], np.mean(cols, axis=0)], axis=2)
    return np.concatenate(cols, axis=2)


def episode_baseline(obs: np.ndarray, done: np.ndarray, first: int, steps: int) -> np.ndarray:
    """(T, N, n_obs): the mean observation over steps [first, steps) of each episode (a
    running mean until `steps`, frozen after; before `first`, the observation itself):
    what a robot that stood still before the load knows of its own unloaded stance, which
    carries the constant parts of the randomization (encoder offsets, torso mass and
    centre of mass). `first` skips the settling after the reset's joint noise."""
    t_max, n, d = obs.shape
    ages = np.arange(t_max)[:, None] - episode_starts(done)
    out = np.empty_like(obs)
    total, count = np.zeros((n, d)), np.zeros(n)
    for t in range(t_max):
        fresh = ages[t] == 0
        total[fresh], count[fresh] = 0.0, 0
        take = (ages[t] >= first) & (ages[t] < steps)
        total[take] += obs[t, take]
        count[take] += 1
        seen = count > 0
        out[t] = obs[t]
        out[t, seen] = total[seen] / count[seen, None]
    return out


def fit(x_train, y_train, x_test, y_test, seed: int, epochs: int) -> np.ndarray:
    """Predictions on x_test of a 256-128 ELU MLP fitted to y_train (Adam, MSE)."""
    torch.manual_seed(seed)
    mu, sd = x_train.mean(0), x_train.std(0) + 1e-3
    ys = y_train.std(0) + 1e-6
    xt = torch.from_numpy(((x_train - mu) / sd).astype(np.float32))
    yt = torch.from_numpy((y_train / ys).astype(np.float32))
    net = nn.Sequential(nn.Linear(xt.shape[1], 256), nn.ELU(), nn.Linear(256, 128), nn.ELU(),
                        nn.Linear(128, y_train.shape[1]))  # fmt: skip
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(xt), generator=gen).split(1024):
            loss = (net(xt[idx]) - yt[idx]).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        pred = net(torch.from_numpy(((x_test - mu) / sd).astype(np.float32))).numpy()
    return pred * ys


def scores(pred: np.ndarray, truth: np.ndarray, unit: str = "n") -> dict:
    err = pred - truth
    var = truth.var(0)
    return {
        f"rmse_{unit}": float(np.sqrt(np.square(err).sum(1).mean())),
        f"rmse_per_axis_{unit}": np.sqrt(np.square(err).mean(0)).astype(float).round(2).tolist(),
        "r2_per_axis": (1.0 - np.square(err).mean(0) / var).astype(float).round(3).tolist(),
        "r2_all_axes": float(1.0 - np.square(err).mean(0).sum() / var.sum()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("teacher", type=Path, help="a checkpoint trained with actor_observes_force")
    p.add_argument("--history", type=int, nargs="+", default=[1, 4, 10])
    p.add_argument("--sims", type=int, default=256)
    p.add_argument("--seconds", type=float, default=12.0)
    p.add_argument("--cap", type=float, default=30.0, help="force cap of the schedule, N")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument(
        "--blind",
        action="store_true",
        help="the teacher acts with the true force read as zero (its posture tells nothing)",
    )
    p.add_argument(
        "--drop",
        nargs="*",
        default=[],
        help="observation terms the regressors do not see (e.g. last_action)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        help="a task config override (e.g. randomize=false, forces.active_prob=[0.8,0,0])",
    )
    p.add_argument(
        "--pool",
        choices=("stack", "mean"),
        default="stack",
        help="the last K observations stacked, or the current one and their mean",
    )
    p.add_argument(
        "--target",
        choices=tuple(TARGETS),
        default="force",
        help="the true torso force (N), the quasi-static centre of pressure's offset (cm), "
        "or the teacher's action told the force (a DAgger student's label: how much of it "
        "the blind observation and its history predict)",
    )
    p.add_argument(
        "--torque-noise",
        type=float,
        default=None,
        help="also give the regressors the motors' torques (the robot's tau_est), with this "
        "white noise (N m) and a per-joint gain error of --torque-gain-error",
    )
    p.add_argument("--torque-gain-error", type=float, default=0.0)
    p.add_argument(
        "--baseline-s",
        type=float,
        default=None,
        help="also give the regressors the mean observation over each episode's first S "
        "seconds (its unloaded stance: pair with --set forces.gap_s=[LO,HI], LO >= S, so that "
        "no load acts then); scores count from S on",
    )
    p.add_argument(
        "--baseline-from-s",
        type=float,
        default=0.0,
        help="the unloaded stance's mean starts this long after a reset (the settling)",
    )
    p.add_argument(
        "--baseline-mode",
        choices=("subtract", "append"),
        default="subtract",
        help="the observations minus the unloaded stance, or both side by side",
    )
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    t0 = time.time()
    torque = a.torque_noise is not None
    data = collect(a.teacher, a.sims, a.seconds, a.cap, a.seed, a.blind, a.set, a.target, torque)
    if a.drop:
        data["obs"] = np.delete(data["obs"], term_columns(data["layout"], a.drop), axis=2)
    if torque:
        data["obs"] = np.concatenate([data["obs"], measured_torque(data["joint_torque"], a.torque_noise, a.torque_gain_error, a.seed)], axis=2)  # fmt: skip
    skip = round(1.0 / data["control_dt"])  # the first second: the schedule's first events
    baseline = None
    if a.baseline_s is not None:
        baseline_steps = max(1, round(a.baseline_s / data["control_dt"]))
        skip = max(skip, baseline_steps)
        settle = round(a.baseline_from_s / data["control_dt"])
        baseline = episode_baseline(data["obs"], data["done"], settle, baseline_steps)[skip:]
    test = np.arange(a.sims) % 4 == 0  # a quarter of the simulations held out
    y = data["target"][skip:]
    unit, name, what = TARGETS[a.target]
    d = y.shape[2]
    train, held = y[:, ~test].reshape(-1, d), y[:, test].reshape(-1, d)
    magnitude = np.linalg.norm(y, axis=2)
    report = {
        "teacher": str(a.teacher),
        "terms_not_seen": a.drop,
        "joint_torque_seen": {"noise_n_m": a.torque_noise, "gain_error": a.torque_gain_error}
        if torque
        else None,
        "history_pooling": a.pool,
        "episode_baseline_s": a.baseline_s,
        "episode_baseline_mode": a.baseline_mode if a.baseline_s is not None else None,
        "episode_baseline_from_s": a.baseline_from_s if a.baseline_s is not None else None,
        "target": what,
        "conditions": data["conditions"],
        "samples": int(y.shape[0] * y.shape[1]),
        "held_out_simulations": int(test.sum()),
        f"{name}_magnitude_{unit}": {
            "mean": float(magnitude.mean()),
            "p95": float(np.percentile(magnitude, 95)),
        },
        "constant_guess": scores(np.broadcast_to(train.mean(0), held.shape), held, unit),
        "by_history": {},
    }
    if baseline is not None:
        report["by_history_with_episode_baseline"] = {}
    for k in a.history:
        x = windows(data["obs"], data["done"], k, a.pool)[skip:]
        variants = [("by_history", x)]
        if baseline is not None:  # the same rows, with the unloaded stance
            if a.baseline_mode == "subtract":  # from every frame of the window
                with_stance = x - np.tile(baseline, (1, 1, x.shape[2] // baseline.shape[2]))
            else:
                with_stance = np.concatenate([x, baseline], axis=2)
            variants.append(("by_history_with_episode_baseline", with_stance))
        for key, xk in variants:
            pred = fit(xk[:, ~test].reshape(-1, xk.shape[2]), train,
                       xk[:, test].reshape(-1, xk.shape[2]), held, a.seed, a.epochs)  # fmt: skip
            report[key][str(k)] = {"seconds": k * data["control_dt"], **scores(pred, held, unit)}
            print(key, k, report[key][str(k)], flush=True)
    report["wall_s"] = round(time.time() - t0, 1)
    emit(report, a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
