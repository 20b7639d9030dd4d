"""A simreal task's env-steps/s against raw mjbatch stepping of the same model.

Both sides use the same MuJoCo model, simulation count, thread count and physics
substeps per control step; they run in alternating rounds in one process so machine
noise hits both alike. A first pass runs the task with random actions and records,
per control step, the controls and external forces it handed the engine and the
states it wrote into simulations it reset. The raw side replays exactly that: write
controls and forces, step all substeps in one call, write the recorded reset states.
So both integrate the same trajectories with the same contacts, and the ratio is what
simreal's task layer costs: actions to controls, observations, rewards, terminations,
resets, randomization and the instability check.

A third side replays the same on the task's own robots: its per-simulation model fields
(domain randomization: masses, friction, gains, joint friction; a calibration) written at
every episode start and committed as the task commits them. The ratio to it
(`task_robots_ratio_median`) leaves out what MuJoCo itself spends on the randomized
robots, which no task-layer work can remove; the headline ratio keeps the nominal robot.

The gap is split three ways, each timed in the same rounds: the task's own physics
(its engine's step calls, `physics_time_s`) against the raw replay, of which a task that
writes its actuators before every substep (the G1's motor envelope and command latency)
pays the cost of one engine call per substep (`raw_per_substep_env_steps_per_s`: the same
replay, one substep per call); and the task layer proper (the step's time outside
physics; with --groups, physics overlaps the task layer and the split does not add up).

With --groups G the timed task side is `train.env_groups=G`'s environment
(tasks/overlap.py: G groups of envs/G simulations, one group's physics overlapping the
others' task layer); the replay still comes from the one-group pass.

    python bench/engine_overhead.py [--task quad-hover] [--envs 1024] [--steps 200] [--rounds 5]
        [--groups 1] [--set KEY=VALUE ...]

`--set` overrides the task's config on both sides (the raw replay steps the same model),
e.g. `--set actuation=native` for the G1's native motors.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import mjbatch
import mujoco
import numpy as np

from simreal.config import apply_overrides
from simreal.tasks import get_task, make_env


def run(
    task: str = "quad-hover",
    envs: int = 1024,
    steps: int = 200,
    rounds: int = 5,
    seed: int = 0,
    groups: int = 1,
    overrides: list[str] | tuple[str, ...] = (),
) -> dict:
    cfg = apply_overrides(get_task(task).config_cls(), list(overrides), "task.")
    env = make_env(task, cfg, envs, seed=seed)
    stepped = env
    if groups > 1:
        from simreal.tasks.overlap import make_overlapped_env

        stepped = make_overlapped_env(task, cfg, envs, groups, seed)
    threads = env.engine.num_threads

    def replay_side() -> tuple[mjbatch.Batch, dict[str, np.ndarray]]:
        """A raw batch of the task's model and the state fields a replay writes."""
        batch = mjbatch.Batch(mujoco.MjModel.from_xml_string(env.mjcf), envs, num_threads=threads)
        return batch, {
            name: batch.bind(name) for name in ("ctrl", "xfrc_applied", "qpos", "qvel", "act")
        }

    raw = replay_side()
    # The same replay on the task's own robots: its per-simulation model fields (domain
    # randomization, calibration) at every episode start, committed as the task commits
    # them; the motors' force range stays nominal (the envelope rewritten before every
    # substep is the task layer's work).
    robots = replay_side()
    robot_fields: list[str] = []  # known once the first pass has reset (randomized) the task
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1, 1, (steps, env.num_envs, env.num_actions)).astype(np.float32)
    record: dict[str, list] = {}

    physics_s: list[float] = []

    def time_simreal(keep: bool = False) -> float:
        target = env if keep else stepped
        target.reset()
        physics_start = target.physics_time_s
        if keep:
            record.update(start=(env.engine.qpos.copy(), env.engine.qvel.copy()), steps=[])
            robot_fields[:] = [f for f in env.engine.expanded_fields if f != "actuator_forcerange"]
            record["fields"] = {f: env.engine.model_field(f).copy() for f in robot_fields}
            record["reset_fields"] = []
        t0 = time.perf_counter()
        for i in range(steps):
            step = target.step(actions[i])
            if keep:
                sims = np.unique(
                    np.flatnonzero(step.terminated | step.truncated) // env.agents_per_sim
                )
                record["steps"].append(
                    (
                        env.engine.ctrl.copy(),
                        env.engine.xfrc_applied.copy(),
                        sims,
                        env.engine.qpos[sims].copy(),
                        env.engine.qvel[sims].copy(),
                    )
                )
                record["reset_fields"].append(
                    {f: env.engine.model_field(f)[sims].copy() for f in robot_fields}
                )
        wall = time.perf_counter() - t0
        physics_s.append(target.physics_time_s - physics_start)
        return steps * env.num_envs / wall

    def time_raw(side, per_substep: bool = False, fields: list[str] | tuple = ()) -> float:
        """Replay the recorded controls, forces and reset states on `side`, all substeps in
        one call or one per call; with `fields` (the task's robots) also the task's
        per-simulation model fields at every episode start, committed as the task does."""
        batch, st = side
        batch.reset()
        views = {f: batch.expand(f) for f in fields}
        derived = any(f.startswith("body_") for f in fields)  # masses need set_const
        for f, view in views.items():
            view[:] = record["fields"][f]
        if derived:
            batch.set_const()
        st["qpos"][:], st["qvel"][:] = record["start"]
        t0 = time.perf_counter()
        for (ctrl, xfrc, sims, qpos, qvel), reset_fields in zip(
            record["steps"], record["reset_fields"], strict=True
        ):
            st["ctrl"][:] = ctrl
            st["xfrc_applied"][:] = xfrc
            if per_substep:
                for _ in range(env.decimation):
                    batch.step(nstep=1)
            else:
                batch.step(nstep=env.decimation)
            st["qpos"][sims] = qpos
            st["qvel"][sims] = qvel
            st["act"][sims] = 0.0
            if views and sims.size:
                for f, view in views.items():
                    view[sims] = reset_fields[f]
                if derived:
                    batch.set_const(sims)
        return steps * env.num_envs / (time.perf_counter() - t0)

    time_simreal(keep=True), time_raw(raw), time_raw(robots, fields=robot_fields)  # warm-up
    if groups > 1:
        time_simreal()  # the groups' warm-up
    physics_s.clear()
    raw_rates, simreal_rates, substep_rates, robot_rates = [], [], [], []
    for _ in range(rounds):
        simreal_rates.append(time_simreal())
        raw_rates.append(time_raw(raw))
        substep_rates.append(time_raw(raw, per_substep=True))
        robot_rates.append(time_raw(robots, fields=robot_fields))
    ratios = np.asarray(simreal_rates) / np.asarray(raw_rates)
    robot_ratios = np.asarray(simreal_rates) / np.asarray(robot_rates)
    wall_ms = 1e3 * env.num_envs / np.asarray(simreal_rates)  # per control step
    physics_ms = 1e3 * np.asarray(physics_s) / steps
    return {
        "task": task,
        "envs": envs,
        "policy_rows": env.num_envs,
        "threads": threads,
        "groups": groups,
        "substeps": env.decimation,
        "raw_mjbatch_env_steps_per_s": float(np.median(raw_rates)),
        "simreal_env_steps_per_s": float(np.median(simreal_rates)),
        "ratio_median": float(np.median(ratios)),
        "ratio_per_round": [round(float(r), 3) for r in ratios],
        "raw_per_substep_env_steps_per_s": float(np.median(substep_rates)),
        "per_substep_ratio_median": float(np.median(np.asarray(substep_rates) / raw_rates)),
        "simreal_physics_ms_per_step": float(np.median(physics_ms)),
        "simreal_task_layer_ms_per_step": float(np.median(wall_ms - physics_ms)),
        "raw_ms_per_step": float(1e3 * env.num_envs / np.median(raw_rates)),
        "raw_task_robots_env_steps_per_s": float(np.median(robot_rates)),
        "task_robots_ratio_median": float(np.median(robot_ratios)),
        "task_robot_fields": robot_fields,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="quad-hover")
    p.add_argument("--envs", type=int, default=1024)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--groups", type=int, default=1, help="train.env_groups of the task side")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="task config override, as train's --set task.KEY=VALUE (e.g. actuation=native)",
    )
    args = p.parse_args(argv)
    result = run(
        args.task, args.envs, args.steps, args.rounds, groups=args.groups, overrides=args.set
    )
    result["overrides"] = args.set
    print("command: python bench/engine_overhead.py " + " ".join(sys.argv[1:]))
    print(json.dumps(result, indent=2))
    print(
        f"{result['task']} N={result['envs']}: simreal {result['simreal_env_steps_per_s']:,.0f} "
        f"env-steps/s vs raw mjbatch {result['raw_mjbatch_env_steps_per_s']:,.0f} "
        f"-> {100 * result['ratio_median']:.1f} % of raw"
    )
    print(
        f"per control step: raw {result['raw_ms_per_step']:.2f} ms (one substep per call: "
        f"{100 * result['per_substep_ratio_median']:.1f} % of raw's speed); simreal physics "
        f"{result['simreal_physics_ms_per_step']:.2f} ms + task layer "
        f"{result['simreal_task_layer_ms_per_step']:.2f} ms"
    )
    if result["task_robot_fields"]:
        print(
            f"raw on the task's own robots ({len(result['task_robot_fields'])} per-simulation "
            f"model fields): {result['raw_task_robots_env_steps_per_s']:,.0f} env-steps/s -> "
            f"simreal keeps {100 * result['task_robots_ratio_median']:.1f} % of it"
        )


if __name__ == "__main__":
    main()
