"""Wiring for `simreal replay`: read a rollout log; summarize, plot, render, re-simulate."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def replay_log(
    log: Path,
    plot: Path | None = None,
    video: Path | None = None,
    resim: bool = False,
    engine: str | None = None,
) -> dict[str, Any]:
    """Summary of the log at `log`, plus the re-simulation gap with `resim`.

    Re-simulation rebuilds the logged task (its config from the log) in `engine`
    (default: the engine the log was simulated in) and replays the logged commands.
    """
    from simreal.deploy.logs import read_rollout, resimulate
    from simreal.deploy.replay import plot_rollout, render_video, summary
    from simreal.evaluation import make_eval_env

    rollout = read_rollout(log)
    result = summary(rollout)
    resimulation = None
    if resim:
        meta = rollout.meta
        if not meta.task:
            raise ValueError(f"{log}: the log names no task; --resim rebuilds the task's scene")
        engine = engine or meta.engine or "mjbatch"
        config = {"task": meta.task, "task_config": meta.task_config}
        env = make_eval_env(config, 1, engine, 0, None)
        resimulation = resimulate(env, rollout)
        result["resim"] = {"engine": engine, **resimulation.report}
    if plot is not None:
        result["plot"] = str(plot_rollout(rollout, plot, resimulation))
    if video is not None:
        result["video_frames"] = render_video(rollout, video)
        result["video"] = str(video)
    return result
