"""quad-hover env-steps/s, simreal on MuJoCo and PyBullet, against gym-pybullet-drones' HoverAviary.

Three columns, measured in alternating rounds in one run so machine noise hits all
alike, all with uniform random per-motor actions in [-1, 1] and a reset whenever an
episode ends (resets inside the timed window):

- simreal MuJoCo: `quad-hover` on mjbatch, N simulations (default 1024), default threads;
- simreal PyBullet: `quad-hover` on `--engine pybullet`, N=64 (PyBullet steps the copies
  one by one); empty, with the reason, where simreal has no PyBullet engine;
- peer: one HoverAviary(obs=KIN, act=RPM), run by bench/_peer_hover_worker.py in the
  peer's own venv, one subprocess per round.

Env-steps/s counts every simulation. simreal starts every episode where HoverAviary does
(at rest 0.1 m above the floor beneath the target) and scales actions as HoverAviary's
RPM mode does, rpm = hover_rpm * (1 + 0.05 a), so both sides fly the same short random
episodes (`--action-rpm-scale 0.5` times quad-hover's own default instead).

The peer is not on PyPI and none of its code is in this repository. Get a checkout of
https://github.com/utiasDSL/gym-pybullet-drones at bench/_peers/gym-pybullet-drones
(git-ignored), then `python bench/peer_hover.py --setup-peer` runs, from the repository
root:

    python3 -m venv bench/_peers/venv
    bench/_peers/venv/bin/python -m pip install "numpy>=2.2" "scipy>=1.15" \\
        "transforms3d>=0.4" "pybullet>=3.2.7" "gymnasium>=1.2" pillow "setuptools<81"
    bench/_peers/venv/bin/python -m pip install --no-deps -e bench/_peers/gym-pybullet-drones

That is what importing HoverAviary needs (its BaseAviary imports pkg_resources, gone
from setuptools 81 on); stable-baselines3, torch, matplotlib and control are only used by
the peer's examples and logger. Without the checkout or venv the peer column is skipped.

    python bench/peer_hover.py [--envs 1024] [--rounds 3] [--json FILE] [--setup-peer]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from simreal.tasks import TaskEnv, make_env
from simreal.tasks.quad_hover import QuadHoverConfig

BENCH_DIR = Path(__file__).resolve().parent
PEER_URL = "https://github.com/utiasDSL/gym-pybullet-drones"
PEER_DIR = BENCH_DIR / "_peers" / "gym-pybullet-drones"
PEER_VENV = BENCH_DIR / "_peers" / "venv"
PEER_PYTHON = PEER_VENV / "bin" / "python"
PEER_WORKER = BENCH_DIR / "_peer_hover_worker.py"
PEER_REQUIREMENTS = (
    "numpy>=2.2",
    "scipy>=1.15",
    "transforms3d>=0.4",
    "pybullet>=3.2.7",
    "gymnasium>=1.2",
    "pillow",
    "setuptools<81",
)
HOVER_AVIARY_RPM_SCALE = 0.05
GOAL_MUJOCO_OVER_PEER = 50.0

Timer = Callable[[], tuple[float, int]]
"""Runs one timed round; returns env-steps/s and the number of episodes that ended."""


def setup_peer() -> None:
    """Create the peer's venv and install HoverAviary's import needs plus the checkout."""
    if not (PEER_DIR / "pyproject.toml").is_file():
        raise SystemExit(f"no checkout at {PEER_DIR}: get a checkout of {PEER_URL} there first")
    subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    pip = [str(PEER_PYTHON), "-m", "pip", "install"]
    subprocess.run([*pip, *PEER_REQUIREMENTS], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(PEER_DIR)], check=True)


def peer_missing() -> str | None:
    """Why the peer column cannot run, or None when it can."""
    if not (PEER_DIR / "pyproject.toml").is_file():
        return f"no checkout of {PEER_URL} at {PEER_DIR.relative_to(BENCH_DIR.parent)}"
    if not PEER_PYTHON.is_file():
        return f"no peer venv at {PEER_VENV.relative_to(BENCH_DIR.parent)}; run with --setup-peer"
    return None


def peer_timer(steps: int, seed: int, details: list[dict]) -> Timer:
    """One HoverAviary per round in a fresh subprocess of the peer's venv."""

    def time_peer() -> tuple[float, int]:
        cmd = [str(PEER_PYTHON), str(PEER_WORKER), "--steps", str(steps), "--seed", str(seed)]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=PEER_DIR.parent)
        if done.returncode:
            raise RuntimeError(f"peer worker failed ({done.returncode}):\n{done.stderr[-2000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        details.append(result)
        return result["env_steps_per_s"], result["episodes_ended"]

    return time_peer


def simreal_env(engine: str, envs: int, rpm_scale: float, seed: int) -> TaskEnv:
    """quad-hover on `engine`, every episode from HoverAviary's start; raises whatever
    building the engine raises."""
    cfg = QuadHoverConfig(random_init_fraction=0.0, action_rpm_scale=rpm_scale)
    env = make_env("quad-hover", cfg, envs, engine=engine, seed=seed)
    env.reset()
    return env


def simreal_timer(env: TaskEnv, steps: int, seed: int) -> Timer:
    rng = np.random.default_rng(seed)

    def time_simreal(n: int = steps) -> tuple[float, int]:
        ended = 0
        t0 = time.perf_counter()
        for _ in range(n):
            step = env.step(rng.uniform(-1.0, 1.0, (env.num_envs, 4)))
            ended += int(np.count_nonzero(step.terminated | step.truncated))
        return n * env.num_envs / (time.perf_counter() - t0), ended

    time_simreal(10)  # warm-up
    return time_simreal


def summarize(rates: list[float], ended: list[int], env_steps: int) -> dict:
    """Median env-steps/s of the rounds; `env_steps` is one round's count."""
    return {
        "env_steps_per_s": float(np.median(rates)),
        "env_steps_per_s_per_round": [round(r) for r in rates],
        "mean_episode_steps": round(env_steps * len(ended) / max(sum(ended), 1), 1),
    }


def run(
    envs: int = 1024,
    pybullet_envs: int = 64,
    steps: int = 300,
    peer_steps: int = 2000,
    rounds: int = 3,
    action_rpm_scale: float = HOVER_AVIARY_RPM_SCALE,
    seed: int = 0,
) -> dict:
    timers: dict[str, Timer] = {}
    sizes: dict[str, int] = {}
    skipped: dict[str, str] = {}
    mujoco = simreal_env("mjbatch", envs, action_rpm_scale, seed)
    timers["simreal_mujoco"] = simreal_timer(mujoco, steps, seed)
    sizes["simreal_mujoco"] = envs * steps
    try:
        pybullet = simreal_env("pybullet", pybullet_envs, action_rpm_scale, seed)
        timers["simreal_pybullet"] = simreal_timer(pybullet, steps, seed)
        sizes["simreal_pybullet"] = pybullet_envs * steps
    except Exception as e:  # any failure to build it leaves the column empty
        skipped["simreal_pybullet"] = f"pybullet engine not available: {type(e).__name__}: {e}"
    peer_details: list[dict] = []
    if reason := peer_missing():
        skipped["peer_hover_aviary"] = f"peer column skipped: {reason}"
    else:
        timers["peer_hover_aviary"] = peer_timer(peer_steps, seed, peer_details)
        sizes["peer_hover_aviary"] = peer_steps
    for message in skipped.values():
        print(message, flush=True)

    rates: dict[str, list[float]] = {name: [] for name in timers}
    ended: dict[str, list[int]] = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            rate, n = timer()
            rates[name].append(rate)
            ended[name].append(n)

    columns: dict[str, dict | None] = dict.fromkeys(
        ("simreal_mujoco", "simreal_pybullet", "peer_hover_aviary")
    )
    for name in timers:
        columns[name] = summarize(rates[name], ended[name], sizes[name])
    columns["simreal_mujoco"].update(envs=envs, threads=mujoco.engine.num_threads)
    if columns["simreal_pybullet"]:
        columns["simreal_pybullet"].update(envs=pybullet_envs)
    if peer_details:
        columns["peer_hover_aviary"].update(
            envs=1,
            reset_share=round(float(np.median([d["reset_share"] for d in peer_details])), 3),
            physics_hz=peer_details[0]["physics_hz"],
            control_hz=peer_details[0]["control_hz"],
            start_xyz=peer_details[0]["start_xyz"],
        )

    def ratio(name: str) -> float | None:
        if columns[name] is None or columns["peer_hover_aviary"] is None:
            return None
        return columns[name]["env_steps_per_s"] / columns["peer_hover_aviary"]["env_steps_per_s"]

    mujoco_ratio = ratio("simreal_mujoco")
    return {
        "rounds": rounds,
        "steps_per_round": steps,
        "peer_steps_per_round": peer_steps,
        "action_rpm_scale": action_rpm_scale,
        **columns,
        "skipped": skipped,
        "ratio_mujoco_over_peer": mujoco_ratio,
        "ratio_pybullet_over_peer": ratio("simreal_pybullet"),
        "goal_mujoco_over_peer": GOAL_MUJOCO_OVER_PEER,
        "goal_met": None if mujoco_ratio is None else mujoco_ratio >= GOAL_MUJOCO_OVER_PEER,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=1024, help="MuJoCo simulations")
    p.add_argument("--pybullet-envs", type=int, default=64, help="PyBullet simulations")
    p.add_argument("--steps", type=int, default=300, help="control steps per simreal round")
    p.add_argument("--peer-steps", type=int, default=2000, help="control steps per peer round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--action-rpm-scale", type=float, default=HOVER_AVIARY_RPM_SCALE)
    p.add_argument("--json", type=Path, help="also write the result here")
    p.add_argument("--setup-peer", action="store_true", help="create the peer's venv first")
    args = p.parse_args(argv)
    if args.setup_peer:
        setup_peer()
    result = run(
        args.envs,
        args.pybullet_envs,
        args.steps,
        args.peer_steps,
        args.rounds,
        args.action_rpm_scale,
    )
    command = "python bench/peer_hover.py " + " ".join(sys.argv[1:] if argv is None else argv)
    result = {"command": command.strip(), **result}
    print("command: " + result["command"])
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    for name in ("simreal_mujoco", "simreal_pybullet", "peer_hover_aviary"):
        column = result[name]
        rate = "-" if column is None else f"{column['env_steps_per_s']:,.0f}"
        n = "" if column is None else f" (N={column['envs']})"
        print(f"{name + n:<28} {rate:>12} env-steps/s")
    for name in ("ratio_mujoco_over_peer", "ratio_pybullet_over_peer"):
        value = result[name]
        print(f"{name:<28} {'-' if value is None else f'{value:,.1f}x':>12}")


if __name__ == "__main__":
    main()
