"""The G1's native motors (`task.actuation=native`) against the default per-substep path.

The G1 tasks write the actuators before every physics substep from Python by default (the
blended command of a late-arriving target, the torque-speed envelope at the joints'
current speed): one engine call per substep. With `actuation=native`, MuJoCo 3.14's own
actuators do both (a `dcmotor` per joint, whose current-controlled driver gives the
envelope, and each actuator's ctrl `delay`), so a control step is one engine call, two
while a latency is under one physics step. Measured side by side in one run:

1. The envelope: at random joint states and targets, the native motor's force against
   `torque_speed_range`'s clip of the PD torque (largest difference).
2. The latency: the command each physics step acts on under MuJoCo's native delay
   (recovered from the actuator force) against the tasks' blend, for latencies in
   physics steps (why under one step the task blends the first step by hand).
3. Agreement and accuracy: the same seeded training environment, actions and
   randomization under both paths (largest joint-angle difference after 10 control
   steps, small actions; then after 3 steps of large actions that saturate the motors,
   each path's error against itself at a 20x finer physics step, evaluation mode).
4. Speed: `env.step` of both paths, alternating rounds, the same actions from the same
   start, with each step's physics time (the engine calls) split out, in training
   (randomized latencies) and in evaluation (nominal latency, one engine call).

    python bench/native_motor.py [--task g1-pull] [--envs 128] [--steps 40] [--rounds 5]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import mujoco
import numpy as np

from simreal.robots.g1 import build_mjcf
from simreal.robots.g1.actuators import ACTUATORS, VELOCITY_LIMITS, torque_speed_range
from simreal.robots.g1.joints import JOINT_NAMES
from simreal.tasks import get_task, make_env

FINE_STEPS = 20
"""The accuracy reference's physics steps per default physics step."""


def _env(task: str, envs: int, actuation: str, seed: int = 0, evaluation: bool = False, fine=1):
    cfg = get_task(task).config_cls()
    cfg.actuation, cfg.evaluation = actuation, evaluation
    cfg.physics_dt, cfg.decimation = cfg.physics_dt / fine, cfg.decimation * fine
    return make_env(task, cfg, envs, seed=seed)


def _native_robot() -> mujoco.MjModel:
    """The G1 alone with native motors, its parameters at full precision (a task scene that
    MuJoCo's model editor re-serializes, g1-pull's, rounds them to 6 digits; the task
    writes every simulation's own at full precision)."""
    return mujoco.MjModel.from_xml_string(build_mjcf(native_motors=True, visual_geoms=False))


def envelope_error(samples: int, seed: int = 0) -> dict:
    """Largest |native motor force - envelope-clipped PD torque| over random states (N m)."""
    native = _native_robot()
    data = mujoco.MjData(native)
    kp = np.array([ACTUATORS[n].kp for n in JOINT_NAMES])
    kd = np.array([ACTUATORS[n].kd for n in JOINT_NAMES])
    limit = np.array([ACTUATORS[n].torque_limit for n in JOINT_NAMES])
    ctrl_low, ctrl_high = native.actuator_ctrlrange[:29].T
    rng = np.random.default_rng(seed)
    worst, clamped = 0.0, 0
    for _ in range(samples):
        qpos = native.qpos0.copy()
        qpos[7:36] += rng.normal(0.0, 0.3, 29)
        qvel = np.zeros(native.nv)
        qvel[6:35] = rng.normal(0.0, 0.8, 29) * VELOCITY_LIMITS
        target = np.clip(qpos[7:36] + rng.normal(0.0, 0.5, 29), ctrl_low, ctrl_high)
        data.qpos[:], data.qvel[:], data.ctrl[:29] = qpos, qvel, target
        mujoco.mj_forward(native, data)
        tau = kp * (target - qpos[7:36]) - kd * qvel[6:35]
        lower, upper = torque_speed_range(qvel[6:35], limit, VELOCITY_LIMITS)
        error = np.abs(data.actuator_force[:29] - np.clip(tau, lower, upper)).max()
        worst = max(worst, float(error))
        clamped += int(((tau < lower) | (tau > upper)).sum())
    return {"samples": samples * 29, "clamped": clamped, "max_abs_error_n_m": worst}


def held_share(latency_substeps: float, substeps: int = 6) -> list[float]:
    """The previous command's share of the command each physics step acts on under
    MuJoCo's native delay: a small step of the first joint's target, read from its force."""
    native = _native_robot()
    native.actuator_delay[:29] = latency_substeps * native.opt.timestep
    data = mujoco.MjData(native)
    mujoco.mj_forward(native, data)
    kp, kd = ACTUATORS[JOINT_NAMES[0]].kp, ACTUATORS[JOINT_NAMES[0]].kd
    old = native.qpos0[7:36] + 0.05
    new = old + 0.02
    data.ctrl[:29] = old
    for _ in range(10):
        mujoco.mj_step(native, data)
    data.ctrl[:29] = new
    shares = []
    for _ in range(substeps):
        q, qdot = float(data.qpos[7]), float(data.qvel[6])
        mujoco.mj_step(native, data)
        acting = q + (data.actuator_force[0] + kd * qdot) / kp
        shares.append(round(float((new[0] - acting) / (new[0] - old[0])), 3) + 0.0)
    return shares


def _joint_angles_after(env, actions: np.ndarray) -> np.ndarray:
    env.reset()
    for action in actions:
        env.step(action)
    return env.engine.qpos[:, 7:36].copy()


def agreement(task: str, envs: int = 16, seed: int = 3) -> dict:
    """Joint-angle differences between the two paths, and their errors at saturation."""
    rng = np.random.default_rng(seed)
    small = (0.5 * rng.normal(size=(10, envs, 29))).astype(np.float32)
    train = {a: _env(task, envs, a, seed=seed) for a in ("substeps", "native")}
    q = {a: _joint_angles_after(env, small) for a, env in train.items()}
    late = train["native"].latency_substeps
    large = (2.0 * rng.normal(size=(3, envs, 29))).astype(np.float32)
    error = {}
    reference = _joint_angles_after(_env(task, envs, "substeps", seed, True, FINE_STEPS), large)
    for a in ("substeps", "native"):
        e = np.abs(_joint_angles_after(_env(task, envs, a, seed, True), large) - reference)
        error[a] = {"max_rad": float(e.max()), "mean_rad": float(e.mean())}
    return {
        "training_small_actions_10_steps_max_diff_rad": float(
            np.abs(q["native"] - q["substeps"]).max()
        ),
        "training_latencies_under_one_step": int(((late > 0) & (late < 1)).sum()),
        "saturating_actions_3_steps_error_vs_fine": error,
        "fine_physics_dt": train["native"].cfg.physics_dt / FINE_STEPS,
    }


def speed(
    task: str, envs: int, steps: int, rounds: int, seed: int = 0, evaluation: bool = False
) -> dict:
    """Milliseconds per control step of `env.step` under both paths, and its physics; in
    training (randomized latencies: two engine calls while any is under one physics step)
    or in evaluation (the nominal latency, one call)."""
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1, 1, (steps, envs, 29)).astype(np.float32)
    built = {
        a: _env(task, envs, a, seed=seed, evaluation=evaluation) for a in ("substeps", "native")
    }
    times: dict[str, list[float]] = {a: [] for a in built}
    physics: dict[str, list[float]] = {a: [] for a in built}
    for round_ in range(rounds + 1):  # the first round warms up
        for a, env in built.items():
            env.reset()
            start, t0 = env.physics_time_s, time.perf_counter()
            for action in actions:
                env.step(action)
            if round_:
                times[a].append(1e3 * (time.perf_counter() - t0) / steps)
                physics[a].append(1e3 * (env.physics_time_s - start) / steps)
    out = {f"{a}_ms_per_step": float(np.median(t)) for a, t in times.items()}
    out.update({f"{a}_physics_ms_per_step": float(np.median(t)) for a, t in physics.items()})
    out["rounds_ms_per_step"] = {a: [round(x, 2) for x in t] for a, t in times.items()}
    out["speedup"] = out["substeps_ms_per_step"] / out["native_ms_per_step"]
    return out


def run(task: str, envs: int, steps: int, rounds: int, samples: int = 2000) -> dict:
    latencies = (0.3, 1.0, 1.5, 2.7, 3.9)
    return {
        "task": task,
        "envs": envs,
        "mujoco": mujoco.__version__,
        "envelope": envelope_error(samples),
        "latency": {
            str(late): {
                "native": held_share(late),
                "task": [round(float(np.clip(late - s, 0.0, 1.0)), 3) for s in range(6)],
            }
            for late in latencies
        },
        "agreement": agreement(task),
        "speed": speed(task, envs, steps, rounds),
        "speed_evaluation": speed(task, envs, steps, rounds, evaluation=True),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="g1-pull")
    p.add_argument("--envs", type=int, default=128)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    out = run(args.task, args.envs, args.steps, args.rounds)
    out["command"] = "python bench/native_motor.py " + " ".join(sys.argv[1:])
    print(json.dumps(out, indent=2))
    e = out["envelope"]
    print(f"command: {out['command']}")
    print(
        f"envelope: dcmotor vs torque_speed_range, max |error| {e['max_abs_error_n_m']:.2g} N m "
        f"over {e['samples']} joint samples ({e['clamped']} clamped)"
    )
    for late, shares in out["latency"].items():
        print(
            f"latency {late} substeps: previous command's share native {shares['native']}"
            f" task {shares['task']}"
        )
    g = out["agreement"]
    err = g["saturating_actions_3_steps_error_vs_fine"]
    print(
        f"agreement: training, 10 steps of small actions: max |dq| "
        f"{g['training_small_actions_10_steps_max_diff_rad']:.1e} rad "
        f"({g['training_latencies_under_one_step']} latencies under one step); 3 steps of "
        f"saturating actions, error against {g['fine_physics_dt'] * 1e3:.2f} ms physics: "
        f"substeps max {err['substeps']['max_rad']:.3f} / mean {err['substeps']['mean_rad']:.4f}"
        f" rad, native max {err['native']['max_rad']:.3f} / mean {err['native']['mean_rad']:.4f}"
    )
    for mode, s in (("training", out["speed"]), ("evaluation", out["speed_evaluation"])):
        print(
            f"{out['task']} N={out['envs']} {mode}, ms per control step: substeps "
            f"{s['substeps_ms_per_step']:.2f} (physics {s['substeps_physics_ms_per_step']:.2f}), "
            f"native {s['native_ms_per_step']:.2f} (physics {s['native_physics_ms_per_step']:.2f})"
            f": {s['speedup']:.2f}x"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
