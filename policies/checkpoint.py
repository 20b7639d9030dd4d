"""Checkpoints written atomically: a crash or Ctrl-C never leaves a torn file."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import torch

_NAME = re.compile(r"model_(\d+)\.pt$")


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


def save_checkpoint(folder: Path, iteration: int, state: dict[str, Any]) -> Path:
    import io

    buf = io.BytesIO()
    torch.save(state, buf)
    path = folder / f"model_{iteration:06d}.pt"
    atomic_write_bytes(path, buf.getvalue())
    return path


def latest_checkpoint(folder: Path) -> Path | None:
    found = sorted(
        (int(m.group(1)), p) for p in folder.glob("model_*.pt") if (m := _NAME.search(p.name))
    )
    return found[-1][1] if found else None


def load_checkpoint(path: Path) -> dict[str, Any]:
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:
        raise ValueError(f"{path}: not a readable simreal checkpoint ({err})") from err


def load_actor_critic(path: Path):
    """Rebuild the trained ActorCritic from a checkpoint alone (no environment needed)."""
    from simreal.policies.models import ActorCritic

    state = load_checkpoint(path)
    spec = state["model_spec"]
    groups = {name: tuple(idx) for name, idx in spec["action_groups"].items()}
    model = ActorCritic(
        spec["n_obs"],
        spec["n_critic_obs"],
        groups,
        state["model_cfg"],
        spec.get("observation_structure"),
    )
    model.load_state_dict(state["model"])
    model.eval()
    return model
