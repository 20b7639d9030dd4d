"""A virtual robot's hidden truth: a calibration overlay plus the sensor noise it reports with.

`simreal sim-robot g1 --perturb FILE` reads the overlay schema (`overlay.py`) and one more
top-level section, `noise:`, the standard deviation of white Gaussian noise added to
every sample the robot reports (a fresh draw per sample and channel):

    noise:
      encoder_rad: 1.0e-4      # joint positions
      joint_vel_rad_s: 0.01    # joint velocities
      tau_est_nm: 0.05         # motor torque estimates
      gyro_rad_s: 0.002        # pelvis IMU angular rate
      accel_m_s2: 0.0          # pelvis IMU specific force
      seed: 0                  # of the noise generator (an integer >= 0)

Absent fields mean no noise. Unknown fields are refused; a negative or non-finite value
is refused naming the field. The section belongs to the virtual robot only: a
calibration overlay (what `simreal calibrate` writes and tasks read) has none, and
`load_overlay` refuses one.

Encoder quantization is not modelled: the G1's encoder resolution is not in the
project's facts (`../shared/FACTS.md` lists limits, gains and the DDS types, no
resolution), and a guessed step would be presented as a property of the robot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from simreal.config import ConfigError, load_yaml
from simreal.robots.g1.overlay import Overlay, OverlayError, parse_overlay

NOISE_FIELDS = ("encoder_rad", "joint_vel_rad_s", "tau_est_nm", "gyro_rad_s", "accel_m_s2")


@dataclass(frozen=True)
class SensorNoise:
    """Standard deviations of the white noise on each reported channel (0: none)."""

    encoder_rad: float = 0.0
    joint_vel_rad_s: float = 0.0
    tau_est_nm: float = 0.0
    gyro_rad_s: float = 0.0
    accel_m_s2: float = 0.0
    seed: int = 0

    @property
    def any(self) -> bool:
        return any(getattr(self, k) > 0 for k in NOISE_FIELDS)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in (*NOISE_FIELDS, "seed")}


@dataclass(frozen=True)
class Perturbation:
    """What `--perturb FILE` gives the virtual robot."""

    overlay: Overlay = field(default_factory=Overlay)
    noise: SensorNoise = field(default_factory=SensorNoise)


def parse_noise(raw: object, source: str = "perturbation") -> SensorNoise:
    """The `noise:` section; raises OverlayError naming every bad field."""
    if raw is None:
        return SensorNoise()
    if not isinstance(raw, dict):
        raise OverlayError(f"{source}: noise: expected a mapping of {', '.join(NOISE_FIELDS)}")
    errors, values = [], {}
    for key, value in raw.items():
        where = f"noise.{key}"
        if key == "seed":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                errors.append(f"{where}: {value!r} is not an integer >= 0")
            else:
                values[key] = value
        elif key not in NOISE_FIELDS:
            errors.append(f"{where}: unknown field (known: {', '.join(NOISE_FIELDS)}, seed)")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            errors.append(f"{where}: {value!r} is not a number")
        elif not math.isfinite(value) or value < 0:
            errors.append(f"{where}: {value!r} must be a finite number >= 0")
        else:
            values[key] = float(value)
    if errors:
        raise OverlayError(f"{source}: " + "; ".join(errors))
    return SensorNoise(**values)


def parse_perturbation(data: object, source: str = "perturbation") -> Perturbation:
    """A Perturbation from parsed YAML: the overlay schema plus `noise:`."""
    if isinstance(data, dict) and "noise" in data:
        rest = {k: v for k, v in data.items() if k != "noise"}
        return Perturbation(parse_overlay(rest, source), parse_noise(data["noise"], source))
    return Perturbation(parse_overlay(data, source))


def load_perturbation(path: Path | str) -> Perturbation:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such perturbation file")
    try:
        data = load_yaml(path.read_text(), str(path))
    except ConfigError as err:
        raise OverlayError(str(err)) from None
    return parse_perturbation(data, source=str(path))
