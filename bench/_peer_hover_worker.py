"""Times gym-pybullet-drones' HoverAviary with random per-motor RPM actions.

Run by bench/peer_hover.py with the peer's own venv python (bench/_peers/venv), never
with simreal's: it imports nothing from simreal. One HoverAviary (KIN observations, RPM
actions, its default 240 Hz physics and 30 Hz control) takes `env.action_space.sample()`
every step and is reset whenever an episode ends, as a training loop would; resets are
inside the timed window. The last line printed is one JSON object.

    bench/_peers/venv/bin/python bench/_peer_hover_worker.py [--steps 2000] [--warmup 50]
"""

from __future__ import annotations

import argparse
import json
import time

from gym_pybullet_drones.envs.HoverAviary import HoverAviary
from gym_pybullet_drones.utils.enums import ActionType, ObservationType


def run(steps: int = 2000, warmup: int = 50, seed: int = 0) -> dict:
    env = HoverAviary(obs=ObservationType.KIN, act=ActionType.RPM)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    episodes_ended = 0
    reset_s = 0.0

    def advance(n: int) -> None:
        nonlocal episodes_ended, reset_s
        for _ in range(n):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                t0 = time.perf_counter()
                env.reset()
                reset_s += time.perf_counter() - t0
                episodes_ended += 1

    advance(warmup)
    episodes_ended, reset_s = 0, 0.0
    t0 = time.perf_counter()
    advance(steps)
    elapsed = time.perf_counter() - t0
    result = {
        "env_steps_per_s": steps / elapsed,
        "steps": steps,
        "seconds": elapsed,
        "episodes_ended": episodes_ended,
        "reset_share": reset_s / elapsed,
        "physics_hz": env.PYB_FREQ,
        "control_hz": env.CTRL_FREQ,
        "start_xyz": [float(v) for v in env.INIT_XYZS[0]],
        "hover_rpm": float(env.HOVER_RPM),
    }
    env.close()
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(json.dumps(run(args.steps, args.warmup, args.seed)), flush=True)


if __name__ == "__main__":
    main()
