"""How far a g1-force policy leans into a sustained push, against the lean FAT2 asks for.

FAT2's target lean (tasks/g1/fat2.py) grows with the push and is clipped at the task's
`fat2_max_tilt_rad`. For a horizontal push on the nominal G1's torso the G1 default clip
of 0.35 rad engages near 83 N: above it the largest reward term pays for a lean that no
longer keeps the centre of pressure where the unforced stance had it, and the rest of the
push has to be taken by moving the centre of pressure towards the toes or heels. This
prints, for the nominal robot, the unclipped target against the push and the push where
each clip engages; with a policy it also runs the sustained-push protocol (`simreal
eval`'s `task.eval_push.mode=sustained`) and reports, per rung, the torso's mean lean
over the hold phase beside the (clipped) target, how far it had turned (yaw) by the
hold's last step, how far the pelvis moved over the hold (`hold_drift_m`, horizontal),
and whether it fell.

    python experiments/g1_force_lean.py [POLICY.onnx] [--max-n 200] [--episodes 40]
        [--set task.eval_friction=0.7] [--json FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from simreal.evaluation import load_policy, make_eval_env, with_task_overrides
from simreal.reports import emit
from simreal.tasks import make_env
from simreal.tasks.g1.fat2 import fat2_target_tilt
from simreal.tasks.g1_force import G1ForceConfig

PUSHES_N = tuple(float(f) for f in range(10, 160, 10))
CLIPS_RAD = (0.35, 0.6)


def torso_push_target(env, push_n: float) -> float:
    """Unclipped FAT2 pitch target (rad, forward lean) for a horizontal push of `push_n`
    newtons backward on the torso of `env`'s nominal robot."""
    forces = np.zeros((1, len(env.fat2_points), 3))
    forces[0, 0, 0] = -push_n
    return float(fat2_target_tilt(forces, env.fat2_points, env.fat2_com, env.mass, np.pi)[0, 0])


def clip_engages_n(env, clip_rad: float, hi: float = 1000.0) -> float:
    """The torso push (N) whose target lean equals `clip_rad` (bisection; monotone)."""
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if torso_push_target(env, mid) < clip_rad else (lo, mid)
    return 0.5 * (lo + hi)


def targets_report() -> dict:
    env = make_env("g1-force", G1ForceConfig(), 1, num_threads=1)
    return {
        "robot": "nominal G1 (g1-force model), horizontal push on the torso",
        "mass_kg": env.mass,
        "target_lean_rad": {f"{f:g}": torso_push_target(env, f) for f in PUSHES_N},
        "clip_engages_n": {f"{c:g}": clip_engages_n(env, c) for c in CLIPS_RAD},
    }


def hold_leans(policy_path: Path, max_n: float, episodes: int, overrides: list[str]) -> dict:
    """The sustained protocol with `policy_path`: per simulation its push (signed: < 0
    backward), the torso's mean forward lean and the clipped FAT2 target over the hold
    phase, its yaw change and the pelvis' horizontal distance from where the hold began
    (`hold_drift_m`), both at the hold's last step, and whether it fell."""
    policy, config = load_policy(policy_path)
    sets = ["task.eval_push.mode=sustained", f"task.eval_push.max_n={max_n}", *overrides]
    config = with_task_overrides(config, sets, "g1-force")
    env = make_eval_env(config, episodes, "mjbatch", 0, "g1-force")
    schedule = env.schedule
    obs, _ = env.reset()
    lean_sum = np.zeros(episodes)
    target_sum = np.zeros(episodes)
    count = np.zeros(episodes)
    done = np.zeros(episodes, dtype=bool)
    fell = np.zeros(episodes, dtype=bool)
    push = np.zeros(episodes)
    yaw0, turn = env.yaw(), np.zeros(episodes)
    start_xy, drift = np.full((episodes, 2), np.nan), np.zeros(episodes)
    while not done.all():
        holding = ~done & env.torso_holding(env.episode_step * env.control_dt)
        lean_sum += np.where(holding, env.torso_lean()[:, 0], 0.0)
        target_sum += np.where(holding, env.fat2_target()[:, 0], 0.0)
        count += holding
        turn = np.where(holding, np.angle(np.exp(1j * (env.yaw() - yaw0))), turn)
        xy = env.engine.qpos[:, :2]
        start_xy = np.where((holding & np.isnan(start_xy[:, 0]))[:, None], xy, start_xy)
        drift = np.where(holding, np.linalg.norm(xy - start_xy, axis=1), drift)
        push = np.where(done, push, schedule.magnitude_n[:, 0] * schedule.direction[:, 0, 0])
        step = env.step(policy(obs))
        obs = step.obs
        ended = ~done & (np.asarray(step.terminated) | np.asarray(step.truncated))
        fell |= ended & np.asarray(step.terminated)
        done |= ended
    rows = [
        {
            "push_n": float(push[i]),
            "fell": bool(fell[i]),
            "hold_lean_rad": float(lean_sum[i] / count[i]) if count[i] else None,
            "hold_target_rad": float(target_sum[i] / count[i]) if count[i] else None,
            "turned_rad": float(turn[i]),
            "hold_drift_m": float(drift[i]),
        }
        for i in np.argsort(push)
    ]
    return {
        "policy": str(policy_path),
        "fat2_max_tilt_rad": env.cfg.fat2_max_tilt_rad,
        "conditions": sets,
        "rungs": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", type=Path, nargs="?")
    parser.add_argument("--max-n", type=float, default=200.0)
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = {"targets": targets_report()}
    if args.policy is not None:
        report["sustained"] = hold_leans(args.policy, args.max_n, args.episodes, args.overrides)
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
