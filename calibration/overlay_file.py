"""Writing calibration results into the overlay YAML, merging with what it already holds."""

from __future__ import annotations

from pathlib import Path

import yaml

from simreal.calibration.dynamics import Estimate
from simreal.robots.g1.overlay import parse_overlay


def _entry(e: Estimate) -> dict[str, float]:
    return {"value": round(float(e.value), 6), "std": round(float(e.std), 6)}


def update_overlay(
    path: Path | str,
    joints: dict[str, dict[str, Estimate]] | None = None,
    latency_ms: Estimate | None = None,
    imu: dict[str, list[Estimate]] | None = None,
) -> Path:
    """Set the given fields in the overlay at `path` (created if absent); other fields stay."""
    path = Path(path)
    data = (yaml.safe_load(path.read_text()) if path.is_file() else None) or {}
    data["robot"] = "g1"
    if latency_ms is not None:
        data["latency_ms"] = _entry(latency_ms)
    for key, vec in (imu or {}).items():
        data.setdefault("imu", {})[key] = {
            "value": [round(e.value, 6) for e in vec],
            "std": [round(e.std, 6) for e in vec],
        }
    for name, fields in (joints or {}).items():
        entry = data.setdefault("joints", {}).setdefault(name, {})
        for key, est in fields.items():
            entry[key] = _entry(est)
    parse_overlay(data, source=str(path))
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
