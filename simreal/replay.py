"""Wiring for `simreal replay`: read a rollout log; summarize, plot, render, re-simulate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

HUNG_TASK = "calibrate-excite"
"""Task name in the meta of a hung-robot excitation log (`simreal calibrate excite`)."""


def replay_log(
    log: Path,
    plot: Path | None = None,
    video: Path | None = None,
    resim: bool = False,
    engine: str | None = None,
    calibration: Path | None = None,
    video_fps: float | None = None,
) -> dict[str, Any]:
    """Summary of the log at `log`, plus the re-simulation gap with `resim`.

    Re-simulation rebuilds the logged task (its config from the log) in `engine`
    (default: the engine the log was simulated in) and replays the logged commands.
    With `calibration` (an overlay YAML) it re-simulates twice, with the nominal robot
    (the task config without calibration) and with the calibrated one, and reports both
    gaps (`resim` and `resim_calibrated`) and their comparison (`calibration_gap`).
    A G1 hung-robot log (`simreal calibrate excite`) is re-simulated on the virtual
    robot's own model (SimG1 on its gantry), nominal and with the overlay.
    """
    from simreal.deploy.logs import read_rollout
    from simreal.deploy.replay import plot_rollout, render_video, summary

    rollout = read_rollout(log)
    result = summary(rollout)
    resimulation = None
    if resim:
        meta = rollout.meta
        if meta.task == HUNG_TASK and meta.robot == "g1":
            result.update(_resim_hung(log, calibration))
        else:
            resimulation = _resim_task(rollout, log, engine, calibration, result)
    if plot is not None:
        result["plot"] = str(plot_rollout(rollout, plot, resimulation))
    if video is not None:
        result["video_frames"] = render_video(
            rollout, video, replay_camera(rollout.meta), video_fps
        )
        result["video"] = str(video)
    return result


def replay_camera(meta):
    """The logged task's video camera (tasks/video.py) under the logged task config; None
    (frame the whole model) for a log of no registered task or one without a spec."""
    from simreal.config import from_plain
    from simreal.tasks import TASKS
    from simreal.tasks.video import VIDEO_SPECS

    if meta.task not in TASKS or meta.task not in VIDEO_SPECS:
        return None
    spec = TASKS[meta.task]
    plain = meta.task_config
    cfg = from_plain(spec.config_cls, plain, "task.") if plain else spec.config_cls()
    return VIDEO_SPECS[meta.task].camera(cfg)


def _resim_task(rollout, log: Path, engine: str | None, calibration: Path | None, result: dict):
    from simreal.deploy.logs import resimulate
    from simreal.evaluation import make_eval_env, with_calibration

    meta = rollout.meta
    if not meta.task:
        raise ValueError(f"{log}: the log names no task; --resim rebuilds the task's scene")
    engine = engine or meta.engine or "mjbatch"
    config = {"task": meta.task, "task_config": meta.task_config}
    if calibration is not None:
        nominal_cfg = dict(meta.task_config or {})
        if "calibration" not in nominal_cfg:
            raise ValueError(f"--calibration: task {meta.task!r} takes no calibration overlay")
        nominal_cfg["calibration"] = None
        config = {"task": meta.task, "task_config": nominal_cfg}
    resimulation = resimulate(make_eval_env(config, 1, engine, 0, None), rollout)
    result["resim"] = {"engine": engine, **resimulation.report}
    if calibration is not None:
        cal_config = with_calibration(config, calibration, None)
        calibrated = resimulate(make_eval_env(cal_config, 1, engine, 0, None), rollout)
        result["resim_calibrated"] = {
            "engine": engine,
            "calibration": cal_config["task_config"]["calibration"],
            **calibrated.report,
        }
        result["calibration_gap"] = _compare(resimulation.report, calibrated.report)
    return resimulation


def _mean_joint_rmse(report: dict) -> float | None:
    per_joint = report.get("joint_position_rmse")
    return float(np.sqrt(np.mean(np.square(list(per_joint.values()))))) if per_joint else None


def _compare(nominal: dict, calibrated: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, read in (
        ("base_position_rmse_m", lambda r: r["base_position_rmse_m"]),
        ("joint_position_rmse_rad", _mean_joint_rmse),
    ):
        a, b = read(nominal), read(calibrated)
        if a is None or b is None:
            continue
        out[key] = {"nominal": a, "calibrated": b, "reduction": 1 - b / a if a > 0 else 0.0}
    return out


def hung_resim_rmse(log: Path, overlay) -> dict[str, Any]:
    """Open-loop re-simulation of a hung-robot log on the virtual robot's model with
    `overlay`: joint position RMSE (rad) over the excited joints (those whose commanded
    position moves), overall and per joint."""
    from simreal.calibration.dynamics import resimulate
    from simreal.calibration.logdata import load_hung_log
    from simreal.robots.g1 import JOINT_NAMES

    hung = load_hung_log(
        log, ("joint_position", "joint_velocity", "joint_effort", "command"), "replay --resim"
    )
    excited = np.flatnonzero(np.ptp(hung.cmd["q"], axis=0) > 1e-6)
    err = resimulate(hung, overlay)[:, excited] - hung.q[:, excited]
    per_joint = np.sqrt(np.mean(err**2, axis=0))
    return {
        "joint_position_rmse_rad": float(np.sqrt(np.mean(err**2))),
        "joint_position_rmse": {
            JOINT_NAMES[i]: float(v) for i, v in zip(excited, per_joint, strict=True)
        },
    }


def _resim_hung(log: Path, calibration: Path | None) -> dict[str, Any]:
    from simreal.robots.g1.overlay import Overlay, load_overlay

    model = "virtual G1 on its gantry (SimG1, hang=True), logged tick rate"
    nominal = hung_resim_rmse(log, Overlay())
    out: dict[str, Any] = {"resim": {"model": model, "overlay": None, **nominal}}
    if calibration is not None:
        calibrated = hung_resim_rmse(log, load_overlay(calibration))
        out["resim_calibrated"] = {"model": model, "overlay": str(calibration), **calibrated}
        a, b = nominal["joint_position_rmse_rad"], calibrated["joint_position_rmse_rad"]
        out["calibration_gap"] = {
            "joint_position_rmse_rad": {
                "nominal": a,
                "calibrated": b,
                "reduction": 1 - b / a if a > 0 else 0.0,
            }
        }
    return out
