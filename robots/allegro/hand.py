"""Facts of a four-finger, 16-joint Allegro-like right hand and its 6-DoF wrist mount.

Link offsets, joint axes and ranges and collision box sizes follow the public Allegro
hand descriptions (Wonik Robotics' URDF, as also used by MuJoCo Menagerie's
`wonik_allegro`); link masses follow the public URDF's inertial masses (rounded). Frames:
in the palm frame the fingers extend along +z, the thumb sits on the palm side (-x) and
the first finger at +y (a right hand). Joint 0 of each finger abducts about its z axis,
joints 1-3 flex about y. Angles in rad, lengths in m, masses in kg.

Gains are the project's choice for a simulated, gravity-compensated hand tracked at
20-50 Hz: finger position servos of 3 N m/rad limited to 0.7 N m (the order of the real
hand's joint torque), and a stiff wrist (2000 N/m, 60 N m/rad) standing in for the arm
that carries the hand. Finger armature (reflected motor inertia) keeps the servos
stable at a 5 ms physics step.
"""

from __future__ import annotations

from dataclasses import dataclass

FINGERS = ("ff", "mf", "rf", "th")
"""First (index), middle, ring finger and thumb, in joint order."""


@dataclass(frozen=True)
class JointSpec:
    name: str
    axis: tuple[float, float, float]
    lower: float
    upper: float


@dataclass(frozen=True)
class LinkSpec:
    """One finger link: its body offset from the parent body, the joint it turns on, its
    collision box (half sizes, centre in the link frame) and mass."""

    name: str
    pos: tuple[float, float, float]
    joint: JointSpec
    box_half: tuple[float, float, float]
    box_pos: tuple[float, float, float]
    mass: float


@dataclass(frozen=True)
class FingerSpec:
    name: str
    base_pos: tuple[float, float, float]
    base_quat: tuple[float, float, float, float]
    """Mount of the finger's first link in the palm frame, quaternion (w, x, y, z)."""
    links: tuple[LinkSpec, ...]
    tip_radius: float
    tip_half_length: float
    tip_z: float
    """Fingertip capsule (along the last link's z), centred tip_z from the last joint."""
    tip_mass: float


_BASE = JointSpec("j0", (0.0, 0.0, 1.0), -0.47, 0.47)
_PROXIMAL = JointSpec("j1", (0.0, 1.0, 0.0), -0.196, 1.61)
_MEDIAL = JointSpec("j2", (0.0, 1.0, 0.0), -0.174, 1.709)
_DISTAL = JointSpec("j3", (0.0, 1.0, 0.0), -0.227, 1.618)
_LINK_BOX = (0.0098, 0.01375)


def _finger(name: str, pos: tuple[float, float, float], quat: tuple[float, ...]) -> FingerSpec:
    """One of the three identical long fingers (they differ only in their mount)."""
    return FingerSpec(
        name,
        pos,
        quat,
        (
            LinkSpec("base", (0.0, 0.0, 0.0), _BASE, (*_LINK_BOX, 0.0082), (0, 0, 0.0082), 0.0119),
            LinkSpec(
                "proximal", (0, 0, 0.0164), _PROXIMAL, (*_LINK_BOX, 0.027), (0, 0, 0.027), 0.065
            ),
            LinkSpec(
                "medial", (0, 0, 0.054), _MEDIAL, (*_LINK_BOX, 0.0192), (0, 0, 0.0192), 0.0355
            ),
            LinkSpec("distal", (0, 0, 0.0384), _DISTAL, (*_LINK_BOX, 0.008), (0, 0, 0.008), 0.0096),
        ),
        tip_radius=0.012,
        tip_half_length=0.01,
        tip_z=0.019,
        tip_mass=0.0168,
    )


HAND = (
    _finger("ff", (0.0, 0.0435, -0.001542), (0.999048, -0.0436194, 0.0, 0.0)),
    _finger("mf", (0.0, 0.0, 0.0007), (1.0, 0.0, 0.0, 0.0)),
    _finger("rf", (0.0, -0.0435, -0.001542), (0.999048, 0.0436194, 0.0, 0.0)),
    FingerSpec(
        "th",
        (-0.0182, 0.019333, -0.045987),
        (0.477714, -0.521334, -0.521334, -0.477714),
        (
            LinkSpec(
                "base",
                (0.0, 0.0, 0.0),
                JointSpec("j0", (-1.0, 0.0, 0.0), 0.263, 1.396),
                (0.0179, 0.017, 0.02275),
                (-0.0179, 0.009, 0.0145),
                0.0176,
            ),
            LinkSpec(
                "proximal",
                (-0.027, 0.005, 0.0399),
                JointSpec("j1", (0.0, 0.0, 1.0), -0.105, 1.163),
                (*_LINK_BOX, 0.00885),
                (0, 0, 0.00885),
                0.0119,
            ),
            LinkSpec(
                "medial",
                (0, 0, 0.0177),
                JointSpec("j2", (0.0, 1.0, 0.0), -0.189, 1.644),
                (*_LINK_BOX, 0.0257),
                (0, 0, 0.0257),
                0.038,
            ),
            LinkSpec(
                "distal",
                (0, 0, 0.0514),
                JointSpec("j3", (0.0, 1.0, 0.0), -0.162, 1.719),
                (*_LINK_BOX, 0.0157),
                (0, 0, 0.0157),
                0.0388,
            ),
        ),
        tip_radius=0.012,
        tip_half_length=0.008,
        tip_z=0.035,
        tip_mass=0.0168,
    ),
)
"""The four fingers in joint order."""

PALM_BOX_HALF = (0.0204, 0.0565, 0.0475)
PALM_BOX_POS = (-0.0093, 0.0, -0.0475)
PALM_MASS = 0.4154

FINGER_JOINT_NAMES = tuple(f"{f.name}{link.joint.name}" for f in HAND for link in f.links)
"""The 16 finger joints in hardware order: ffj0..ffj3, mfj0.., rfj0.., thj0..thj3."""
FINGER_LOWER = tuple(link.joint.lower for f in HAND for link in f.links)
FINGER_UPPER = tuple(link.joint.upper for f in HAND for link in f.links)
FINGERTIP_SITES = tuple(f"{f.name}_tip" for f in HAND)


@dataclass(frozen=True)
class WristJoint:
    name: str
    kind: str
    """"slide" (m) or "hinge" (rad)."""
    axis: tuple[float, float, float]
    lower: float
    upper: float


WRIST = (
    WristJoint("wrist_x", "slide", (1.0, 0.0, 0.0), -0.5, 0.5),
    WristJoint("wrist_y", "slide", (0.0, 1.0, 0.0), -0.5, 0.5),
    WristJoint("wrist_z", "slide", (0.0, 0.0, 1.0), -0.2, 0.6),
    WristJoint("wrist_roll", "hinge", (1.0, 0.0, 0.0), -1.2, 1.2),
    WristJoint("wrist_pitch", "hinge", (0.0, 1.0, 0.0), -1.2, 1.2),
    WristJoint("wrist_yaw", "hinge", (0.0, 0.0, 1.0), -3.1, 3.1),
)
"""The free-floating wrist as a joint chain from the world: slides along world x, y, z,
then hinges about the moved frame's x, y, z (so the wrist rotation is Rx Ry Rz of the
three angles, intrinsic). Its origin is the mount point `WRIST_HEIGHT` above the floor."""
WRIST_HEIGHT = 0.2
WRIST_JOINT_NAMES = tuple(j.name for j in WRIST)
JOINT_NAMES = WRIST_JOINT_NAMES + FINGER_JOINT_NAMES
"""All 22 actuated joints in action order: wrist (6), then fingers (16)."""

PALM_MOUNT_POS = (0.095, 0.0, 0.0)
PALM_MOUNT_QUAT = (0.7071067811865476, 0.0, 0.7071067811865476, 0.0)
"""Palm frame in the wrist frame: the wrist sits at the base of the palm (the palm box ends
0.095 m behind the knuckles); at zero wrist angles the fingers point along world +x and
the palm side (palm +x) faces down."""


@dataclass(frozen=True)
class ServoGains:
    """A position servo: torque = kp (target - q) - kd qdot, clipped at +-force_limit."""

    kp: float
    kd: float
    force_limit: float
    armature: float


FINGER_SERVO = ServoGains(kp=3.0, kd=0.1, force_limit=0.7, armature=0.002)
WRIST_SLIDE_SERVO = ServoGains(kp=2000.0, kd=60.0, force_limit=200.0, armature=0.0)
WRIST_HINGE_SERVO = ServoGains(kp=60.0, kd=2.0, force_limit=20.0, armature=0.01)


def servo(joint_name: str) -> ServoGains:
    """The servo gains of joint `joint_name`."""
    for w in WRIST:
        if w.name == joint_name:
            return WRIST_SLIDE_SERVO if w.kind == "slide" else WRIST_HINGE_SERVO
    if joint_name in FINGER_JOINT_NAMES:
        return FINGER_SERVO
    raise KeyError(f"unknown Allegro joint {joint_name!r}; joints: {', '.join(JOINT_NAMES)}")


def joint_limits() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Lower and upper limits of the 22 joints in action order."""
    return (
        tuple(j.lower for j in WRIST) + FINGER_LOWER,
        tuple(j.upper for j in WRIST) + FINGER_UPPER,
    )


def hand_mass() -> float:
    return (
        PALM_MASS + sum(link.mass for f in HAND for link in f.links) + sum(f.tip_mass for f in HAND)
    )
