"""Wiring for `simreal eval` and `simreal export`: load a policy, build the task, run it."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simreal.config import from_plain
from simreal.rundir import read_config

Policy = Callable[[np.ndarray], np.ndarray]


BASELINE_PREFIX = "baseline:"
"""`simreal eval baseline:NAME --task T` evaluates a task's built-in controller (e.g. pid)."""


def is_baseline(path: Path | str) -> bool:
    return str(path).startswith(BASELINE_PREFIX)


def load_policy(path: Path) -> tuple[Policy, dict[str, Any]]:
    """A policy callable and the run config it came with, from a run dir (its latest
    checkpoint), one checkpoint of a run (RUN/checkpoints/model_*.pt: comparing policies
    at equal training budgets) or an ONNX file."""
    if path.suffix == ".onnx":
        from simreal.deploy.runtime import OnnxPolicy

        policy = OnnxPolicy(path)
        meta = policy.raw_metadata
        config = {
            "task": meta["task"],
            "gym": json.loads(meta.get("gym", "false")),
            "engine": "mjbatch",
            "task_config": json.loads(meta["task_config"]) if "task_config" in meta else None,
        }
        return policy, config
    if path.is_dir() or (path.is_file() and path.suffix == ".pt"):
        from simreal.policies.checkpoint import latest_checkpoint, load_actor_critic
        from simreal.policies.evaluate import model_policy

        if path.is_dir():
            config, ckpt = read_config(path), latest_checkpoint(path / "checkpoints")
            if ckpt is None:
                raise FileNotFoundError(f"{path}: run has no checkpoint yet")
        else:
            config, ckpt = read_config(path.parent.parent), path
        return model_policy(load_actor_critic(ckpt)), config
    raise FileNotFoundError(f"{path}: neither a run directory, a .pt checkpoint nor an .onnx file")


def make_eval_env(config: dict[str, Any], num_envs: int, engine: str, seed: int, task: str | None):
    if config.get("gym"):
        from simreal.policies.gym_env import GymVecEnv

        return GymVecEnv(task or config["task"], num_envs, seed=seed)
    from simreal.tasks import get_task, make_env

    spec = get_task(task or config["task"])
    plain = config.get("task_config") if spec.name == config["task"] else None
    task_cfg = from_plain(spec.config_cls, plain, "task.") if plain else spec.config_cls()
    return make_env(
        spec.name, dataclasses.replace(task_cfg, evaluation=True), num_envs, engine, seed
    )


def episode_budget(config: dict[str, Any], task: str | None):
    """The evaluated task's EpisodeBudget (tasks/episodes.py) under the run's config."""
    from simreal.tasks.episodes import DEFAULT_EPISODES, EpisodeBudget
    from simreal.tasks.episodes import episode_budget as task_budget

    if config.get("gym"):
        return EpisodeBudget(DEFAULT_EPISODES, 0, "")
    from simreal.tasks import get_task

    spec = get_task(task or config["task"])
    plain = config.get("task_config") if spec.name == config["task"] else None
    cfg = from_plain(spec.config_cls, plain, "task.") if plain else spec.config_cls()
    return task_budget(spec.name, cfg)


def with_task_overrides(config: dict[str, Any], overrides: list[str], task: str | None):
    """The run config with `task.FIELD=VALUE` overrides applied to its task config."""
    if not overrides:
        return config
    from simreal.config import apply_overrides, to_plain
    from simreal.tasks import get_task
    from simreal.training import split_overrides

    task_items, train_items = split_overrides(overrides)
    if train_items or config.get("gym"):
        raise ValueError("eval --set takes task.FIELD=VALUE overrides of a simreal task only")
    spec = get_task(task or config["task"])
    plain = config.get("task_config") if spec.name == config["task"] else None
    base = from_plain(spec.config_cls, plain, "task.") if plain else spec.config_cls()
    cfg = apply_overrides(base, task_items, "task.")
    return {**config, "task": spec.name, "task_config": to_plain(cfg)}


def with_calibration(config: dict[str, Any], calibration: Path | None, task: str | None):
    """The run config with its task's `calibration` set to `calibration` (overriding the
    one it was trained with); unchanged when None."""
    if calibration is None:
        return config
    if config.get("gym"):
        raise ValueError("--calibration needs a simreal task, not a Gymnasium env")
    from simreal.config import to_plain
    from simreal.tasks import get_task
    from simreal.training import apply_calibration

    spec = get_task(task or config["task"])
    plain = config.get("task_config") if spec.name == config["task"] else None
    base = from_plain(spec.config_cls, plain, "task.") if plain else spec.config_cls()
    cfg = apply_calibration(base, spec.name, calibration)
    return {**config, "task": spec.name, "task_config": to_plain(cfg)}


def evaluate_policy(
    path: Path,
    task: str | None = None,
    episodes: int | None = None,
    engine: str = "mjbatch",
    seed: int = 0,
    video: Path | None = None,
    log: Path | None = None,
    overrides: list[str] | None = None,
    calibration: Path | None = None,
) -> dict[str, Any]:
    from simreal.policies.evaluate import evaluate

    if log is not None:
        from simreal.deploy.logs import check_new_bag

        check_new_bag(log)  # before the evaluation, not after it
    baseline = str(path).removeprefix(BASELINE_PREFIX) if is_baseline(path) else None
    if baseline is not None:
        if task is None:
            raise ValueError(f"eval {path}: a baseline needs --task")
        policy, config = None, {"task": task, "gym": False, "task_config": None}
    else:
        policy, config = load_policy(path)
    config = with_task_overrides(config, overrides or [], task)
    config = with_calibration(config, calibration, task)
    if video is not None:
        check_video(config, task)  # before the evaluation, not after it
    from simreal.tasks.episodes import shortfall_warning

    budget = episode_budget(config, task)
    episodes = episodes or budget.default
    warning = shortfall_warning(task or config["task"], episodes, budget)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    env = make_eval_env(config, episodes, engine, seed, task)
    if baseline is not None:
        if not hasattr(env, "baseline_policy"):
            raise ValueError(f"eval {path}: task {task!r} has no baselines")
        policy = env.baseline_policy(baseline)
    metrics = {"policy": str(path), "task": task or config["task"], "engine": engine}
    conditions = getattr(env, "evaluation_conditions", None)
    if conditions is not None:  # beside the metrics: what the numbers hold under
        metrics.update(conditions())
    cal = (config.get("task_config") or {}).get("calibration")
    if cal:
        metrics["calibration"] = cal
    metrics.update(evaluate(env, policy))
    if warning:
        metrics["warning"] = warning
    if video is not None:
        metrics["video"] = str(video)
        metrics["video_frames"] = record_video(env, policy, video, metrics["task"])
    if log is not None:
        metrics["log"] = str(record_log(path, policy, config, task, engine, seed, log))
    return metrics


def record_log(
    policy_path: Path,
    policy: Policy,
    config: dict[str, Any],
    task: str | None,
    engine: str,
    seed: int,
    log: Path,
) -> Path:
    """Log the first evaluation episode of simulation 0 as a rosbag2 directory `log`.

    A fresh one-simulation environment runs it: evaluation episodes start alike and
    sample nothing, so it is simulation 0's first episode, from an untouched simulator
    state that `simreal replay --resim` reproduces exactly.
    """
    from simreal.config import to_plain
    from simreal.deploy.logs import record_episode

    if config.get("gym"):
        raise ValueError("--log needs a simreal task, not a Gymnasium env")
    env = make_eval_env(config, 1, engine, seed, task)
    return record_episode(
        env,
        policy,
        log,
        task=task or config["task"],
        task_config=to_plain(env.cfg),
        engine=engine,
        policy=str(policy_path),
    )


def check_video(config: dict[str, Any], task: str | None) -> None:
    """Refuse --video for what cannot be filmed: a Gymnasium env, a task without a spec."""
    if config.get("gym"):
        raise ValueError("--video needs a simreal task (MuJoCo scene), not a Gymnasium env")
    from simreal.tasks.video import video_spec

    video_spec(task or config["task"])


def record_video(
    env, policy: Policy, path: Path, task: str, width: int = 640, height: int = 480
) -> int:
    """Render the first episode of simulation 0 with MuJoCo's offscreen renderer, through
    the task's video spec (tasks/video.py: camera, markers); return the frame count."""
    from simreal.sim.render import VideoRecorder, select_gl_backend
    from simreal.tasks.video import video_spec

    spec = video_spec(task)
    select_gl_backend()
    fps = round(1.0 / getattr(env, "video_dt", env.control_dt))
    camera = spec.camera(env.cfg)
    frames = getattr(env, "video_frames", env.max_episode_steps)
    with VideoRecorder(env.mjcf, width=width, height=height, fps=fps, camera=camera) as recorder:
        render_episode(env, policy, recorder, spec, frames)
        return recorder.save(path)


def render_episode(env, policy: Policy, recorder, spec, max_frames: int) -> None:
    """Step simulation 0's first episode and render up to `max_frames` frames of it into
    `recorder` with the markers of `spec` (a VideoSpec), counting them on a bar (stderr):
    a G1 episode takes minutes to render on a CPU."""
    from tqdm import tqdm

    from simreal.deploy.runtime import reset_policy

    obs, _ = env.reset()
    reset_policy(policy)  # the evaluation before used the same policy
    with tqdm(total=max_frames, desc="rendering", unit="frame", leave=False) as bar:
        while True:
            if spec.follow is not None:
                recorder.set_camera(spec.follow(env, 0))
            if spec.model_fields:
                fields = {name: env.engine.model_field(name)[0] for name in spec.model_fields}
                recorder.set_model_fields(fields)
            recorder.add_frame(env.engine.qpos[0].copy(), markers=spec.markers(env, 0))
            bar.update()
            if len(recorder.frames) >= max_frames:
                return
            step = env.step(policy(obs))
            if step.terminated[0] or step.truncated[0]:
                # a task whose one step flies a whole plan (quad-replan) hands its frames over
                for qpos in getattr(env, "episode_video_qpos", lambda sim: ())(0):
                    if len(recorder.frames) >= max_frames:
                        break
                    recorder.add_frame(qpos.copy(), markers=spec.markers(env, 0))
                return
            obs = step.obs


def export_run(run_dir: Path, out: Path | None = None) -> Path:
    """Write RUN/policy.onnx (or `out`) with the metadata deployment needs, from the run's
    latest checkpoint, or from RUN/checkpoints/model_N.pt when given that file (a run's
    checkpoints can differ a lot; experiments/g1_pull_checkpoints.py picks one that is not the
    last)."""
    from simreal.policies.checkpoint import load_actor_critic, resolve_checkpoint
    from simreal.policies.export import export_onnx

    ckpt = resolve_checkpoint(run_dir)
    if ckpt.parent.name != "checkpoints":
        raise FileNotFoundError(f"{ckpt}: a checkpoint to export must be in RUN/checkpoints/")
    run_dir = ckpt.parent.parent
    config = read_config(run_dir)
    model = load_actor_critic(ckpt)
    env = make_eval_env(config, 1, config.get("engine", "mjbatch"), 0, None)
    meta: dict[str, Any] = {"task": config["task"], "gym": bool(config.get("gym"))}
    if config.get("gym"):
        meta.update(robot="none", observation_names=[["obs", env.num_obs]])
    else:
        meta.update(env.deployment_metadata(), task_config=config["task_config"])
    return export_onnx(model, out or run_dir / "policy.onnx", meta)
