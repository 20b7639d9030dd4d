"""ONNX export of the deterministic policy, with what deployment needs in its metadata.

The graph maps raw observations to actions: the observation normalizer is inside it,
so the robot never has to reproduce training statistics. The metadata (task, robot,
observation layout, joint order, gains, rates) lets the deploy runtime refuse a policy
that does not fit the robot it is asked to drive.
"""

from __future__ import annotations

import io
import json
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import onnx
import torch
from torch import nn

from simreal.policies.checkpoint import atomic_write_bytes
from simreal.policies.models import ActorCritic

OPSET = 17


class _Deterministic(nn.Module):
    """Exports `act_inference` (normalizer plus mean action), not the training forward."""

    def __init__(self, model: ActorCritic):
        super().__init__()
        self.model = model

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.model.act_inference(obs)


class _Recurrent(nn.Module):
    """Exports a recurrent actor's `step`: (obs, h) to (actions, h_next)."""

    def __init__(self, model: ActorCritic):
        super().__init__()
        self.model = model

    def forward(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.step(obs, h)


def _simreal_version() -> str:
    try:
        return version("simreal")
    except PackageNotFoundError:
        return "0+unknown"


def export_onnx(model: ActorCritic, path: Path, metadata: dict[str, object]) -> Path:
    """Write `model` as an ONNX policy: input `obs` (batch, n_obs), output `actions`; a
    recurrent actor also takes its memory `h` (batch, memory_size) and returns the next,
    `h_next`, and the metadata says `memory_size` (the runtime carries the state).

    Metadata values become strings (non-strings JSON-encoded), plus `simreal_version`
    of the code that wrote the file, which overrides any value passed in. The file is
    written atomically, so a reader never sees half a policy.
    """
    n_obs = model.n_obs
    buffer = io.BytesIO()
    # The TorchScript exporter is deprecated but exact and dependency-free for these MLPs.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if model.recurrent:
            wrapper, names = _Recurrent(model), (["obs", "h"], ["actions", "h_next"])
            example = (torch.zeros(1, n_obs), model.initial_state(1))
        else:
            wrapper, names = _Deterministic(model), (["obs"], ["actions"])
            example = (torch.zeros(1, n_obs),)
        torch.onnx.export(
            wrapper,
            example,
            buffer,
            input_names=names[0],
            output_names=names[1],
            dynamic_axes={name: {0: "batch"} for name in names[0] + names[1]},
            opset_version=OPSET,
            dynamo=False,
        )
    proto = onnx.load_model_from_string(buffer.getvalue())
    props = {**metadata, "simreal_version": _simreal_version()}
    if model.recurrent:
        props["memory_size"] = model.memory_size
    for key, value in props.items():
        entry = proto.metadata_props.add()
        entry.key = key
        entry.value = value if isinstance(value, str) else json.dumps(value)
    atomic_write_bytes(path, proto.SerializeToString())
    return path
