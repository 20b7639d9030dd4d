"""Run directories: runs/<task>/<YYYYmmdd-HHMMSS>-<seed>/ with the config that made them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from simreal.config import load_yaml
from simreal.policies.checkpoint import atomic_write_bytes

CONFIG_FILE = "config.yaml"


def new_run_dir(root: Path, task: str, seed: int) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = root / task / f"{stamp}-{seed}"
    suffix = 1
    while path.exists():
        path = root / task / f"{stamp}-{seed}.{suffix}"
        suffix += 1
    path.mkdir(parents=True)
    return path


def write_config(run_dir: Path, config: dict[str, Any]) -> None:
    text = yaml.safe_dump(config, sort_keys=False)
    atomic_write_bytes(run_dir / CONFIG_FILE, text.encode())


def read_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{run_dir}: not a simreal run directory (no {CONFIG_FILE})")
    data = load_yaml(path.read_text(), str(path))
    if not isinstance(data, dict) or "train" not in data:
        raise ValueError(f"{path}: malformed run config (no 'train' section)")
    return data
