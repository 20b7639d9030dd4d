"""What a recurrent g1-force student remembers of the load, and where it fails its teacher.

A DAgger student with memory (`train.model.memory_size`, finding 13 of
results/experiments/g1-force-memory) copies a teacher told the true torso force, but its
imitation loss stalls (0.38 for run28, about 0.5 for run30) and it holds less than half
the teacher's in-place load. Two explanations predict different fixes: the memory does not
encode the load (then a regression target on the memory, as RMA's adaptation module has,
would help), or it does and the actor still maps it badly (then the estimate is not the
gap). This tool rolls the student out in its own training conditions (its run's task
config: random loads, randomized robot, observation noise) with the force cap fixed at
`--cap`, records its memory, its observation, the true torso force (heading frame) and the
teacher's action on the same states, and reports, on held-out simulations:

- how much of the horizontal force's variance an MLP reads from the memory, from one
  observation, and from the two together (R^2, RMSE);
- the student's squared action error against the teacher (the DAgger loss) by the load's
  magnitude, so that one sees whether the loss comes from the loaded states.

    python experiments/g1_force_memory_probe.py RUN/checkpoints/model_000223.pt \
        --cap 90 --json F
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np
from g1_force_estimability import fit, fixed_cap, scores  # a sibling script

from simreal.config import apply_overrides, from_plain
from simreal.policies.checkpoint import load_actor_critic
from simreal.reports import emit
from simreal.rundir import read_config
from simreal.tasks import get_task, make_env
from simreal.tasks.g1_force.env import TORSO_FORCE_ORACLE
from simreal.tasks.terms import observe

FORCE_BINS_N = (0.0, 20.0, 50.0, 80.0, math.inf)
"""Edges of the load magnitudes the imitation error is split by."""


def rollout(checkpoint: Path, sims: int, seconds: float, cap_n: float, seed: int, sets) -> dict:
    """(T, N, .) the student's memory after each step, its observation, the true torso
    force, the student's and the teacher's actions, and (T, N) episode ends."""
    import torch

    config = read_config(checkpoint.parent.parent)
    cfg = from_plain(get_task("g1-force").config_cls, config["task_config"], "task.")
    if not cfg.teacher:
        raise ValueError(f"{checkpoint}: a DAgger student's run (task.teacher set)")
    cfg = apply_overrides(cfg, [*fixed_cap(cap_n), *sets])
    model = load_actor_critic(checkpoint)
    if not model.recurrent:
        raise ValueError(f"{checkpoint}: the student has no memory (model.memory_size=0)")
    env = make_env("g1-force", cfg, sims, "mjbatch", seed)
    obs, _ = env.reset()
    h = model.initial_state(sims)
    steps = round(seconds / env.control_dt)
    out = {key: [] for key in ("memory", "obs", "force", "student", "teacher", "done")}
    for _ in range(steps):
        out["obs"].append(obs.copy())
        out["force"].append(observe((TORSO_FORCE_ORACLE,), env).copy())
        out["teacher"].append(env.expert_action().copy())
        with torch.inference_mode():
            action, h = model.step(torch.from_numpy(obs), h)
        out["memory"].append(h.numpy().copy())
        out["student"].append(action.numpy().copy())
        step = env.step(action.numpy())
        done = np.asarray(step.terminated) | np.asarray(step.truncated)
        h = h * torch.from_numpy(~done).unsqueeze(1)
        out["done"].append(done)
        obs = step.obs
    data = {key: np.stack(value) for key, value in out.items()}
    data["control_dt"] = env.control_dt
    data["conditions"] = {
        "engine": "mjbatch",
        "randomized": bool(cfg.randomize),
        "self_collision": cfg.self_collision,
        "foot_friction": list(cfg.randomization.friction),
        "force_cap_n": cap_n,
        "magnitude_min_fraction": cfg.forces.magnitude_min_fraction,
        "sagittal_halfwidth_rad": cfg.forces.sagittal_halfwidth_rad,
        "seed": seed,
        "task_overrides": list(sets),
    }
    return data


def imitation_by_load(data: dict, skip: int) -> list[dict]:
    """The summed squared action error of the student against the teacher, its share of
    the whole, per load-magnitude bin."""
    err = np.square(data["student"] - data["teacher"]).sum(-1)[skip:].ravel()
    load = np.linalg.norm(data["force"], axis=-1)[skip:].ravel()
    total = max(float(err.sum()), 1e-12)
    rows = []
    for lo, hi in itertools.pairwise(FORCE_BINS_N):
        inside = (load >= lo) & (load < hi)
        rows.append({
            "load_n": [lo, None if math.isinf(hi) else hi],
            "share_of_states": float(inside.mean()),
            "imitation_error": float(err[inside].mean()) if inside.any() else None,
            "share_of_error": float(err[inside].sum() / total),
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", type=Path, help="a recurrent DAgger student's checkpoint")
    p.add_argument("--sims", type=int, default=128)
    p.add_argument("--seconds", type=float, default=16.0)
    p.add_argument("--cap", type=float, default=90.0, help="force cap of the schedule, N")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--set", action="append", default=[], help="a task config override")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    t0 = time.time()
    data = rollout(a.checkpoint, a.sims, a.seconds, a.cap, a.seed, a.set)
    skip = round(1.0 / data["control_dt"])  # the first second: the first load events
    test = np.arange(a.sims) % 4 == 0  # a quarter of the simulations held out
    y = data["force"][skip:, :, :2]  # horizontal: these runs push at elevation 0
    train_y, test_y = y[:, ~test].reshape(-1, 2), y[:, test].reshape(-1, 2)
    inputs = {
        "memory": data["memory"],
        "observation": data["obs"],
        "memory_and_observation": np.concatenate([data["memory"], data["obs"]], axis=2),
    }
    probes = {"constant_guess": scores(np.broadcast_to(train_y.mean(0), test_y.shape), test_y)}
    for name, x in inputs.items():
        x = x[skip:]
        d = x.shape[2]
        pred = fit(x[:, ~test].reshape(-1, d), train_y, x[:, test].reshape(-1, d), test_y,
                   a.seed, a.epochs)  # fmt: skip
        probes[name] = scores(pred, test_y)
    report = {
        "command": "python " + " ".join(sys.argv),
        "checkpoint": str(a.checkpoint),
        "conditions": data["conditions"],
        "samples": int(y.shape[0] * y.shape[1]),
        "held_out_simulations": int(test.sum()),
        "falls_or_drifts_per_simulation": float(data["done"].sum() / a.sims),
        "force_probes": probes,
        "imitation_error_by_load": imitation_by_load(data, skip),
        "seconds": round(time.time() - t0, 1),
    }
    emit(report, a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
