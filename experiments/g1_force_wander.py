"""How far a g1-force policy walks under a steady torso push, in its training conditions.

The sustained evaluation pushes backward or forward on the nominal robot; training pushes
in every horizontal direction on a randomized one. This tool loads a checkpoint (or ONNX)
with its run's task config (randomization on unless `--nominal`), applies one torso force
of `--force` N per simulation, each in its own direction (azimuths evenly spaced, in the
robot's heading frame), ramped over `--ramp` s and held to the end, and reports per
direction sector the pelvis's largest horizontal distance from where it stood once the
ramp ended, and the falls. `--force 0` measures the policy's wander with no load.

    python experiments/g1_force_wander.py RUN/checkpoints/model_000149.pt --force 20 \
        [--nominal --friction 0.7] [--blind] [--json F]

`--blind` zeroes the true torso force a diagnostic policy observes (g1-force's
`task.actor_observes_force`), to see how much it leans on it. A checkpoint that estimates
a quantity (`task.actor_estimates_force`, `actor_estimates_cop`) also gets `estimates`:
per quantity, the estimate's RMSE against the truth over the hold, and the mean of
estimate and truth along the push (reports before 2026-11-29 called the force's
`force_estimate`, in N).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from simreal.config import apply_overrides, from_plain
from simreal.evaluation import load_policy
from simreal.reports import emit
from simreal.tasks import get_task, make_env
from simreal.tasks.g1_force.env import blind_to_force

ESTIMATE_UNITS = {"torso_force_oracle": ("N", 1.0), "cop_offset": ("cm", 100.0)}
"""How `estimates` reports each estimated quantity: unit, and its factor from SI."""

SECTORS = {"backward": np.pi, "left": np.pi / 2, "forward": 0.0, "right": -np.pi / 2}
"""Direction sectors (the push's azimuth in the heading frame, +-45 deg around these)."""


def sector_of(azimuth: np.ndarray) -> np.ndarray:
    """Name of the sector each azimuth (rad, heading frame) falls in."""
    names = np.array(list(SECTORS))
    centres = np.array(list(SECTORS.values()))
    gap = np.abs(np.angle(np.exp(1j * (azimuth[:, None] - centres[None]))))
    return names[np.argmin(gap, axis=1)]


def state_estimator(policy_path: Path):
    """The checkpoint's model where it has a state estimator (g1-force's
    `actor_estimates_force` / `actor_estimates_cop`), else None."""
    if policy_path.suffix != ".pt":
        return None
    from simreal.policies.checkpoint import load_actor_critic

    model = load_actor_critic(policy_path)
    return model if model.estimator is not None else None


def estimates_and_truth(model, obs: np.ndarray, env) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{term: ((N, size) the estimate, (N, size) the true value)} for each quantity the
    model estimates (`env.estimate_terms`, in the model's order; heading frame)."""
    import torch

    with torch.inference_mode():
        estimate = model.estimate(torch.from_numpy(obs)).numpy()
    out, col = {}, 0
    for term in env.estimate_terms:
        out[term.name] = (estimate[:, col : col + term.size], term.func(env))
        col += term.size
    return out


def estimate_report(rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]], scale: float):
    """From (estimate, truth, push direction) rows: the estimate's RMSE and the mean
    (p10-p90) of estimate and truth along the push's horizontal direction, in the
    quantity's units times `scale`."""
    est, truth, d = (np.concatenate(part) for part in zip(*rows, strict=True))
    est, truth = est * scale, truth * scale
    along = np.einsum("ij,ij->i", est[:, :2], d[:, :2])
    return {
        "rmse": float(np.sqrt(np.mean(np.square(est - truth).sum(axis=1)))),
        "along_push_mean": float(along.mean()),
        "along_push_p10_p90": np.percentile(along, [10, 90]).round(2).tolist(),
        "truth_along_push_mean": float(np.einsum("ij,ij->i", truth[:, :2], d[:, :2]).mean()),
    }


def wander(
    policy_path: Path,
    force_n: float,
    sims: int,
    seconds: float,
    ramp_s: float,
    nominal: bool,
    friction: float,
    seed: int,
    zero_action: bool = False,
    blind: bool = False,
    overrides: list[str] = (),
    onset_s: float = 0.0,
) -> dict:
    policy, config = load_policy(policy_path)
    if zero_action:  # the PD loop holding the default pose, no policy
        policy = lambda obs: np.zeros((obs.shape[0], 29))  # noqa: E731
    spec = get_task("g1-force")
    plain = config.get("task_config")  # an ONNX file carries none: the task's defaults
    cfg = from_plain(spec.config_cls, plain, "task.") if plain else spec.config_cls()
    sets = [
        "forces.active_prob=[0.0,0.0,0.0]",  # the schedule stays silent: the force is ours
        "forces.fail_on_hold_drift_m=0.0",
        "forces.hold_drift_ends_episode=false",
        "forces.frame=heading",
        f"randomize={str(not nominal).lower()}",
        *overrides,
    ]
    cfg = apply_overrides(cfg, sets)
    env = make_env("g1-force", cfg, sims, "mjbatch", seed)
    if nominal:
        env.set_friction(friction)  # training randomizes it; nominal is evaluation's
    if blind:
        policy = blind_to_force(policy, env)
    azimuth = np.linspace(-np.pi, np.pi, sims, endpoint=False)
    direction = np.stack([np.cos(azimuth), np.sin(azimuth), np.zeros(sims)], axis=1)
    obs, _ = env.reset()
    # one torso event per simulation, from now on and never released (so never resampled)
    schedule = env.schedule
    schedule.onset_s[:, 0] = onset_s
    schedule.ramp_s[:, 0] = ramp_s
    schedule.hold_s[:, 0] = np.inf
    schedule.magnitude_n[:, 0] = force_n
    schedule.direction[:, 0] = direction
    steps = round((onset_s + seconds) / env.control_dt)
    ramp_steps = max(1, round((onset_s + ramp_s) / env.control_dt))
    start_xy = None
    drift, fell, up = np.zeros(sims), np.zeros(sims, dtype=bool), np.ones(sims, dtype=bool)
    applied = 0.0
    estimator = state_estimator(policy_path)
    held: dict[str, list] = {}  # per estimated term: (estimate, truth, direction) while held
    for k in range(steps):
        if estimator is not None and k >= ramp_steps and up.any():
            for name, (est, truth) in estimates_and_truth(estimator, obs, env).items():
                held.setdefault(name, []).append((est[up], truth[up], direction[up]))
        step = env.step(policy(obs))
        obs = step.obs
        applied = max(applied, float(np.linalg.norm(env.external_force[:, 0], axis=1).max()))
        fell |= up & np.asarray(step.terminated)
        up &= ~(np.asarray(step.terminated) | np.asarray(step.truncated))
        xy = env.engine.qpos[:, :2]
        if k + 1 == ramp_steps:
            start_xy = xy.copy()
        elif start_xy is not None:
            drift = np.where(up, np.maximum(drift, np.linalg.norm(xy - start_xy, axis=1)), drift)
    names = sector_of(azimuth)
    sectors = {}
    for name in SECTORS:
        m = names == name
        d = drift[m & ~fell]
        sectors[name] = {
            "sims": int(m.sum()),
            "fell": int(fell[m].sum()),
            "drift_median_m": float(np.median(d)) if d.size else None,
            "drift_over_0.5m": int((d > 0.5).sum()),
        }
    units = {name: ESTIMATE_UNITS.get(name, ("", 1.0)) for name in held}
    estimates = {
        f"{name} ({units[name][0]})": estimate_report(rows, units[name][1])
        for name, rows in held.items()
    }
    return {
        "policy": str(policy_path),
        "force_n": force_n,
        "estimates": estimates or None,
        "zero_action": zero_action,
        "oracle_force_zeroed": blind,
        "largest_torso_force_applied_n": applied,
        "conditions": {
            "randomized": not nominal,
            "seconds": seconds,
            "ramp_s": ramp_s,
            "onset_s": onset_s,
            "seed": seed,
            "task_overrides": list(overrides),
            "engine": "mjbatch",
            "self_collision": cfg.self_collision,
            "foot_friction": friction if nominal else list(cfg.randomization.friction),
        },
        "fell": int(fell.sum()),
        "drift_median_m": float(np.median(drift[~fell])) if (~fell).any() else None,
        "drift_over_0.5m": int((drift[~fell] > 0.5).sum()),
        "sims": sims,
        "sectors": sectors,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("policy", type=Path, help="a g1-force checkpoint, run dir or ONNX")
    p.add_argument("--force", type=float, default=20.0, help="torso force, N")
    p.add_argument("--sims", type=int, default=64)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--ramp", type=float, default=1.0, help="ramp time, s")
    p.add_argument(
        "--onset",
        type=float,
        default=0.0,
        help="s standing unpushed before the ramp (0: from the episode's start); a "
        "recurrent policy's memory starts empty at the start, as on the robot",
    )
    p.add_argument("--nominal", action="store_true", help="no randomization")
    p.add_argument("--friction", type=float, default=0.7, help="foot friction with --nominal")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument(
        "--zero-action",
        action="store_true",
        help="hold the default pose (the policy's config only)",
    )
    p.add_argument(
        "--blind",
        action="store_true",
        help="zero the true torso force a diagnostic policy observes (actor_observes_force)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        help="a task config override on top of the checkpoint's (e.g. "
        "randomization.push_vel_m_s=0.0 where its training had random pushes)",
    )
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    if a.force < 0 or a.sims < 4 or a.seconds <= a.ramp or not 0 < a.friction <= 2 or a.onset < 0:
        p.error(
            "need --force >= 0, --sims >= 4, --seconds > --ramp, --friction in (0, 2], --onset >= 0"
        )
    report = wander(
        a.policy,
        a.force,
        a.sims,
        a.seconds,
        a.ramp,
        a.nominal,
        a.friction,
        a.seed,
        a.zero_action,
        a.blind,
        a.set,
        a.onset,
    )
    emit(report, a.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
