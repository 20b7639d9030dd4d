"""Looking at a rollout log: a summary, a plot of tracking, actions, IMU and timing, a video.

Works from the log alone (`/simreal/meta` carries the robot's MuJoCo model for the
video); re-simulation, which needs the task, is `simreal.deploy.logs.sim.resimulate`.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np

from simreal.deploy.logs.reader import Rollout
from simreal.deploy.logs.sim import Resimulation

if TYPE_CHECKING:
    from collections.abc import Iterable

    from simreal.sim.render import Camera


def summary(rollout: Rollout) -> dict[str, Any]:
    """Duration, message counts per topic, control steps and loop timing statistics."""
    meta = rollout.meta
    out: dict[str, Any] = {
        "log": str(rollout.path),
        "task": meta.task,
        "robot": meta.robot,
        "source": meta.source,
        "duration_s": rollout.duration_s,
        "messages": {topic: count for topic, (_, count) in rollout.topics.items()},
    }
    if rollout.recovery:
        out["recovery"] = rollout.recovery
    if "command" in rollout.series:
        out["control_steps"] = len(rollout.series["command"].t)
    timing = rollout.series.get("loop_timing")
    if timing is not None:
        period, compute = timing.values[:, 0], timing.values[:, 1]
        out.update(
            loop_period_mean_s=float(period.mean()),
            loop_period_p99_s=float(np.percentile(period, 99)),
            compute_mean_s=float(compute.mean()),
            compute_p99_s=float(np.percentile(compute, 99)),
        )
    return out


def _tracking(rollout: Rollout) -> tuple[str, float] | None:
    """(series key, factor) turning the first command field into the measured joint field."""
    field, to_si = rollout.meta.command_tracks
    key = f"joint_{field}"
    return (key, to_si) if key in rollout.series and "command" in rollout.series else None


def plot_rollout(
    rollout: Rollout, path: str | os.PathLike[str], resim: Resimulation | None = None
) -> Path:
    """Write a PNG: the task's signals (one panel per unit), commanded vs measured per
    joint, base position, actions, IMU rates, timing.

    Joint panels show the measured field the command sets, in the command's unit
    (a drone's rotor speed in RPM). With `resim`, the re-simulated trajectory is dashed.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    meta = rollout.meta
    names = meta.joint_names
    cols = 4
    joint_rows = math.ceil(len(names) / cols)
    units = signal_units(meta.signal_names) if "task_signals" in rollout.series else []
    signal_rows = math.ceil(len(units) / 2)
    height = 2.4 * joint_rows + 3.25 * (2 + signal_rows)
    fig = Figure(figsize=(14, height), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(joint_rows + signal_rows + 2, cols)
    fig.suptitle(f"{meta.task or meta.robot} ({meta.source}): {rollout.path.name}")
    panels = []
    for i, unit in enumerate(units):  # the task's key quantities first, under the title
        ax = fig.add_subplot(grid[i // 2, 2 * (i % 2) : 2 * (i % 2) + 2])
        panels.append((ax, f"{meta.task}: {UNITS.get(unit, unit)}", _task_signals, unit))
    _joint_panels(fig, grid, rollout, resim, cols, first_row=signal_rows)
    lower = signal_rows + joint_rows
    panels += [
        (fig.add_subplot(grid[lower, :2]), "base position (m)", _base_position, resim),
        (fig.add_subplot(grid[lower, 2:]), "policy action", _actions, None),
        (fig.add_subplot(grid[lower + 1, :2]), "IMU angular velocity (rad/s)", _imu, None),
        (fig.add_subplot(grid[lower + 1, 2:]), "loop timing (ms)", _timing, None),
    ]
    for ax, title, draw, extra in panels:
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("t (s)", fontsize=8)
        ax.grid(alpha=0.3)
        if not draw(ax, rollout, extra):
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
        elif ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, ncol=3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, path)
    return path


UNITS = {"n": "force (N)", "m": "distance (m)", "deg": "angle (deg)", "mps": "speed (m/s)"}
"""Panel titles of the unit suffixes that end task signal names (tasks/signals.py)."""


def signal_units(names: tuple[str, ...]) -> list[str]:
    """The unit suffixes of task signal names (`handle_force_n` -> `n`), in first-seen
    order: one panel each."""
    return list(dict.fromkeys(name.rsplit("_", 1)[-1] for name in names))


def _task_signals(ax, rollout: Rollout, unit: str) -> bool:
    series = rollout.series.get("task_signals")
    if series is None:
        return False
    for i, name in enumerate(rollout.meta.signal_names):
        if name.rsplit("_", 1)[-1] == unit:
            ax.plot(series.t, series.values[:, i], lw=1, label=name)
    return True


def _joint_panels(
    fig, grid, rollout: Rollout, resim: Resimulation | None, cols: int, first_row: int = 0
) -> None:
    tracking = _tracking(rollout)
    field, _ = rollout.meta.command_tracks
    unit = rollout.meta.command_fields[0] if rollout.meta.command_fields else ""
    for j, name in enumerate(rollout.meta.joint_names):
        ax = fig.add_subplot(grid[first_row + j // cols, j % cols])
        ax.set_title(f"{name}: {field} ({unit})", fontsize=9)
        ax.grid(alpha=0.3)
        if "command" in rollout.series:
            cmd = rollout.series["command"]
            ax.step(cmd.t, cmd.values[:, j, 0], where="post", lw=1, label="commanded")
        if tracking is not None:
            key, to_si = tracking
            measured = rollout.series[key]
            ax.plot(measured.t, measured.values[:, j] / to_si, lw=1, label="measured")
            if resim is not None and field in resim.joints:
                ax.plot(resim.t, resim.joints[field][:, j] / to_si, "--", lw=1, label="re-sim")
        if j == 0:
            ax.legend(fontsize=7)


def _base_position(ax, rollout: Rollout, resim: Resimulation | None) -> bool:
    pos = rollout.series.get("base_position")
    if pos is None:
        return False
    for i, axis in enumerate("xyz"):
        line = ax.plot(pos.t, pos.values[:, i], lw=1, label=axis)[0]
        if resim is not None:
            ax.plot(resim.t, resim.base_position[:, i], "--", lw=1, color=line.get_color())
    return True


def _plot_columns(ax, t: np.ndarray, values: np.ndarray, labels: Iterable[str]) -> None:
    """One thin line per column of `values` over `t`, labelled in order: the panels that
    draw a series' components (actions, gyro axes, loop timing) draw them alike."""
    for i, label in enumerate(labels):
        ax.plot(t, values[:, i], lw=1, label=label)


def _actions(ax, rollout: Rollout, _: object) -> bool:
    action = rollout.series.get("action")
    if action is None:
        return False
    names = rollout.meta.action_names or [str(i) for i in range(action.values.shape[1])]
    _plot_columns(ax, action.t, action.values, names)
    return True


def _imu(ax, rollout: Rollout, _: object) -> bool:
    gyro = rollout.series.get("imu_angular_velocity")
    if gyro is None:
        return False
    _plot_columns(ax, gyro.t, gyro.values, "xyz")
    return True


def _timing(ax, rollout: Rollout, _: object) -> bool:
    timing = rollout.series.get("loop_timing")
    if timing is None:
        return False
    _plot_columns(ax, timing.t, 1e3 * timing.values, ("period", "compute"))
    return True


def render_video(
    rollout: Rollout,
    path: str | os.PathLike[str],
    camera: Camera | None = None,
    fps: float | None = None,
) -> int:
    """Render the logged base poses (and joint positions the model has) to an MP4 through
    `camera` (None: one that frames the whole model), counting frames on a bar (stderr).

    `fps` (None: the log's control rate, every pose a frame) renders the pose logged at
    or just before each frame's time instead: a minute of a 50 Hz log is 3,000 frames,
    which software rendering on a CPU takes minutes over, where 10-25 fps shows the same
    motion."""
    from tqdm import tqdm

    from simreal.sim.render import VideoRecorder

    meta = rollout.meta
    if not meta.mjcf:
        raise ValueError(f"{rollout.path}: the log carries no MuJoCo model to render")
    # A policy's log has the base pose; the virtual robot's truth log, its odometry.
    for prefix in ("base", "odom"):
        poses = rollout.series.get(f"{prefix}_position")
        if poses is not None:
            orientation = rollout.series[f"{prefix}_orientation"].values
            break
    else:
        raise ValueError(f"{rollout.path}: no /base_pose or /sim/odom messages to render")
    if fps is None:
        fps = round(1.0 / meta.control_dt)
        frames = np.arange(len(poses.t))
    elif fps > 0:
        times = np.arange(poses.t[0], poses.t[-1] + 1e-9, 1.0 / fps)
        frames = np.maximum(np.searchsorted(poses.t, times, side="right") - 1, 0)
    else:
        raise ValueError(f"--video-fps {fps}: must be > 0")
    with VideoRecorder(meta.mjcf, fps=fps, camera=camera) as recorder:
        model = recorder.model
        joint_qpos = _joint_qpos_addresses(model, meta.joint_names)
        positions = rollout.series.get("joint_position")
        qpos = model.qpos0.copy()
        for k in tqdm(frames, desc="rendering", unit="frame", leave=False):
            t = poses.t[k]
            qpos[0:3], qpos[3:7] = poses.values[k], orientation[k]
            if positions is not None and joint_qpos:
                row = min(np.searchsorted(positions.t, t), len(positions.t) - 1)
                for j, adr in joint_qpos.items():
                    qpos[adr] = positions.values[row, j]
            recorder.add_frame(qpos)
        return recorder.save(path)


def _joint_qpos_addresses(model: mujoco.MjModel, names: tuple[str, ...]) -> dict[int, int]:
    """Joint index in the log -> qpos address, for the logged joints the model has."""
    out = {}
    for j, name in enumerate(names):
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid >= 0:
            out[j] = int(model.jnt_qposadr[jid])
    return out
