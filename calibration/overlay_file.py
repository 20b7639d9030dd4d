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
    extrinsics: dict[str, dict] | None = None,
) -> Path:
    """Set the given fields in the overlay at `path` (created if absent); other fields stay.
    `extrinsics` entries are written as given (see `extrinsic_entry`)."""
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
    for name, entry in (extrinsics or {}).items():
        data.setdefault("extrinsics", {})[name] = entry
    parse_overlay(data, source=str(path))
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def offset_estimates(path: Path | str) -> dict[str, Estimate]:
    """The encoder offsets the overlay at `path` holds (none if it does not exist), with
    their stds (0 where the file gives a bare number: a value set by hand)."""
    path = Path(path)
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    parse_overlay(data, source=str(path))
    out = {}
    for name, fields in (data.get("joints") or {}).items():
        raw = (fields or {}).get("encoder_offset")
        if isinstance(raw, dict):
            out[name] = Estimate(float(raw["value"]), float(raw.get("std", 0.0)))
        elif raw is not None:
            out[name] = Estimate(float(raw), 0.0)
    return out


def extrinsic_entry(
    parent: str, child: str, translation, translation_std, rotation_wxyz, rotation_std
) -> dict:
    """One `extrinsics` entry of the overlay: values with their standard deviations."""

    def r(v, digits: int = 7) -> list[float]:
        return [round(float(x), digits) for x in v]

    return {
        "parent": parent,
        "child": child,
        "translation": {"value": r(translation), "std": r(translation_std)},
        "rotation": {"value": r(rotation_wxyz, 9), "std": r(rotation_std)},
    }
