"""The policy runtime: an exported ONNX policy run with ONNX Runtime, no torch.

A policy file carries its own description (task, robot, observation layout, joint
order, gains, rates) in `metadata_props`. `OnnxPolicy` reads it into a typed
`PolicyMetadata`, and `check_compatible` refuses a policy that does not fit the robot
it is asked to drive, naming every field that differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

MARKER_KEYS = ("simreal_version", "task")
"""Keys every simreal policy carries; a file without them was not exported by simreal."""

CONTROL_DT_TOLERANCE = 1e-9


class PolicyMetadataError(ValueError):
    """The file is not a simreal ONNX policy, or its metadata is missing or malformed."""


class PolicyMismatchError(ValueError):
    """The policy was trained for a different robot, joint order, rate or task.

    `differences` maps each differing field to (policy value, expected value).
    """

    def __init__(self, message: str, differences: dict[str, tuple[object, object]]):
        super().__init__(message)
        self.differences = differences


@dataclass(frozen=True)
class PolicyMetadata:
    """What a deployed policy needs to know, as written by `simreal.policies.export`.

    A command is `default_joint_pos + action_scale * action`, per joint in `joint_names`
    (the robot's hardware order); `kp`, `kd` and `default_joint_pos` may be empty for
    robots without position-controlled joints (a drone's "joints" are its motors).
    """

    task: str
    robot: str
    observation_names: list[tuple[str, int]]
    action_groups: dict[str, list[int]]
    joint_names: list[str]
    default_joint_pos: list[float]
    action_scale: list[float]
    kp: list[float]
    kd: list[float]
    control_dt: float
    sim_dt: float
    decimation: int
    simreal_version: str
    n_obs: int
    n_actions: int
    obs_history: int = 0
    memory_size: int = 0
    """Units of a recurrent policy's memory: its graph takes `h` beside `obs` and returns
    `h_next` beside `actions` (0: feed-forward, obs to actions only)."""
    action_clip: float = 1.0
    """Actions are clipped to +-this before scaling, as in training."""


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _float_list(v: object) -> list[float]:
    if not isinstance(v, list) or not all(_is_number(x) for x in v):
        raise ValueError("a list of numbers")
    return [float(x) for x in v]


def _str_list(v: object) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError("a list of strings")
    return list(v)


def _observation_names(v: object) -> list[tuple[str, int]]:
    """Accepts [[name, size], ...] (what tasks write) or {name: size, ...} in order."""
    pairs = list(v.items()) if isinstance(v, dict) else v
    if not isinstance(pairs, list) or not all(
        isinstance(p, (list, tuple))
        and len(p) == 2
        and isinstance(p[0], str)
        and isinstance(p[1], int)
        for p in pairs
    ):
        raise ValueError("a list of [name, size] pairs")
    return [(name, int(size)) for name, size in pairs]


def _action_groups(v: object) -> dict[str, list[int]]:
    if not isinstance(v, dict) or not all(
        isinstance(idx, list) and all(isinstance(i, int) for i in idx) for idx in v.values()
    ):
        raise ValueError("an object of name: [action indices]")
    return {str(name): list(idx) for name, idx in v.items()}


def _float(v: object) -> float:
    if not _is_number(v):
        raise ValueError("a number")
    return float(v)


def _int(v: object) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError("an integer")
    return v


_TEXT_FIELDS = ("task", "robot", "simreal_version")
"""Stored as plain strings; every other field is JSON."""

_JSON_FIELDS: dict[str, Callable[[object], object]] = {
    "observation_names": _observation_names,
    "action_groups": _action_groups,
    "joint_names": _str_list,
    "default_joint_pos": _float_list,
    "action_scale": _float_list,
    "kp": _float_list,
    "kd": _float_list,
    "control_dt": _float,
    "sim_dt": _float,
    "decimation": _int,
    "obs_history": _int,
    "memory_size": _int,
    "action_clip": _float,
}

_OPTIONAL = {"obs_history", "memory_size"}


def _check_keys(props: dict[str, str], source: str) -> None:
    required = [*_TEXT_FIELDS, *(key for key in _JSON_FIELDS if key not in _OPTIONAL)]
    missing = ", ".join(key for key in required if key not in props)
    if any(key not in props for key in MARKER_KEYS):
        raise PolicyMetadataError(f"{source}: not a simreal policy (metadata lacks {missing})")
    if missing:
        raise PolicyMetadataError(f"{source}: simreal policy metadata lacks {missing}")


def parse_metadata(
    props: dict[str, str], n_obs: int, n_actions: int, source: str, memory_size: int = 0
) -> PolicyMetadata:
    """Typed metadata from an ONNX file's `metadata_props`; `source` names the file in
    errors; n_obs, n_actions and `memory_size` are the graph's own widths."""
    _check_keys(props, source)
    fields: dict[str, object] = {key: props[key] for key in _TEXT_FIELDS}
    for key, convert in _JSON_FIELDS.items():
        if key not in props:
            continue
        try:
            value = json.loads(props[key])
        except json.JSONDecodeError:
            raise PolicyMetadataError(
                f"{source}: metadata {key}={props[key]!r} is not JSON"
            ) from None
        try:
            fields[key] = convert(value)
        except ValueError as expected:
            raise PolicyMetadataError(
                f"{source}: metadata {key}={props[key]!r} is not {expected}"
            ) from None
    meta = PolicyMetadata(**fields, n_obs=n_obs, n_actions=n_actions)
    if meta.memory_size != memory_size:
        raise PolicyMetadataError(
            f"{source}: metadata memory_size={meta.memory_size} but the graph carries "
            f"a memory of {memory_size}"
        )
    _check_layout(meta, source)
    return meta


def _check_layout(meta: PolicyMetadata, source: str) -> None:
    """The metadata must describe the graph it travels with."""
    slots = sorted(i for idx in meta.action_groups.values() for i in idx)
    if slots != list(range(meta.n_actions)):
        raise PolicyMetadataError(
            f"{source}: action_groups {meta.action_groups} do not cover the graph's "
            f"{meta.n_actions} actions exactly once"
        )
    # With history the stacking is the task's to define; without it the layout is the input.
    layout_size = sum(size for _, size in meta.observation_names)
    if meta.obs_history == 0 and layout_size != meta.n_obs:
        raise PolicyMetadataError(
            f"{source}: observation_names sum to {layout_size} "
            f"but the graph takes {meta.n_obs} observations"
        )


def check_compatible(
    meta: PolicyMetadata,
    *,
    robot: str,
    joint_names: Sequence[str],
    control_dt: float | None = None,
    task: str | None = None,
    source: str = "policy",
) -> None:
    """Raise PolicyMismatchError naming every field where `meta` differs from the robot.

    A policy driving joints in another order, or at another rate, fails silently and
    dangerously on hardware, so this runs before the first command is sent. control_dt
    None: the robot runs the policy at the policy's own rate (the G1 deploy node).
    """
    differences: dict[str, tuple[object, object]] = {}
    if meta.robot != robot:
        differences["robot"] = (meta.robot, robot)
    if list(meta.joint_names) != list(joint_names):
        differences["joint_names"] = (list(meta.joint_names), list(joint_names))
    if control_dt is not None and abs(meta.control_dt - control_dt) > CONTROL_DT_TOLERANCE:
        differences["control_dt"] = (meta.control_dt, control_dt)
    if task is not None and meta.task != task:
        differences["task"] = (meta.task, task)
    if differences:
        whose = {"robot": "the robot is", "task": "the requested task is"}
        lines = "; ".join(
            f"{key}: policy has {ours!r} but {whose.get(key, f'robot {robot} has')} {theirs!r}"
            for key, (ours, theirs) in differences.items()
        )
        raise PolicyMismatchError(f"{source} does not fit robot {robot}: {lines}", differences)


class OnnxPolicy:
    """A policy file on ONNX Runtime: one thread, sequential, CPU, for steady latency."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no such policy file")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        try:
            self.session = ort.InferenceSession(
                str(self.path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as err:  # onnxruntime raises its own untyped errors
            raise PolicyMetadataError(f"{self.path}: not an ONNX model ({err})") from err
        props = self.session.get_modelmeta().custom_metadata_map
        self.raw_metadata: dict[str, str] = dict(props)
        """Every metadata string as stored, including keys PolicyMetadata does not type."""
        _check_keys(props, str(self.path))
        n_obs, n_actions, n_memory = self._graph_widths()
        self.metadata = parse_metadata(props, n_obs, n_actions, str(self.path), n_memory)
        self.memory = Memory(n_memory) if n_memory else None
        """A recurrent policy's state between calls (zeroed by `reset`)."""
        self._output_names = ["actions", "h_next"] if n_memory else ["actions"]

    def _graph_widths(self) -> tuple[int, int, int]:
        """n_obs, n_actions and the memory size (0: none), from a graph that must map
        obs [B, n_obs] to actions [B, n_act], or (obs, h [B, n_mem]) to (actions, h_next)."""
        inputs, outputs = self.session.get_inputs(), self.session.get_outputs()
        tensors = [*inputs, *outputs]
        recurrent = [i.name for i in inputs] == ["obs", "h"]
        if (
            [i.name for i in inputs] not in (["obs"], ["obs", "h"])
            or [o.name for o in outputs] != (["actions", "h_next"] if recurrent else ["actions"])
            or any(len(t.shape) != 2 or not isinstance(t.shape[1], int) for t in tensors)
            or (recurrent and inputs[1].shape[1] != outputs[1].shape[1])
        ):
            raise PolicyMetadataError(
                f"{self.path}: graph must map obs [batch, n_obs] to actions [batch, n_act] "
                "(a recurrent one: obs and h [batch, n_mem] to actions and h_next), "
                f"has inputs {[(i.name, i.shape) for i in inputs]} "
                f"and outputs {[(o.name, o.shape) for o in outputs]}"
            )
        return inputs[0].shape[1], outputs[0].shape[1], inputs[1].shape[1] if recurrent else 0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """Actions (before scaling) for obs (n_obs,) or (B, n_obs); float32, same leading
        shape. A recurrent policy remembers this call's rows for the next one."""
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        if obs.ndim not in (1, 2) or obs.shape[-1] != self.metadata.n_obs:
            raise ValueError(
                f"{self.path}: expected observations of shape (n_obs,) or (B, n_obs) "
                f"with n_obs={self.metadata.n_obs}, got shape {obs.shape}"
            )
        feed = {"obs": obs.reshape(-1, obs.shape[-1])}
        if self.memory is None:
            actions = self.session.run(self._output_names, feed)[0]
        else:
            feed["h"] = self.memory.state(feed["obs"].shape[0])
            actions, h_next = self.session.run(self._output_names, feed)
            self.memory.keep(h_next)
        return actions[0] if obs.ndim == 1 else actions

    def reset(self, done: np.ndarray | None = None) -> None:
        """Forget what a recurrent policy remembers: of every row (None: a new start, as
        when the robot enters the policy's control) or of the rows where `done` is true
        (episodes that ended). Nothing to forget for a feed-forward policy."""
        if self.memory is not None:
            self.memory.reset(done)

    def check_compatible(
        self,
        *,
        robot: str,
        joint_names: Sequence[str],
        control_dt: float | None = None,
        task: str | None = None,
    ) -> None:
        """`check_compatible` on this file's metadata, naming the file in the error."""
        check_compatible(
            self.metadata,
            robot=robot,
            joint_names=joint_names,
            control_dt=control_dt,
            task=task,
            source=str(self.path),
        )


class Memory:
    """The state a recurrent policy carries from one call to the next, one row per
    simulation (or one for a robot): zeros at a start, whenever the batch size changes,
    and where `reset` says an episode ended."""

    def __init__(self, size: int):
        self.size = size
        self.h: np.ndarray | None = None

    def state(self, batch: int) -> np.ndarray:
        if self.h is None or self.h.shape[0] != batch:
            self.h = np.zeros((batch, self.size), dtype=np.float32)
        return self.h

    def keep(self, h_next: np.ndarray) -> None:
        self.h = np.asarray(h_next, dtype=np.float32)

    def reset(self, done: np.ndarray | None = None) -> None:
        if done is None or self.h is None:
            self.h = None
        else:
            self.h[np.asarray(done, dtype=bool)] = 0.0


class RecurrentPolicy:
    """A policy callable over a step function (obs, h) -> (actions, h_next), e.g. a
    PyTorch checkpoint's recurrent actor, carrying its memory as `OnnxPolicy` does."""

    def __init__(self, step: Callable[[np.ndarray, np.ndarray], tuple], size: int):
        self._step = step
        self.memory = Memory(size)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        batch = np.atleast_2d(obs)
        actions, h_next = self._step(batch, self.memory.state(batch.shape[0]))
        self.memory.keep(h_next)
        return actions[0] if np.ndim(obs) == 1 else actions

    def reset(self, done: np.ndarray | None = None) -> None:
        self.memory.reset(done)


def reset_policy(policy: Callable, done: np.ndarray | None = None) -> None:
    """`policy.reset(done)` where the policy has memory to forget (see OnnxPolicy.reset);
    plain callables (baselines, feed-forward closures) have none."""
    reset = getattr(policy, "reset", None)
    if reset is not None:
        reset(done)
