"""Could MuJoCo's own actuators take over the G1's motor envelope and command latency?

The G1 tasks write the actuators before every physics substep from Python (the blended
command of a late-arriving target, the torque-speed envelope at the joints' current
speed), so a control step costs one engine call per substep. MuJoCo 3.14 has what could
do both inside one call: a `dcmotor` actuator whose current-controlled driver delivers a
PD torque up to its supply voltage and current limits, and a per-actuator `delay` read
from a ctrl history buffer. This script measures, side by side in one run, whether that
route keeps the model and whether it is faster:

1. The envelope: at random joint states and targets, the force of a `dcmotor`
   (input pos, controller kp/kd, Vmax = no-load speed with K = 1, current limit = torque
   limit) against `torque_speed_range`'s clip of the PD torque (largest difference).
2. The latency: the command each substep acts on under MuJoCo's native delay (recovered
   from the actuator force) against the tasks' blend, for latencies in substeps.
3. Speed: the task's own physics step (4 engine calls and the Python between them)
   against the `dcmotor` model with per-simulation delays stepped in one call, and in two
   calls (one substep, then the rest: the fewest that reproduce a latency under one
   substep, see 2), with the task's per-simulation model fields copied in; alternating
   rounds, the same actions, each from the same start state.

    python bench/native_motor.py [--task g1-pull] [--envs 128] [--steps 40] [--rounds 5]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import mjbatch
import mujoco
import numpy as np

from simreal.robots.g1.actuators import ACTUATORS, VELOCITY_LIMITS, torque_speed_range
from simreal.robots.g1.joints import JOINT_NAMES, JOINTS
from simreal.tasks import get_task, make_env

HISTORY_SAMPLES = 6
"""ctrl samples each actuator keeps: more than the largest randomized latency (4 substeps)
plus the one being read."""

MOTOR_CONSTANT = 1.0
"""K (V s/rad = N m/A): free, since only K/R and the no-load speed Vmax/K enter the force."""

COPIED_FIELDS = (
    "dof_armature",
    "dof_frictionloss",
    "dof_damping",
    "body_mass",
    "body_inertia",
    "body_ipos",
    "geom_friction",
    "jnt_stiffness",
    "qpos_spring",
)
"""The task's per-simulation model fields the native model takes over as they are; its
motors' gains, resistances and current limits are set from the task's randomized scales
(`speed`)."""


def dcmotor_line(name: str) -> str:
    """A G1 joint's motor as a MuJoCo `dcmotor` whose force equals `torque_speed_range`'s
    clip of kp (target - q) - kd qdot: the driver's voltage R/K tau + K qdot, clipped at
    Vmax, gives K/R (V - K qdot) = clip(tau + L qdot / v0, -L, L) - L qdot / v0 with stall
    torque L = K Vmax / R and no-load speed v0 = Vmax / K, and the current limit clips that
    to -L..L: the envelope's driving side falls to zero at v0, its braking side stays L."""
    act, joint = ACTUATORS[name], JOINTS[name]
    no_load_speed = float(VELOCITY_LIMITS[JOINT_NAMES.index(name)])
    vmax = MOTOR_CONSTANT * no_load_speed
    resistance = MOTOR_CONSTANT * vmax / act.torque_limit
    return (
        f'<dcmotor name="{name}" joint="{name}" input="pos" resistance="{resistance:.17g}" '
        f'motorconst="{MOTOR_CONSTANT} {MOTOR_CONSTANT}" '
        f'controller="{act.kp:.17g} 0 {act.kd:.17g} 0 0 {vmax:.17g}" '
        f'saturation="{act.torque_limit:.17g} 0 0" '
        f'ctrlrange="{joint.lower:.9g} {joint.upper:.9g}" '
        f'nsample="{HISTORY_SAMPLES}" interp="linear" delay="0"/>'
    )


def native_mjcf(mjcf: str) -> str:
    """The task's scene with every G1 joint actuator replaced by its `dcmotor`."""
    for name in JOINT_NAMES:
        mjcf, count = re.subn(rf'<general name="{name}"[^>]*/>', dcmotor_line(name), mjcf)
        if count != 1:
            raise ValueError(f"native_mjcf: actuator {name!r} found {count} times in the scene")
    return mjcf


def envelope_error(mjcf: str, samples: int, seed: int = 0) -> dict:
    """Largest |dcmotor force - envelope-clipped PD torque| over random states (N m)."""
    native = mujoco.MjModel.from_xml_string(native_mjcf(mjcf))
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
        worst = max(
            worst, float(np.abs(data.actuator_force[:29] - np.clip(tau, lower, upper)).max())
        )
        clamped += int(((tau < lower) | (tau > upper)).sum())
    return {"samples": samples * 29, "clamped": clamped, "max_abs_error_n_m": worst}


def held_share(mjcf: str, latency_substeps: float, substeps: int = 6) -> list[float]:
    """The previous command's share of the command each substep acts on, under MuJoCo's
    native delay: a small step of the first joint's target, read back from its force."""
    native = mujoco.MjModel.from_xml_string(native_mjcf(mjcf))
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


def speed(task: str, envs: int, steps: int, rounds: int, seed: int = 0) -> dict:
    """Milliseconds per control step: the task's physics step against the native model."""
    env = make_env(task, get_task(task).config_cls(), envs, seed=seed)
    env.reset()
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1, 1, (steps + 10, env.num_envs, env.num_actions)).astype(np.float32)
    for action in actions[:10]:
        env.step(action)
    start = env.engine.qpos.copy(), env.engine.qvel.copy()
    native = mujoco.MjModel.from_xml_string(native_mjcf(env.mjcf))
    batch = mjbatch.Batch(native, envs, num_threads=env.engine.num_threads)
    qpos, qvel, ctrl = batch.bind("qpos"), batch.bind("qvel"), batch.bind("ctrl")
    for name in ("act", "xfrc_applied", "warning", "sensordata"):  # as the task's engine
        batch.bind(name)
    for name in COPIED_FIELDS:
        batch.expand(name)[:] = env.engine.model_field(name)
    limit = env.torque_limit * env.motor_strength  # (N, 29) each simulation's motors
    gain = batch.expand("actuator_gainprm")
    gain[:, :29, 0] = MOTOR_CONSTANT * MOTOR_CONSTANT * VELOCITY_LIMITS / limit  # R
    gain[:, :29, 4] = env.kp * env.kp_scale
    gain[:, :29, 6] = env.kd * env.kd_scale
    current = batch.expand("actuator_forcerange")
    current[:, :29, 0], current[:, :29, 1] = -limit, limit
    batch.expand("actuator_delay")[:, :29] = env.latency_substeps[:, None] * native.opt.timestep

    def task_step() -> None:
        env.simulate()

    def native_one_call() -> None:
        ctrl[:, :29] = env.ctrl_target
        batch.step(nstep=env.decimation)

    def native_two_calls() -> None:
        ctrl[:, :29] = env.ctrl_target
        batch.step(nstep=1)
        batch.step(nstep=env.decimation - 1)

    def timed(step_fn, reset) -> float:
        reset()
        t0 = time.perf_counter()
        for action in actions[10:]:
            env.apply_action(action)  # the task's action-to-target path, on both sides
            step_fn()
        return 1e3 * (time.perf_counter() - t0) / steps

    def reset_task() -> None:
        env.engine.qpos[:], env.engine.qvel[:] = start

    def reset_native() -> None:
        qpos[:], qvel[:] = start

    sides = {
        "task_ms_per_step": (task_step, reset_task),
        "native_one_call_ms_per_step": (native_one_call, reset_native),
        "native_two_calls_ms_per_step": (native_two_calls, reset_native),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _name, (step_fn, reset) in sides.items():  # warm-up
        timed(step_fn, reset)
    for _ in range(rounds):
        for name, (step_fn, reset) in sides.items():
            times[name].append(timed(step_fn, reset))
    out = {name: float(np.median(t)) for name, t in times.items()}
    out["rounds"] = {name: [round(x, 2) for x in t] for name, t in times.items()}
    out["latency_under_one_substep_share"] = float((env.latency_substeps < 1).mean())
    return out


def run(task: str, envs: int, steps: int, rounds: int, samples: int = 2000) -> dict:
    mjcf = make_env(task, get_task(task).config_cls(), 1, seed=0).mjcf
    latencies = (0.3, 1.0, 1.5, 2.7, 3.9)
    return {
        "task": task,
        "envs": envs,
        "mujoco": mujoco.__version__,
        "envelope": envelope_error(mjcf, samples),
        "latency": {
            str(late): {
                "native": held_share(mjcf, late),
                "task": [round(float(np.clip(late - s, 0.0, 1.0)), 3) for s in range(6)],
            }
            for late in latencies
        },
        "speed": speed(task, envs, steps, rounds),
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
    e, s = out["envelope"], out["speed"]
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
    print(
        f"{out['task']} N={out['envs']} ms per control step: task {s['task_ms_per_step']:.2f}, "
        f"native one call {s['native_one_call_ms_per_step']:.2f} "
        f"({s['task_ms_per_step'] / s['native_one_call_ms_per_step']:.2f}x), "
        f"native two calls {s['native_two_calls_ms_per_step']:.2f} "
        f"({s['task_ms_per_step'] / s['native_two_calls_ms_per_step']:.2f}x)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
