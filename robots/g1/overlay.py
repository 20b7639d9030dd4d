"""The calibration overlay for one G1: YAML, per-joint and IMU deviations from nominal.

Per-robot-instance data about the G1, so it lives with the robot (the lowest layer) and
every layer above reads it: `simreal calibrate` writes it; tasks (`g1-force`'s
`calibration` field) centre their model and randomization on it; the virtual robot
reads it as the hidden truth of a simulated "real" robot (`simreal sim-robot g1
--perturb FILE`). `simreal.deploy.g1.overlay` re-exports this module.
Every field is optional and absent means nominal; every value is a number, or
`{value: x, std: s}` when it carries its fit uncertainty:

    robot: g1
    latency_ms: 4                  # command to motor, ms
    imu:
      gyro_bias: [0.01, 0.0, -0.02]    # rad/s, added to the measured rate
      accel_bias: [0.0, 0.05, 0.0]     # m/s^2, added to the measured specific force
    joints:
      left_knee_joint:
        encoder_offset: 0.02       # rad: reported q = true q + offset
        kp_scale: 1.1              # the motor's kp and kd are the commanded ones times these
        kd_scale: 0.9
        armature: 0.03             # kg m^2 (absolute)
        friction_coulomb: 0.4      # N m
        friction_viscous: 0.05     # N m s/rad
        torque_limit_scale: 0.8
    extrinsics:                    # rigid sensor-to-sensor transforms, by a free name
      imu_to_camera:
        parent: imu                # frame names, free text
        child: camera
        translation: {value: [0.1, 0.0, 0.05], std: [0.001, 0.001, 0.001]}  # m, child
                                   # origin in the parent frame
        rotation: {value: [1.0, 0.0, 0.0, 0.0], std: [0.001, 0.001, 0.001]}  # unit
                                   # quaternion wxyz, child axes into parent; std: rad
                                   # about the parent's x, y, z (a left perturbation)

The `extrinsics` section came later; files without it load unchanged (no transforms).
A malformed file is refused with every bad field named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from simreal.config import ConfigError, load_yaml
from simreal.robots.g1.joints import JOINT_NAMES

JOINT_FIELDS = (
    "encoder_offset",
    "kp_scale",
    "kd_scale",
    "armature",
    "friction_coulomb",
    "friction_viscous",
    "torque_limit_scale",
)
IMU_FIELDS = ("gyro_bias", "accel_bias")
TOP_FIELDS = ("robot", "latency_ms", "imu", "joints", "extrinsics")
EXTRINSIC_FIELDS = ("parent", "child", "translation", "rotation")
_POSITIVE = {"kp_scale", "kd_scale", "torque_limit_scale"}
_NON_NEGATIVE = {"armature", "friction_coulomb", "friction_viscous"}


class OverlayError(ValueError):
    """The overlay file is malformed; the message names every bad field."""


@dataclass(frozen=True)
class JointOverlay:
    encoder_offset: float = 0.0
    kp_scale: float = 1.0
    kd_scale: float = 1.0
    armature: float | None = None
    """None: the nominal armature."""
    friction_coulomb: float | None = None
    friction_viscous: float | None = None
    """None: the nominal joint friction (robots/g1/actuators.py, `JOINT_FRICTION`)."""
    torque_limit_scale: float = 1.0


@dataclass(frozen=True)
class Extrinsic:
    """p_parent = R p_child + translation, R the unit quaternion `rotation_wxyz`."""

    parent: str
    child: str
    translation: tuple[float, float, float]
    rotation_wxyz: tuple[float, float, float, float]


@dataclass(frozen=True)
class Overlay:
    """Deviations from the nominal G1; `joints` maps joint name to its overlay."""

    latency_ms: float = 0.0
    gyro_bias: tuple[float, float, float] = (0.0, 0.0, 0.0)
    accel_bias: tuple[float, float, float] = (0.0, 0.0, 0.0)
    joints: dict[str, JointOverlay] = field(default_factory=dict)
    extrinsics: dict[str, Extrinsic] = field(default_factory=dict)

    def joint(self, name: str) -> JointOverlay:
        return self.joints.get(name, JointOverlay())


def _value(raw: object) -> object:
    """A bare value, or the `value` of `{value, std}`."""
    if isinstance(raw, dict) and set(raw) <= {"value", "std"} and "value" in raw:
        return raw["value"]
    return raw


def _number(raw: object) -> float | None:
    """The finite number in `raw`, or None (nan and inf are no calibration values, nor
    fit uncertainties)."""
    if isinstance(raw, dict) and "std" in raw and _number(raw["std"]) is None:
        return None
    value = _value(raw)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _vector3(raw: object) -> tuple[float, float, float] | None:
    value = _value(raw)
    if not isinstance(value, list) or len(value) != 3:
        return None
    numbers = [_number(x) for x in value]
    return None if None in numbers else tuple(numbers)  # type: ignore[return-value]


def _parse_extrinsics(raw: object) -> tuple[dict[str, Extrinsic], list[str]]:
    if not isinstance(raw, dict):
        return {}, [
            "extrinsics: expected a mapping of name to parent, child, translation, rotation"
        ]
    out: dict[str, Extrinsic] = {}
    errors: list[str] = []
    for name, fields in raw.items():
        where = f"extrinsics.{name}"
        if not isinstance(fields, dict):
            errors.append(f"{where}: expected a mapping of {', '.join(EXTRINSIC_FIELDS)}")
            continue
        bad = [f"{where}.{k}: unknown field" for k in fields if k not in EXTRINSIC_FIELDS]
        bad += [f"{where}.{k}: missing" for k in EXTRINSIC_FIELDS if k not in fields]
        for k in ("parent", "child"):
            if k in fields and not isinstance(fields[k], str):
                bad.append(f"{where}.{k}: {fields[k]!r} is not a frame name")
        translation = _vector3(fields.get("translation"))
        if "translation" in fields and translation is None:
            bad.append(f"{where}.translation: {fields['translation']!r} is not 3 numbers")
        quat = _value(fields.get("rotation"))
        numbers = [_number(x) for x in quat] if isinstance(quat, list) else []
        if "rotation" in fields and (len(numbers) != 4 or None in numbers):
            bad.append(f"{where}.rotation: {fields['rotation']!r} is not a quaternion wxyz")
        elif numbers and abs(sum(x * x for x in numbers) - 1.0) > 1e-3:  # type: ignore[operator]
            bad.append(f"{where}.rotation: {numbers} is not a unit quaternion")
        if bad:
            errors += bad
            continue
        out[name] = Extrinsic(
            fields["parent"],
            fields["child"],
            translation,
            tuple(numbers),  # type: ignore[arg-type]
        )
    return out, errors


def parse_overlay(data: object, source: str = "overlay", robot: str = "g1") -> Overlay:
    """An Overlay from parsed YAML; raises OverlayError naming every bad field."""
    if data is None:
        return Overlay()
    if not isinstance(data, dict):
        raise OverlayError(f"{source}: expected a mapping of {', '.join(TOP_FIELDS)}")
    errors = [f"unknown field {key!r}" for key in data if key not in TOP_FIELDS]
    if "robot" in data and data["robot"] != robot:
        errors.append(f"robot: {data['robot']!r} is not {robot!r}")
    latency = _number(data.get("latency_ms", 0.0))
    if latency is None or latency < 0:
        errors.append(f"latency_ms: {data.get('latency_ms')!r} is not a finite number >= 0")
    imu = data.get("imu") or {}
    biases: dict[str, tuple[float, float, float]] = {}
    if not isinstance(imu, dict):
        errors.append("imu: expected a mapping")
        imu = {}
    for key, raw in imu.items():
        if key not in IMU_FIELDS:
            errors.append(f"imu.{key}: unknown field (known: {', '.join(IMU_FIELDS)})")
        elif (vec := _vector3(raw)) is None:
            errors.append(f"imu.{key}: {raw!r} is not a list of 3 numbers")
        else:
            biases[key] = vec
    joints: dict[str, JointOverlay] = {}
    raw_joints = data.get("joints") or {}
    if not isinstance(raw_joints, dict):
        errors.append("joints: expected a mapping of joint name to fields")
        raw_joints = {}
    for name, fields in raw_joints.items():
        if name not in JOINT_NAMES:
            errors.append(f"joints.{name}: not a G1 joint")
            continue
        if not isinstance(fields, dict):
            errors.append(f"joints.{name}: expected a mapping of {', '.join(JOINT_FIELDS)}")
            continue
        values: dict[str, float] = {}
        for key, raw in fields.items():
            number = _number(raw)
            where = f"joints.{name}.{key}"
            if key not in JOINT_FIELDS:
                errors.append(f"{where}: unknown field (known: {', '.join(JOINT_FIELDS)})")
            elif number is None:
                errors.append(f"{where}: {raw!r} is not a finite number")
            elif key in _POSITIVE and number <= 0:
                errors.append(f"{where}: {number} must be > 0")
            elif key in _NON_NEGATIVE and number < 0:
                errors.append(f"{where}: {number} must be >= 0")
            else:
                values[key] = number
        joints[name] = JointOverlay(**values)
    extrinsics, extrinsic_errors = _parse_extrinsics(data.get("extrinsics") or {})
    errors += extrinsic_errors
    if errors:
        raise OverlayError(f"{source}: " + "; ".join(errors))
    return Overlay(latency_ms=latency or 0.0, joints=joints, extrinsics=extrinsics, **biases)


def load_overlay(path: Path | str) -> Overlay:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such overlay file")
    try:
        data = load_yaml(path.read_text(), str(path))
    except ConfigError as err:
        raise OverlayError(str(err)) from None
    return parse_overlay(data, source=str(path))
