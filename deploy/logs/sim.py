"""Simulated rollouts in and out of logs: record a task episode, replay a log's commands.

Both work on a `TaskEnv` whose first joint is the robot's free-floating base (true of
every simreal robot) and which implements the low-level command hooks
(`command_from_action`, `apply_command`, `joint_state`). What is logged is what the
robot's own sensors and bridge would report, read from simulation 0.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from simreal.deploy.logs.reader import Rollout
from simreal.deploy.logs.rollout import LogMeta, RolloutLog
from simreal.deploy.runtime import reset_policy
from simreal.sim import EngineError
from simreal.tasks import TaskEnv
from simreal.tasks.rotations import quat_to_matrix
from simreal.tasks.signals import task_signals

Policy = Callable[[np.ndarray], np.ndarray]


class SimProbe:
    """Reads simulation 0 of `env` as the robot's sensors would report it, into a log."""

    def __init__(self, env: TaskEnv) -> None:
        model = mujoco.MjModel.from_xml_string(env.mjcf)
        if model.njnt == 0 or model.jnt_type[0] != mujoco.mjtJoint.mjJNT_FREE:
            raise ValueError("logging needs a floating-base robot: the model's first joint free")
        if env.agents_per_sim != 1:
            raise ValueError(f"logging covers one robot per simulation, not {env.agents_per_sim}")
        self.env = env
        self.base_body = int(model.jnt_bodyid[0])
        self.gravity = model.opt.gravity.copy()
        self._last_lin_vel: np.ndarray | None = None

    def base_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Position, orientation (wxyz), world-frame linear and body-frame angular velocity."""
        qpos, qvel = self.env.engine.qpos[0], self.env.engine.qvel[0]
        return qpos[0:3].copy(), qpos[3:7].copy(), qvel[0:3].copy(), qvel[3:6].copy()

    def log_state(self, log: RolloutLog, t: float) -> None:
        """Joint state, IMU, base pose and twist, and the external wrench at time `t`.

        The IMU's specific force is the mean over the control period before `t` (backward
        difference of the base velocity); unknown at the first sample.
        """
        pos, quat, lin_vel, ang_vel_body = self.base_state()
        rot = quat_to_matrix(quat[None])[0]
        joints = [None if a is None else a[0] for a in self.env.joint_state()]
        log.joint_state(t, *joints)
        accel = None
        if self._last_lin_vel is not None:
            accel = rot.T @ ((lin_vel - self._last_lin_vel) / self.env.control_dt - self.gravity)
        self._last_lin_vel = lin_vel
        log.imu(t, quat, ang_vel_body, accel)
        log.base_pose(t, pos, quat)
        log.base_twist(t, lin_vel, rot @ ang_vel_body)
        wrench = self.env.engine.xfrc_applied[0, self.base_body]
        log.wrench(t, wrench[:3], wrench[3:])


def sim_log_meta(env: TaskEnv, /, **fields: Any) -> LogMeta:
    """LogMeta of a rollout of `env`, its current simulator state as the initial state.

    `fields` adds or overrides LogMeta fields (task, task_config, engine, policy).
    """
    deployment = env.deployment_metadata()
    joint_names = tuple(deployment["joint_names"])
    engine = env.engine
    return LogMeta(
        robot=deployment["robot"],
        joint_names=joint_names,
        control_dt=env.control_dt,
        command_fields=tuple(env.command_fields),
        command_tracks=tuple(env.command_tracks),
        observation_names=tuple((name, size) for name, size in env.observation_layout),
        action_names=joint_names if env.num_actions == len(joint_names) else (),
        source="sim",
        mjcf=env.mjcf,
        initial_state={
            "qpos": engine.qpos[0].tolist(),
            "qvel": engine.qvel[0].tolist(),
            "act": engine.act[0].tolist(),
        },
        **fields,
    )


def record_episode(
    env: TaskEnv, policy: Policy, path: str | os.PathLike[str], /, **meta_fields: Any
) -> Path:
    """Run the first episode of simulation 0 from `env.reset()` and log it to `path`.

    Per control step k at t = k * control_dt: the state, the observation, the policy's
    action, the low-level command it maps to (the simulated actuation latency, zero in
    evaluation, delays it further), the task's signals (`meta_fields["task"]`'s, see
    tasks/signals.py) and the loop timing (period control_dt, compute the policy's wall
    time). The state the last command leads to is not logged: the episode
    has ended and the environment has reset it.
    """
    probe = SimProbe(env)
    obs, _ = env.reset()
    reset_policy(policy)  # a recurrent policy starts the logged episode with no memory
    dt = env.control_dt
    signals = task_signals(meta_fields.get("task", ""))
    meta = sim_log_meta(env, signal_names=tuple(s.name for s in signals), **meta_fields)
    with RolloutLog(path, meta) as log:
        for k in range(env.max_episode_steps):
            t = k * dt
            probe.log_state(log, t)
            if signals:
                log.task_signals(t, [s.read(env)[0] for s in signals])
            start = time.perf_counter()
            action = policy(obs)
            compute_s = time.perf_counter() - start
            log.observation(t, obs[0])
            log.action(t, action[0])
            clipped = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
            log.command(t, env.command_from_action(clipped)[0])
            log.loop_timing(t, dt, compute_s)
            step = env.step(action)
            if step.terminated[0] or step.truncated[0]:
                break
            obs = step.obs
    return log.path


@dataclass
class Resimulation:
    """Open-loop replay of a log: the simulated trajectory and its gap to the logged one."""

    t: np.ndarray
    """(J + 1,) control-step times from 0."""
    base_position: np.ndarray
    """(J + 1, 3) simulated base position."""
    joints: dict[str, np.ndarray]
    """Simulated joint position / velocity (J + 1, n_joints), where the robot measures it."""
    report: dict[str, Any]


def resimulate(env: TaskEnv, rollout: Rollout) -> Resimulation:
    """Replay the logged low-level commands open loop in simulation 0 of `env`.

    Starts from the logged initial simulator state and holds each command from its
    stamp to the next, stepping at the logged control rate up to the last logged base
    pose; logged states are compared with the simulated state at the nearest control
    step. The report gives RMSE (and max error) of the base position and per-joint RMSE
    of every joint field both sides have, in SI units.
    """
    meta = rollout.meta
    if meta.initial_state is None:
        raise ValueError(
            f"{rollout.path}: no initial simulator state; --resim needs a log of a simulation"
        )
    for key in ("command", "base_position"):
        if key not in rollout.series:
            raise ValueError(f"{rollout.path}: the log has no {key} messages to replay")
    dt = meta.control_dt
    if abs(env.control_dt - dt) > 1e-9:
        raise ValueError(
            f"control_dt {env.control_dt} of the simulation differs from the log's {dt}"
        )
    commands = rollout.series["command"]
    logged_pos = rollout.series["base_position"]
    steps = round(logged_pos.t[-1] / dt)
    held = np.searchsorted(commands.t, np.arange(steps) * dt + 0.5 * dt, side="right") - 1

    _set_initial_state(env, meta.initial_state)
    positions = [env.engine.qpos[0, 0:3].copy()]
    joints = [env.joint_state()]
    diverged_at = None
    for j in range(steps):
        command = commands.values[max(held[j], 0)]
        env.apply_command(command[None, :, 0] if command.shape[1] == 1 else command[None])
        with contextlib.suppress(EngineError):
            env.simulate()
        env.after_physics()
        if env.engine.unstable()[0]:
            diverged_at = (j + 1) * dt
            break
        positions.append(env.engine.qpos[0, 0:3].copy())
        joints.append(env.joint_state())
    t = np.arange(len(positions)) * dt
    sim_joints = {
        field: np.stack([js[i][0] for js in joints])
        for i, field in enumerate(("position", "velocity", "effort"))
        if joints[0][i] is not None
    }
    report = _gap_report(rollout, t, np.stack(positions), sim_joints)
    if diverged_at is not None:
        report["diverged_at_s"] = diverged_at
    return Resimulation(t, np.stack(positions), sim_joints, report)


def _set_initial_state(env: TaskEnv, state: dict[str, list[float]]) -> None:
    env.reset()
    env.engine.reset(np.array([0]), np.asarray([state["qpos"]]), np.asarray([state["qvel"]]))
    env.engine.act[0] = state.get("act", 0.0)


def _gap_report(
    rollout: Rollout, t: np.ndarray, sim_pos: np.ndarray, sim_joints: dict[str, np.ndarray]
) -> dict[str, Any]:
    dt = rollout.meta.control_dt
    logged = rollout.series["base_position"]
    idx = np.rint(logged.t / dt).astype(int)
    keep = (idx >= 0) & (idx < t.size)
    err = sim_pos[idx[keep]] - logged.values[keep]
    dist = np.linalg.norm(err, axis=1)
    report: dict[str, Any] = {
        "steps": int(t.size - 1),
        "duration_s": float(t[-1]),
        "compared_samples": int(keep.sum()),
        "base_position_rmse_m": float(np.sqrt(np.mean(dist**2))),
        "base_position_max_error_m": float(dist.max()),
        "base_position_rmse_xyz_m": np.sqrt(np.mean(err**2, axis=0)).tolist(),
    }
    for field, sim in sim_joints.items():
        series = rollout.series.get(f"joint_{field}")
        if series is None:
            continue
        idx = np.rint(series.t / dt).astype(int)
        keep = (idx >= 0) & (idx < t.size)
        rmse = np.sqrt(np.mean((sim[idx[keep]] - series.values[keep]) ** 2, axis=0))
        report[f"joint_{field}_rmse"] = dict(
            zip(rollout.meta.joint_names, rmse.tolist(), strict=True)
        )
    return report
