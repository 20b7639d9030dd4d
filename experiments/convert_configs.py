"""Rewrite saved task configs in today's form, once, so the code needs no shims for old ones.

A run's config.yaml and an exported policy.onnx (metadata `task_config`) hold the task
config they were made with. Two older forms exist, and loading no longer converts them:

- per-step reward weights (no `reward_weights_unit`), in the configs of the tasks timed by
  rates (quad-hover, quad-track, quad-swarm, lane-keep): each weight w becomes the
  per-second weight W whose product with the control period is w exactly, so a policy
  evaluates to the same returns; `reward_weights_unit: per_second` is added;
- lane-keep configs from before the lane detector (no `perception` section): their policy
  read the exact lane state, so they get `perception: {lane_state_source: ground_truth}`;
- policies exported before `action_clip` was metadata: they were trained with 1, and the
  deploy runtime now requires the key.

Every YAML and ONNX file below the given paths (default: results/) that holds a task
config is checked; files already in today's form are left byte-for-byte alone. --check
rewrites nothing and exits 1 when a file would change (the tests run it so).

    python experiments/convert_configs.py [PATH ...] [--check]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import yaml

from simreal.policies.checkpoint import atomic_write_bytes
from simreal.tasks.rate_timing import RateTiming
from simreal.tasks.registry import TASKS
from simreal.tasks.terms import WEIGHTS_UNIT


def per_second(per_step: float, hz: float) -> float:
    """The float W nearest per_step * hz with W * (1 / hz) == per_step, if one lies within
    a few ulps (it does for every weight saved with per-step weights); else per_step * hz."""
    dt = 1.0 / hz
    guess = float(per_step) * hz
    candidates = [guess]
    for direction in (np.inf, -np.inf):
        w = guess
        for _ in range(4):
            w = float(np.nextafter(w, direction))
            candidates.append(w)
    exact = [w for w in candidates if w * dt == per_step]
    return exact[0] if exact else guess


def _insert(plain: dict[str, Any], cls: type, key: str, value: Any) -> dict[str, Any]:
    """`plain` with `key` added after the nearest field before it (in `cls`'s field order)
    that `plain` has, so a converted file reads as one written today."""
    names = [f.name for f in dataclasses.fields(cls)]
    before = [n for n in names[: names.index(key)] if n in plain]
    out: dict[str, Any] = {} if before else {key: value}
    for name, item in plain.items():
        out[name] = item
        if before and name == before[-1]:
            out[key] = value
    return out


def convert_task_config(task: str, plain: dict[str, Any]) -> dict[str, Any]:
    """Task `task`'s saved config `plain` in today's form (the same dict when it is)."""
    cls = TASKS[task].config_cls
    per_step = "reward_weights" in plain and "reward_weights_unit" not in plain
    if issubclass(cls, RateTiming) and per_step:
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        hz = plain.get("control_hz", defaults["control_hz"])
        weights = {k: per_second(w, hz) for k, w in plain["reward_weights"].items()}
        plain = {**plain, "reward_weights": weights}
        plain = _insert(plain, cls, "reward_weights_unit", WEIGHTS_UNIT)
    if task == "lane-keep" and "perception" not in plain:
        plain = _insert(plain, cls, "perception", {"lane_state_source": "ground_truth"})
    return plain


def convert_yaml(path: Path) -> bytes | None:
    """The converted text of a run config (as `write_config` writes it), None if unchanged
    or not a task's config."""
    config = yaml.safe_load(path.read_text())
    if not isinstance(config, dict) or config.get("task") not in TASKS:
        return None
    plain = config.get("task_config")
    if not isinstance(plain, dict):
        return None
    new = convert_task_config(config["task"], plain)
    if new == plain and list(new) == list(plain):
        return None
    return yaml.safe_dump({**config, "task_config": new}, sort_keys=False).encode()


def convert_onnx(path: Path) -> bytes | None:
    """The converted bytes of an exported policy, None if unchanged or it holds no config."""
    model = onnx.load(str(path))
    props = {entry.key: entry for entry in model.metadata_props}
    if "task_config" not in props or "task" not in props or props["task"].value not in TASKS:
        return None
    changed = False
    plain = json.loads(props["task_config"].value)
    new = convert_task_config(props["task"].value, plain)
    if new != plain or list(new) != list(plain):
        props["task_config"].value = json.dumps(new)
        changed = True
    if "action_clip" not in props:
        entry = model.metadata_props.add()
        entry.key, entry.value = "action_clip", json.dumps(1.0)
        changed = True
    return model.SerializeToString() if changed else None


def candidates(paths: list[Path]) -> list[Path]:
    files = []
    for path in paths:
        found = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [f for f in found if f.suffix in (".yaml", ".yml", ".onnx") and f.is_file()]
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[Path("results")])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 if due")
    args = parser.parse_args(argv)
    due = []
    for path in candidates(args.paths):
        new = convert_onnx(path) if path.suffix == ".onnx" else convert_yaml(path)
        if new is None:
            continue
        due.append(path)
        if not args.check:
            atomic_write_bytes(path, new)
        print(f"{'would convert' if args.check else 'converted'} {path}")
    return 1 if args.check and due else 0


if __name__ == "__main__":
    sys.exit(main())
