"""lane-keep env-steps/s against raw mjbatch stepping of the same scene, and where the
time goes.

Three rates, measured in alternating rounds in one process so machine noise hits all
alike, with the same model, simulation count, threads and 5 physics substeps per
control step:

- `raw_nstep`: raw mjbatch, controls written, all substeps in one `step(nstep=5)` call:
  the engine's ceiling for this model;
- `raw_bicycle`: raw mjbatch stepping one substep at a time with the tyre and drive
  forces recomputed before each (what the car's physics needs, without the task);
- `simreal`: the full task (actions, physics, road lookup, LiDAR, captions, rewards,
  resets) with a PID-driven policy, so episodes run their course as in training.

Also the LiDAR's cost per call (180 beams, all simulations).

    python bench/lane_keep_speed.py [--envs 64] [--steps 200] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import mjbatch
import mujoco
import numpy as np

from simreal.robots.car import chassis_wrench
from simreal.tasks import make_env
from simreal.tasks.lane_keep import LaneKeepConfig


def run(envs: int = 64, steps: int = 200, rounds: int = 3, seed: int = 0) -> dict:
    env = make_env("lane-keep", LaneKeepConfig(), envs, seed=seed)
    threads = env.engine.num_threads
    raw = mjbatch.Batch(mujoco.MjModel.from_xml_string(env.mjcf), envs, num_threads=threads)
    qpos, qvel = raw.bind("qpos"), raw.bind("qvel")
    ctrl, xfrc = raw.bind("ctrl"), raw.bind("xfrc_applied")
    pid = env.baseline_policy("pid")
    speed = np.full(envs, 7.0)
    mu = np.full(envs, 0.8)

    def start_raw() -> None:
        raw.reset()
        qvel[:, 0] = 7.0
        ctrl[:] = 0.02

    def time_simreal() -> float:
        obs, _ = env.reset()
        t0 = time.perf_counter()
        for _ in range(steps):
            obs = env.step(pid(obs)).obs
        return steps * envs / (time.perf_counter() - t0)

    def time_raw_nstep() -> float:
        start_raw()
        t0 = time.perf_counter()
        for _ in range(steps):
            ctrl[:] = 0.02
            raw.step(nstep=env.decimation)
        return steps * envs / (time.perf_counter() - t0)

    def time_raw_bicycle() -> float:
        start_raw()
        t0 = time.perf_counter()
        for _ in range(steps):
            for _ in range(env.decimation):
                xfrc[:, env.chassis] = chassis_wrench(
                    qpos[:, 2], qvel[:, 0:2], qvel[:, 2], qpos[:, 3], speed, mu, env.params
                )
                raw.step(nstep=1)
        return steps * envs / (time.perf_counter() - t0)

    def time_lidar() -> float:
        t0 = time.perf_counter()
        for _ in range(steps):
            env.ranges_valid[:] = False
            env._scan()
        return (time.perf_counter() - t0) / steps * 1e3

    rates: dict[str, list[float]] = {
        "raw_nstep": [],
        "raw_bicycle": [],
        "simreal": [],
        "lidar_ms": [],
    }
    time_simreal(), time_raw_nstep()  # warm-up
    for _ in range(rounds):
        rates["raw_nstep"].append(time_raw_nstep())
        rates["raw_bicycle"].append(time_raw_bicycle())
        rates["simreal"].append(time_simreal())
        rates["lidar_ms"].append(time_lidar())
    med = {k: float(np.median(v)) for k, v in rates.items()}
    return {
        "task": "lane-keep",
        "envs": envs,
        "threads": threads,
        "substeps": env.decimation,
        "raw_mjbatch_nstep_env_steps_per_s": med["raw_nstep"],
        "raw_mjbatch_bicycle_env_steps_per_s": med["raw_bicycle"],
        "simreal_env_steps_per_s": med["simreal"],
        "ratio_to_raw_nstep": med["simreal"] / med["raw_nstep"],
        "ratio_to_raw_bicycle": med["simreal"] / med["raw_bicycle"],
        "lidar_ms_per_call": med["lidar_ms"],
        "per_round": {k: [round(x, 1) for x in v] for k, v in rates.items()},
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    result = run(args.envs, args.steps, args.rounds)
    result["command"] = "python bench/lane_keep_speed.py " + " ".join(sys.argv[1:])
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    print(
        f"lane-keep N={args.envs}: simreal {result['simreal_env_steps_per_s']:,.0f} env-steps/s; "
        f"raw mjbatch {result['raw_mjbatch_nstep_env_steps_per_s']:,.0f} (one call per control "
        f"step), {result['raw_mjbatch_bicycle_env_steps_per_s']:,.0f} (with tyre forces per "
        f"substep); LiDAR {result['lidar_ms_per_call']:.2f} ms per call"
    )


if __name__ == "__main__":
    main()
