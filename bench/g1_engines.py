"""The G1 on mjbatch and PyBullet side by side: trajectory agreement and env-steps/s.

Agreement: the open-loop cases of `simreal.sim.g1_crosscheck` (hung chirp, drop,
stand under PD, plus the stand run on until the robot, which open-loop PD does not
balance, has fallen), mjbatch the reference; joint-angle and base-height differences.

Speed: N robots standing under PD at the default pose on the raw engines (no task
layer), an env-step being G1_DECIMATION physics steps (50 Hz control at 5 ms), median
of `--rounds`, both engines timed in turn.

    python bench/g1_engines.py [--envs 1 16 64] [--steps 50] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from simreal.robots.g1.mjcf import build_mjcf
from simreal.sim import g1_crosscheck
from simreal.sim.engine import make_engine

ENGINES = ("mjbatch", "pybullet")
G1_DECIMATION = 4
CASE_DURATIONS = (("chirp", 2.0), ("drop", 1.0), ("stand", 1.0), ("stand", 2.0))


def agreement_rows() -> list[dict]:
    rows = []
    for case, duration in CASE_DURATIONS:
        spec = g1_crosscheck.make_case(case, duration)
        ref = g1_crosscheck.run_case(spec, "mjbatch")
        got = g1_crosscheck.run_case(spec, "pybullet")
        rows.append(
            {"case": case, "duration_s": duration, **g1_crosscheck.agreement(spec, ref, got)}
        )
    return rows


def env_steps_per_s(engine: str, envs: int, steps: int) -> float:
    mjcf = build_mjcf(body_floor_contact=True, visual_geoms=False)
    sim = make_engine(engine, mjcf, envs, num_threads=1)
    model = g1_crosscheck._stand_model()
    ids = np.arange(envs)
    sim.reset(ids, np.tile(model.key_qpos[0], (envs, 1)), np.zeros((envs, model.nv)))
    sim.ctrl[:] = model.key_ctrl[0]
    sim.step(G1_DECIMATION)  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        sim.step(G1_DECIMATION)
    rate = steps * envs / (time.perf_counter() - t0)
    close = getattr(sim, "close", None)
    if close is not None:
        close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    rows = agreement_rows()
    print("agreement, PyBullet against mjbatch (joint angles rad, base height m)")
    print(
        f"{'case':>6} {'s':>4} {'joint max':>10} {'mean':>8} {'worst joint':>26} "
        f"{'height max':>11} {'end ref':>8} {'end pb':>8}"
    )
    for r in rows:
        h = (
            f"{r['height_max_m']:>11.4f} {r['height_end_ref_m']:>8.3f} {r['height_end_other_m']:>8.3f}"
            if "height_max_m" in r
            else f"{'-':>11} {'-':>8} {'-':>8}"
        )
        print(
            f"{r['case']:>6} {r['duration_s']:>4.1f} {r['joint_max_rad']:>10.4f} "
            f"{r['joint_mean_rad']:>8.4f} {r['worst_joint']:>26} {h}"
        )

    speeds: dict[str, dict[int, float]] = {e: {} for e in ENGINES}
    for envs in args.envs:
        samples: dict[str, list[float]] = {e: [] for e in ENGINES}
        for _ in range(args.rounds):
            for engine in ENGINES:
                samples[engine].append(env_steps_per_s(engine, envs, args.steps))
        for engine in ENGINES:
            speeds[engine][envs] = float(np.median(samples[engine]))
    print("\nenv-steps/s (G1 standing under PD, 4 physics steps of 5 ms each, one thread)")
    print(f"{'N':>5} {'mjbatch':>10} {'pybullet':>10} {'ratio':>7}")
    for envs in args.envs:
        mj, pb = speeds["mjbatch"][envs], speeds["pybullet"][envs]
        print(f"{envs:>5} {mj:>10.0f} {pb:>10.0f} {mj / pb:>7.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"agreement": rows, "env_steps_per_s": speeds}, f, indent=2)


if __name__ == "__main__":
    main()
