"""Checkpoints written atomically: a crash or Ctrl-C never leaves a torn file.

Checkpoints hold only tensors and plain data (numbers, strings, lists, dicts: the model
config as a dict) and load with `torch.load(..., weights_only=True)`, which refuses to
run code from the file: a checkpoint from elsewhere cannot execute anything.

Resuming takes the newest checkpoint that loads and has every key a resume needs
(`newest_readable`), and says which newer ones it skipped and why, so one corrupt file
costs one checkpoint interval instead of the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from simreal.policies.normalizer import NORMALIZER_CLIP, NORMALIZER_EPS

_NAME = re.compile(r"model_(\d+)\.pt$")
RETURN_SCALER = "return_scaler."
"""State-dict prefix of the training-only return statistics (ppo.normalize_returns)."""


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


MODEL_KEYS = ("model", "model_spec", "model_cfg")
"""What rebuilding the trained network needs (`load_actor_critic`)."""
RESUME_KEYS = (
    *MODEL_KEYS,
    "optimizer",
    "learning_rate",
    "generator",
    "torch_rng",
    "iteration",
    "env_steps",
    "wall_time_s",
    "best_eval_return",
)
"""What continuing a run needs (`Runner.resume`)."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message names the file and what is wrong."""


def save_checkpoint(folder: Path, iteration: int, state: dict[str, Any]) -> Path:
    """Write `state` as `folder/model_NNNNNN.pt` atomically; dataclass values (the model
    config) are stored as plain dicts so that the file loads with weights_only=True."""
    import io

    plain = {
        key: dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
        for key, value in state.items()
    }
    buf = io.BytesIO()
    torch.save(plain, buf)
    path = folder / f"model_{iteration:06d}.pt"
    atomic_write_bytes(path, buf.getvalue())
    return path


def numbered_checkpoints(folder: Path) -> list[Path]:
    """The checkpoints `model_<iteration>.pt` in `folder`, oldest first."""
    found = sorted(
        (int(m.group(1)), p) for p in folder.glob("model_*.pt") if (m := _NAME.search(p.name))
    )
    return [p for _, p in found]


def checkpoint_iteration(path: Path) -> int:
    """The iteration in a checkpoint's name `model_<iteration>.pt`."""
    match = _NAME.search(path.name)
    if match is None:
        raise ValueError(f"{path}: not a checkpoint name (model_<iteration>.pt)")
    return int(match.group(1))


def latest_checkpoint(folder: Path) -> Path | None:
    found = numbered_checkpoints(folder)
    return found[-1] if found else None


def checkpoint_at(folder: Path, iteration: int) -> Path:
    """The checkpoint of `iteration` in `folder`, or the last one saved before it
    (checkpoints are written by wall time, so a given iteration may have none)."""
    found = [p for p in numbered_checkpoints(folder) if checkpoint_iteration(p) <= iteration]
    if not found:
        raise FileNotFoundError(f"{folder}: no checkpoint at or before iteration {iteration}")
    return found[-1]


def add_sweep_options(parser: argparse.ArgumentParser) -> None:
    """`--every`, `--last` and `--interval`: the options of `swept_checkpoints`, for the
    scripts that sweep a run's checkpoints (one wording, one set of defaults)."""
    from simreal.policies.config import TrainConfig

    parser.add_argument("--every", type=int, default=1, help="every k-th checkpoint")
    parser.add_argument("--last", type=int, default=0, help="only the last n considered")
    parser.add_argument(
        "--interval",
        type=int,
        default=0,
        help="only checkpoints at multiples of this many iterations, and the newest (the "
        "same ones whatever the machine's speed; the trainer saves every "
        f"train.checkpoint_interval = {TrainConfig.checkpoint_interval} by default)",
    )


def swept_checkpoints(run: Path, every: int = 1, last: int = 0, interval: int = 0) -> list[Path]:
    """The checkpoints of run directory `run` a sweep judges: every `every`-th counted
    back from the newest (so the newest is always in), the newest `last` of those (0:
    all); oldest first. FileNotFoundError naming the folder when it holds none.

    With `interval` only the checkpoints at multiples of that many iterations (the
    trainer's `checkpoint_interval` saves) and the newest count: the trainer also saves on
    wall time (`checkpoint_every_s`), so without it the same seed trained on a faster or
    slower machine leaves other checkpoints, and the same sweep judges other ones."""
    found = numbered_checkpoints(run / "checkpoints")
    if not found:
        raise FileNotFoundError(f"{run}: no checkpoints (model_*.pt) in {run / 'checkpoints'}")
    if interval < 0:
        raise ValueError(f"interval must be >= 0 iterations, got {interval}")
    if interval:
        found = [p for p in found[:-1] if checkpoint_iteration(p) % interval == 0] + found[-1:]
    chosen = found[::-1][::every][::-1]
    return chosen[-last:] if last else chosen


def load_checkpoint(path: Path, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The checkpoint at `path` (tensors and plain data only: weights_only=True), its
    model config as a `ModelConfig`; CheckpointError naming every key of `required` it
    lacks, or why it does not load."""
    from simreal.policies.config import ModelConfig

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointError(f"{path}: not a readable simreal checkpoint ({err})") from err
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: not a simreal checkpoint (holds {type(state).__name__})")
    missing = [key for key in required if key not in state]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks {', '.join(missing)}")
    if isinstance(state.get("model_cfg"), dict):
        try:
            state["model_cfg"] = ModelConfig(**state["model_cfg"])
        except TypeError as err:
            raise CheckpointError(f"{path}: model_cfg does not fit ModelConfig ({err})") from None
    return state


def newest_readable(folder: Path, required: tuple[str, ...] = RESUME_KEYS):
    """(path, state) of the newest checkpoint in `folder` that loads and has every key of
    `required`; each newer one skipped is reported on stderr with the reason. Raises
    FileNotFoundError when there is none, listing what was skipped."""
    skipped = []
    for path in reversed(numbered_checkpoints(folder)):
        try:
            state = load_checkpoint(path, required)
        except CheckpointError as err:
            skipped.append(str(err))
            print(f"skipping checkpoint {err}", file=sys.stderr, flush=True)
            continue
        if skipped:
            print(f"resuming from {path.name}, the newest readable checkpoint", file=sys.stderr)
        return path, state
    why = f"; skipped: {' | '.join(skipped)}" if skipped else ""
    raise FileNotFoundError(f"{folder}: no readable checkpoint to resume from{why}")


def load_actor_critic(path: Path):
    """Rebuild the trained ActorCritic from a checkpoint alone (no environment needed)."""
    from simreal.policies.models import ActorCritic

    state = load_checkpoint(path, MODEL_KEYS)
    spec = state["model_spec"]
    groups = {name: tuple(idx) for name, idx in spec["action_groups"].items()}
    model = ActorCritic(
        spec["n_obs"],
        spec["n_critic_obs"],
        groups,
        state["model_cfg"],
        spec.get("observation_structure"),
        spec.get("estimate_columns", ()),
    )
    # The return scaler (ppo.normalize_returns) serves training only.
    weights = {k: v for k, v in state["model"].items() if not k.startswith(RETURN_SCALER)}
    model.load_state_dict(weights)
    model.eval()
    return model


def resolve_checkpoint(path: Path) -> Path:
    """A checkpoint file itself, or the latest checkpoint of a run directory (or of a
    checkpoints folder)."""
    path = Path(path)
    if path.is_file():
        return path
    if path.is_dir():
        found = latest_checkpoint(path / "checkpoints") or latest_checkpoint(path)
        if found is not None:
            return found
        raise FileNotFoundError(f"{path}: no model_*.pt checkpoint in it or in its checkpoints/")
    raise FileNotFoundError(f"{path}: no such run directory or checkpoint")


NEW_TERMS_COUNT = 1e4
"""The normalizer's sample count after a warm start that adds observation terms."""

ESTIMATOR = "estimator."
"""The state estimator's parameters (`ActorCritic.estimator`)."""

MEMORY = "memory."
"""A recurrent actor's memory (`ActorCritic.memory`): a source without one hands on its
actor, whose first layer reads the memory through zero weights, so the new model acts
exactly as the source did until training moves them."""


def warm_start_state(
    target: dict[str, torch.Tensor],
    source: dict[str, torch.Tensor],
    obs_sizes: tuple[int, int],
    critic_obs_sizes: tuple[int, int],
    columns: tuple[list[int], list[int]] | None = None,
    source_var_floor: float = NORMALIZER_EPS,
) -> dict[str, torch.Tensor]:
    """A state dict for the new model `target` (its own state dict, fresh) holding the
    trained weights of `source` wherever the two agree.

    Tensors of equal shape are copied. The one allowed difference is the observation's
    terms: obs_sizes and critic_obs_sizes are (source, new) input sizes of actor and
    critic, and `columns` (actor, critic) gives, for each input column of the new model,
    the source's column holding the same observation (-1 for a term the source lacks);
    without it the new observation is taken to extend or cut the source's at the end.
    New terms: the first layer's weight gets zeros in their columns (they change nothing
    until training moves them) and the normalizers their defaults (mean 0, variance 1);
    the other columns keep the source's weights and statistics. Dropped terms (e.g.
    g1-force from g1-pull): their columns go, and what they fed the first layer when they
    read 0 is folded into its bias, so the new model acts as the source did with those
    terms at 0 (for g1-pull: standing, no command, no gait clock). Anything else that
    differs raises ValueError naming the layer. A state estimator the source lacks starts
    untrained; the actor's input columns of its estimate map like any term (by name: a
    source that was told the true value hands on its weights and statistics). `source_var_floor`: the source model's
    normalizer variance floor (what its dropped columns read as at 0).
    """
    fresh = [k for k in target if k not in source and k.startswith((ESTIMATOR, MEMORY))]
    missing = [
        k for k in target if k not in source and not k.startswith(RETURN_SCALER) and k not in fresh
    ]
    extra = [k for k in source if k not in target and not k.startswith(RETURN_SCALER)]
    if missing or extra:
        key = (missing or extra)[0]
        where = "the source has no" if missing else "the new model has no"
        raise ValueError(f"layer {key!r}: {where} such layer (the architectures differ)")
    if columns is None:
        columns = (_prefix_columns(*obs_sizes), _prefix_columns(*critic_obs_sizes))
    maps = {False: torch.tensor(columns[0], dtype=torch.long),
            True: torch.tensor(columns[1], dtype=torch.long)}  # fmt: skip
    out = {}
    remapped_weights = []
    for key, new in target.items():
        if key.startswith(RETURN_SCALER) or key in fresh:
            # reward statistics belong to the new task; a state estimator the source
            # lacks starts untrained (its estimate enters the actor as a new input would)
            out[key] = new.clone()
            continue
        old = source[key]
        memory = _memory_columns(key, old, new, obs_sizes, target)
        if memory:  # the source's input columns, then zeros for the memory it lacked
            new = new[..., :-memory]
        critic = key.startswith("critic")
        sizes, cols = (critic_obs_sizes if critic else obs_sizes), maps[critic]
        identity = sizes[0] == sizes[1] and bool((cols == torch.arange(sizes[1])).all())
        if not identity and _input_sized(key, old, new, sizes):
            kept = cols >= 0
            value = new.clone().fill_(1.0 if key.endswith("normalizer.var") else 0.0)
            value[..., kept] = old[..., cols[kept]]
            out[key] = value
            if key.endswith(".weight"):
                remapped_weights.append(key)
        elif old.shape == new.shape:
            out[key] = old.clone()
        else:
            raise ValueError(
                f"layer {key!r}: source shape {tuple(old.shape)}, new model "
                f"{tuple(new.shape)}; only the observation's terms may differ"
            )
        if memory:
            out[key] = torch.cat([out[key], out[key].new_zeros(*out[key].shape[:-1], memory)], -1)
    for critic, normalizer in ((False, "obs_normalizer"), (True, "critic_obs_normalizer")):
        # New columns start at mean 0, variance 1; with the source's sample count they
        # would hardly move (each step weighs its batch by batch / count, and a long run's
        # count is tens of millions): restart the count, so that they take their own
        # statistics within an iteration or two while the kept columns, fed the same
        # quantities, stay where they were.
        if (maps[critic] < 0).any() and f"{normalizer}.count" in out:
            count = out[f"{normalizer}.count"]
            out[f"{normalizer}.count"] = count.clamp(max=NEW_TERMS_COUNT)
    for key in remapped_weights:  # what the dropped inputs fed the layer at 0, into its bias
        critic = key.startswith("critic")
        normalizer = "critic_obs_normalizer" if critic else "obs_normalizer"
        mean, var = source[f"{normalizer}.mean"], source[f"{normalizer}.var"]
        kept = set(maps[critic][maps[critic] >= 0].tolist())
        dropped = torch.tensor([c for c in range(mean.shape[0]) if c not in kept], dtype=torch.long)
        if dropped.numel() == 0:
            continue
        zero_in = ((0.0 - mean[dropped]) / torch.sqrt(var[dropped] + source_var_floor)).clamp(
            -NORMALIZER_CLIP, NORMALIZER_CLIP
        )
        bias = key.removesuffix("weight") + "bias"
        out[bias] = out[bias] + source[key][:, dropped] @ zero_in
    return out


def _memory_columns(
    key: str,
    old: torch.Tensor,
    new: torch.Tensor,
    obs_sizes: tuple[int, int],
    target: dict[str, torch.Tensor],
) -> int:
    """How many memory columns an actor's first-layer weight `key` has in the new model
    that the source's lacks (0 unless a feed-forward source warm-starts a recurrent one)."""
    hidden = target.get(f"{MEMORY}weight_hh")
    if hidden is None or not key.startswith("actor.") or new.dim() != 2 or old.dim() != 2:
        return 0
    memory = hidden.shape[1]
    widened = new.shape[1] == obs_sizes[1] + memory and old.shape[1] == obs_sizes[0]
    return memory if widened else 0


def _prefix_columns(n_old: int, n_new: int) -> list[int]:
    """The column map of an observation extended or cut at the end."""
    return [c if c < n_old else -1 for c in range(n_new)]


def _input_sized(key: str, old: torch.Tensor, new: torch.Tensor, sizes: tuple[int, int]) -> bool:
    """Whether `key` is an input-sized tensor (a first-layer weight or a normalizer
    statistic) with the source's input size in the source and the new one in the new
    model."""
    n_old, n_new = sizes
    if old.dim() == 0 or new.dim() == 0 or old.shape[-1] != n_old or new.shape[-1] != n_new:
        return False
    if key.endswith(("normalizer.mean", "normalizer.var")):
        return old.dim() == new.dim() == 1
    return key.endswith(".weight") and old.dim() == new.dim() == 2 and old.shape[0] == new.shape[0]
