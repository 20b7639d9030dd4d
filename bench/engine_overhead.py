"""simreal's quad-hover env-steps/s against raw mjbatch stepping of the same model.

Both sides use the same MuJoCo model, simulation count, thread count and physics
substeps per control step, and the same random per-motor commands; they run in
alternating rounds in one process so machine noise hits both alike. The raw side
writes controls, steps, and writes the ground start state into the simulations whose
episodes simreal ended at that step (recorded in a first pass), so both integrate the
same trajectories with the same contacts. simreal adds actions to thrust,
observations, rewards, terminations, reset bookkeeping and the instability check.

    python bench/engine_overhead.py [--envs 1024] [--steps 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import mjbatch
import mujoco
import numpy as np

from simreal.robots.crazyflie import CrazyflieParams, motor_thrust
from simreal.tasks import make_env
from simreal.tasks.quad_hover import QuadHoverConfig


def run(envs: int = 1024, steps: int = 200, rounds: int = 5, seed: int = 0) -> dict:
    # Every episode starts at the evaluation start (at rest beneath the target), and the
    # raw side starts and restarts there too, so both simulate the same flights.
    cfg = QuadHoverConfig(random_init_fraction=0.0)
    env = make_env("quad-hover", cfg, envs, seed=seed)
    threads = env.engine.num_threads
    raw = mjbatch.Batch(mujoco.MjModel.from_xml_string(env.mjcf), envs, num_threads=threads)
    raw_ctrl = raw.bind("ctrl")
    params = CrazyflieParams()
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1, 1, (steps, envs, 4)).astype(np.float32)
    rpm = params.hover_rpm * (1 + cfg.action_rpm_scale * actions)
    thrust = motor_thrust(rpm.astype(np.float64), params.kf)

    raw_qpos, raw_qvel = raw.bind("qpos"), raw.bind("qvel")
    env.reset()
    start_qpos = env.engine.qpos[0].copy()  # the task's start: every episode begins here
    ended: list[np.ndarray] = []

    def time_simreal() -> float:
        env.reset()
        ended.clear()
        t0 = time.perf_counter()
        for i in range(steps):
            step = env.step(actions[i])
            ended.append(step.terminated | step.truncated)
        return steps * envs / (time.perf_counter() - t0)

    def time_raw() -> float:
        raw.reset()
        raw_qpos[:] = start_qpos
        t0 = time.perf_counter()
        for i in range(steps):
            raw_ctrl[:] = thrust[i]
            raw.step(nstep=cfg.decimation)
            raw_qpos[ended[i]] = start_qpos
            raw_qvel[ended[i]] = 0.0
        return steps * envs / (time.perf_counter() - t0)

    time_simreal(), time_raw()  # warm-up; also records which episodes end when
    raw_rates, simreal_rates = [], []
    for _ in range(rounds):
        simreal_rates.append(time_simreal())
        raw_rates.append(time_raw())
    drift = float(np.abs(raw_qpos[:, :3] - env.engine.qpos[:, :3]).max())
    ratios = np.asarray(simreal_rates) / np.asarray(raw_rates)
    return {
        "envs": envs,
        "threads": threads,
        "substeps": cfg.decimation,
        "raw_mjbatch_env_steps_per_s": float(np.median(raw_rates)),
        "simreal_env_steps_per_s": float(np.median(simreal_rates)),
        "ratio_median": float(np.median(ratios)),
        "ratio_per_round": [round(float(r), 3) for r in ratios],
        "max_position_gap_m": drift,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=1024)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    result = run(args.envs, args.steps, args.rounds)
    print("command: python bench/engine_overhead.py " + " ".join(sys.argv[1:]))
    print(json.dumps(result, indent=2))
    print(
        f"quad-hover N={result['envs']}: simreal {result['simreal_env_steps_per_s']:,.0f} "
        f"env-steps/s vs raw mjbatch {result['raw_mjbatch_env_steps_per_s']:,.0f} "
        f"-> {100 * result['ratio_median']:.1f} % of raw"
    )


if __name__ == "__main__":
    main()
