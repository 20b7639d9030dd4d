"""The G1 calibration overlay; it lives in `simreal.robots.g1.overlay` (the robot layer,
so tasks can read it) and is re-exported here for deploy-side imports."""

from simreal.robots.g1.overlay import (
    EXTRINSIC_FIELDS,
    IMU_FIELDS,
    JOINT_FIELDS,
    TOP_FIELDS,
    Extrinsic,
    JointOverlay,
    Overlay,
    OverlayError,
    load_overlay,
    parse_overlay,
)

__all__ = [
    "EXTRINSIC_FIELDS",
    "IMU_FIELDS",
    "JOINT_FIELDS",
    "TOP_FIELDS",
    "Extrinsic",
    "JointOverlay",
    "Overlay",
    "OverlayError",
    "load_overlay",
    "parse_overlay",
]
