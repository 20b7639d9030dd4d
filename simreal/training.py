"""Wiring for `simreal train`: configs, run directory, environments and the runner.

`new_run(TrainRequest(task="quad-hover", steps=200_000))` starts the same run from
Python that `simreal train quad-hover --steps 200000` starts from the shell.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from simreal import __version__
from simreal.config import apply_overrides, from_plain, to_plain
from simreal.policies import OnPolicyRunner, TrainConfig
from simreal.policies.distributed import Distributed, learner_kind
from simreal.rundir import new_run_dir, read_config, write_config


@dataclass(frozen=True)
class TrainRequest:
    """What a new training run is asked for (the options of `simreal train`); None leaves
    the task's or the trainer's default."""

    task: str | None = None
    """Registered task name; exactly one of `task` and `gym`."""
    gym: str | None = None
    """Gymnasium environment id, trained instead of a task."""
    envs: int | None = None
    steps: int | None = None
    """Env-step budget."""
    minutes: float | None = None
    """Wall-time budget; training stops at whichever budget ends first."""
    seed: int = 0
    engine: str = "mjbatch"
    arch: str | None = None
    """"decoupled" or "coupled" (default: the task's)."""
    device: str | None = None
    """Where the learner runs: auto, cpu or cuda (default: the trainer's, auto)."""
    stop_at_return: float | None = None
    calibration: Path | None = None
    """Calibration overlay YAML to centre the robot model and randomization on."""
    out: Path = Path("runs")
    """Root folder of run directories."""
    init_from: Path | None = None
    """Warm start from a run directory or checkpoint."""
    overrides: tuple[str, ...] = ()
    """`task.FIELD=VALUE` and `train.FIELD=VALUE` config overrides."""
    command: str | None = None
    """How the run was asked for, recorded in its config (default: this request)."""

    def __post_init__(self) -> None:
        if (self.task is None) == (self.gym is None):
            raise ValueError("give a task name or --gym ENV_ID (not both)")


def split_overrides(items: list[str]) -> tuple[list[str], list[str]]:
    """`task.x=1` goes to the task config, `train.y=2` to the training config."""
    task, train = [], []
    for item in items:
        head, _, rest = item.partition(".")
        if head == "task":
            task.append(rest)
        elif head == "train":
            train.append(rest)
        else:
            raise ValueError(f"--set {item!r}: keys start with 'task.' or 'train.'")
    return task, train


def apply_calibration(task_cfg: Any, task: str, calibration: Path | str | None) -> Any:
    """`task_cfg` with its `calibration` field set to the overlay file's absolute path
    (so the run config still finds it from elsewhere); unchanged when None."""
    if calibration is None:
        return task_cfg
    if not any(f.name == "calibration" for f in dataclasses.fields(task_cfg)):
        raise ValueError(f"--calibration: task {task!r} takes no calibration overlay")
    path = Path(calibration)
    if not path.is_file():
        raise FileNotFoundError(f"--calibration: {path}: no such overlay file")
    return dataclasses.replace(task_cfg, calibration=str(path.resolve()))


def build_envs(config: dict[str, Any], distributed: Distributed | None = None):
    """Training and evaluation environments for a run config: under torchrun, this rank's
    simulations (its own seed) and, on rank 0 only, the evaluation environment."""
    distributed = distributed or Distributed()
    train_cfg = from_plain(TrainConfig, config["train"], "train.")
    seed = distributed.seed(train_cfg.seed)
    evaluates = distributed.is_main
    if config.get("gym"):
        from simreal.policies.gym_env import GymVecEnv

        if train_cfg.env_groups > 1:
            raise ValueError("train.env_groups applies to simreal's tasks, not to --gym")
        env = GymVecEnv(config["task"], train_cfg.num_envs, seed=seed)
        eval_env = (
            GymVecEnv(config["task"], train_cfg.eval_episodes, seed=train_cfg.seed + 10_000)
            if evaluates
            else None
        )
        return env, eval_env, train_cfg, []
    from simreal.tasks import get_task, make_env

    spec = get_task(config["task"])
    task_cfg = from_plain(spec.config_cls, config["task_config"], "task.")
    if train_cfg.env_groups > 1:
        from simreal.tasks.overlap import make_overlapped_env

        env = make_overlapped_env(
            spec.name, task_cfg, train_cfg.num_envs, train_cfg.env_groups, seed, config["engine"]
        )
    else:
        env = make_env(spec.name, task_cfg, train_cfg.num_envs, config["engine"], seed)
    # A task with a validation set evaluates on it during training (the held-out set is
    # for the final numbers only); the others evaluate on their evaluation config.
    choose = getattr(task_cfg, "training_evaluation", None)
    eval_cfg = choose() if choose else dataclasses.replace(task_cfg, evaluation=True)
    eval_env = (
        make_env(
            spec.name, eval_cfg, train_cfg.eval_episodes, config["engine"], train_cfg.seed + 10_000
        )
        if evaluates
        else None
    )
    terms = [name for name, weight in env.reward_weights().items() if weight != 0.0]
    return env, eval_env, train_cfg, terms


def run_config(request: TrainRequest) -> dict[str, Any]:
    """The run config a request trains with (what `config.yaml` records, before any warm
    start): the trainer's defaults, the task's training defaults, the request's options and
    its `--set` overrides, in that order. Builds no environment, so a recorded command can
    be checked against today's defaults before hours of training (experiments/
    g1_walk_chain.py's replays)."""
    task_overrides, train_overrides = split_overrides(list(request.overrides))
    train_cfg = TrainConfig(seed=request.seed, stop_at_return=request.stop_at_return)
    if request.gym:
        from simreal.policies.gym_env import gym_train_config

        train_cfg = gym_train_config(seed=request.seed, stop_at_return=request.stop_at_return)
    else:
        from simreal.tasks import get_task

        train_cfg = apply_overrides(
            train_cfg, list(get_task(request.task).train_defaults), "train."
        )
    if request.envs is not None:
        train_cfg.num_envs = request.envs
    if request.steps is not None:
        train_cfg.max_env_steps = request.steps
    if request.minutes is not None:
        train_cfg.max_minutes = request.minutes
    if request.arch:
        train_cfg.model.arch = request.arch
    if request.device:
        train_cfg.device = request.device
    train_cfg = apply_overrides(train_cfg, train_overrides, "train.")
    if request.gym:
        if task_overrides or request.calibration:
            raise ValueError("--set task.* and --calibration do not apply to --gym environments")
        name, task_plain = request.gym, None
    else:
        from simreal.tasks import get_task

        spec = get_task(request.task)
        name = spec.name
        task_cfg = apply_overrides(spec.config_cls(), task_overrides, "task.")
        task_plain = to_plain(apply_calibration(task_cfg, name, request.calibration))
    return {
        "simreal_version": __version__,
        "command": request.command or repr(request),
        "task": name,
        "gym": bool(request.gym),
        "engine": request.engine,
        "task_config": task_plain,
        "train": to_plain(train_cfg),
    }


def new_run(request: TrainRequest) -> tuple[OnPolicyRunner, Path]:
    """A fresh run directory and a runner ready to `learn()` (every torchrun rank calls
    this; only rank 0 writes the directory)."""
    config = run_config(request)
    name = config["task"]
    train_cfg = from_plain(TrainConfig, config["train"], "train.")
    distributed = Distributed.from_env(learner_kind(train_cfg.device, torch.cuda.is_available()))
    distributed.check_same_config(_compared(config))
    env, eval_env, train_cfg, terms = build_envs(config, distributed)
    weights, curriculum = None, {}
    if request.init_from is not None:  # checked before the run dir exists
        ckpt, weights = warm_start_weights(
            request.init_from, env, train_cfg.model, None if request.gym else name
        )
        config["init_from"] = str(ckpt)
        curriculum = source_curriculum(ckpt)
    run_dir = None
    if distributed.is_main:
        run_dir = new_run_dir(request.out, name.replace("/", "_"), train_cfg.seed)
        if distributed.enabled:
            config = {**config, "world_size": distributed.world_size}
        write_config(run_dir, config)
    run_dir = Path(distributed.decide(None if run_dir is None else str(run_dir)))
    runner = OnPolicyRunner(
        env, train_cfg, run_dir, eval_env=eval_env, reward_terms=terms, distributed=distributed
    )
    if weights is not None:
        runner.model.load_state_dict(weights)
    if curriculum and hasattr(env, "restore_curriculum"):
        env.restore_curriculum(curriculum)
    return runner, run_dir


def source_curriculum(ckpt: Path) -> dict[str, float]:
    """The curriculum levels a warm start's source checkpoint reached. The new task takes
    the levels it knows (a g1-pull fine-tune, e.g. with a calibration overlay, goes on at
    the source's load instead of climbing back from the start); others are ignored."""
    from simreal.policies.checkpoint import load_checkpoint

    return dict(load_checkpoint(ckpt).get("curriculum", {}))


def _compared(config: dict[str, Any]) -> dict[str, Any]:
    """What torchrun ranks must agree on: everything but the command line's spelling."""
    return {key: value for key, value in config.items() if key != "command"}


def warm_start_weights(source: Path, env, model_cfg, task: str | None) -> tuple[Path, dict]:
    """The state dict of a fresh actor-critic for `env` holding a trained one's weights (a
    run directory or a checkpoint) wherever they agree (`policies.checkpoint.
    warm_start_state`): observation terms are matched by name where the source run's task
    is known (terms may be added or dropped anywhere), by position otherwise; everything
    else must match. Returns the checkpoint used and the state dict."""
    from simreal.policies.checkpoint import (
        MODEL_KEYS,
        load_checkpoint,
        resolve_checkpoint,
        warm_start_state,
    )
    from simreal.policies.models import ActorCritic
    from simreal.policies.runner import estimate_columns

    ckpt = resolve_checkpoint(source)
    state = load_checkpoint(ckpt, MODEL_KEYS)
    spec = state["model_spec"]
    groups = {k: list(v) for k, v in env.action_groups.items()}
    if {k: list(v) for k, v in spec["action_groups"].items()} != groups:
        raise ValueError(
            f"--init-from {ckpt}: action groups {spec['action_groups']} differ from the "
            f"task's {groups}"
        )
    estimates = estimate_columns(env)
    # the actors' input sizes: the observation and any state estimate after it
    sizes = (spec["n_obs"] + len(spec.get("estimate_columns", ())), spec["n_critic_obs"])
    new_sizes = (env.num_obs + len(estimates), env.num_critic_obs)
    columns = None if task is None else _observation_columns(ckpt, env, sizes)
    if task is not None and columns is None and sizes != new_sizes:
        raise ValueError(
            f"--init-from {ckpt}: its run's config.yaml ({ckpt.parent.parent}) is missing "
            f"or names no registered task, so its observation layout cannot be checked "
            f"against {task}'s, and the sizes differ (actor {spec['n_obs']} vs "
            f"{env.num_obs}, critic {spec['n_critic_obs']} vs {env.num_critic_obs}): "
            "warm-start from a run directory, or from a checkpoint of the same task"
        )
    fresh = ActorCritic(
        env.num_obs,
        env.num_critic_obs,
        env.action_groups,
        model_cfg,
        getattr(env, "observation_structure", None),
        estimates,
    )
    try:
        weights = warm_start_state(
            fresh.state_dict(),
            state["model"],
            (sizes[0], new_sizes[0]),
            (sizes[1], new_sizes[1]),
            columns,
            state["model_cfg"].normalizer_var_floor,
        )
    except ValueError as err:
        old = state["model_cfg"]
        raise ValueError(
            f"--init-from {ckpt}: {err}; source model: {old.arch}, actor {list(old.actor_hidden)}, "
            f"critic {list(old.critic_hidden)}; new model: {model_cfg.arch}, actor "
            f"{list(model_cfg.actor_hidden)}, critic {list(model_cfg.critic_hidden)}"
        ) from None
    return ckpt, weights


def _observation_columns(
    ckpt: Path, env, sizes: tuple[int, int]
) -> tuple[list[int], list[int]] | None:
    """For each input column of the new task's actor and critic (`env`'s layouts, which its
    config may extend: g1-force's `actor_observes_force`), the column of the checkpoint's
    observation holding the same term (matched by name; -1 for a term it lacks), when its
    run config names a registered task whose class layouts have the checkpoint's `sizes`;
    None when the source's layout is unknown (no readable run config, an unregistered
    task, or layouts built per instance, as quad-swarm's): sizes are then all a warm start
    can go by. A term both observe with different sizes is refused, named."""
    from simreal.tasks import TASKS, get_task
    from simreal.tasks.terms import layout

    run_dir = ckpt.parent.parent
    try:
        source = read_config(run_dir)
        source_task = source["task"]
    except (FileNotFoundError, ValueError):
        return None
    if source_task not in TASKS:
        return None
    spec = get_task(source_task)
    try:
        plain = source.get("task_config")
        source_cfg = from_plain(spec.config_cls, plain, "task.") if plain else spec.config_cls()
        olds = spec.env_cls.input_layouts(source_cfg)
    except (AttributeError, TypeError, ValueError):  # a layout built per instance
        return None
    news = (
        tuple(env.observation_layout) + layout(getattr(env, "estimate_terms", ())),
        getattr(env, "critic_observation_layout", None),
    )
    maps = []
    for which, old, new, size in zip(("actor input", "critic observation"), olds, news, sizes, strict=True):  # fmt: skip
        if old is None or new is None or sum(n for _, n in old) != size:
            return None
        maps.append(_term_columns(list(old), list(new), which, ckpt))
    return maps[0], maps[1]


def _term_columns(old: list, new: list, which: str, ckpt: Path) -> list[int]:
    where, col = {}, 0
    for name, size in old:
        where[name] = (col, size)
        col += size
    columns = []
    for name, size in new:
        if name not in where:
            columns += [-1] * size
            continue
        start, old_size = where[name]
        if old_size != size:
            raise ValueError(
                f"--init-from {ckpt}: {which} term {name!r} has {old_size} values in the "
                f"source and {size} here"
            )
        columns += list(range(start, start + size))
    return columns


def resume_run(
    run_dir: Path, steps: int | None, minutes: float | None, device: str | None = None
) -> OnPolicyRunner:
    """Continue a run where its last checkpoint left it; budgets may be raised, and
    `device` moves the learner (checkpoints are device-independent)."""
    config = read_config(run_dir)
    if device is not None:
        config["train"]["device"] = device
    device = config["train"].get("device", "auto")
    distributed = Distributed.from_env(learner_kind(device, torch.cuda.is_available()))
    config.pop("world_size", None)
    distributed.check_same_config(
        {**_compared(config), "resume": {"steps": steps, "minutes": minutes}}
    )
    env, eval_env, train_cfg, terms = build_envs(config, distributed)
    if steps is not None:
        train_cfg.max_env_steps = steps
    if minutes is not None:
        train_cfg.max_minutes = minutes
    runner = OnPolicyRunner(
        env, train_cfg, run_dir, eval_env=eval_env, reward_terms=terms, distributed=distributed
    )
    runner.resume()
    return runner
