"""Build the Allegro-like hand's MuJoCo model from its facts (`hand.py`).

One description source: the hand's bodies, actuators and sensors come from here, both
for `build_mjcf()` (the hand alone over a floor, `simreal robot allegro --mjcf`) and for
task scenes, which place `hand_xml()`, `actuator_xml()` and `sensor_xml()` in theirs.

Collision geometry is primitive: boxes for the palm and links, capsules for the
fingertips. Hand geoms carry contype 2 and conaffinity 0 by default: they touch what
accepts bit 2 (a task's objects) but neither each other nor a floor that does not.
Every hand body is gravity-compensated (`gravcomp`), as the arm carrying a real hand
would be, so the wrist servos hold the pose without sag.
"""

from __future__ import annotations

from simreal.robots.allegro.hand import (
    FINGER_JOINT_NAMES,
    FINGERTIP_SITES,
    HAND,
    PALM_BOX_HALF,
    PALM_BOX_POS,
    PALM_MASS,
    PALM_MOUNT_POS,
    PALM_MOUNT_QUAT,
    WRIST,
    WRIST_HEIGHT,
    WRIST_JOINT_NAMES,
    FingerSpec,
    joint_limits,
    servo,
)

HAND_CONTYPE = 2
HAND_CONAFFINITY = 0
HAND_FRICTION = 0.5
"""Sliding friction of the hand's geoms. MuJoCo combines a pair's friction by the larger of
the two, so an object's randomized friction above this is what a grasp gets."""
WRIST_MASS = 0.05
"""A small flange carrying the six wrist joints (a moving body needs mass)."""


def _v(values) -> str:
    return " ".join(f"{v:.9g}" for v in values)


def _finger_xml(f: FingerSpec, geom_attrs: str, indent: str) -> str:
    opens, closes = [], []
    pad = indent
    for i, link in enumerate(f.links):
        body = f"{f.name}_{link.name}"
        pos = f.base_pos if i == 0 else link.pos
        quat = f' quat="{_v(f.base_quat)}"' if i == 0 else ""
        j = link.joint
        opens.append(
            f'{pad}<body name="{body}" pos="{_v(pos)}"{quat} gravcomp="1">\n'
            f'{pad}  <joint name="{f.name}{j.name}" axis="{_v(j.axis)}" '
            f'range="{j.lower:.9g} {j.upper:.9g}"/>\n'
            f'{pad}  <geom name="{body}" type="box" size="{_v(link.box_half)}" '
            f'pos="{_v(link.box_pos)}" mass="{link.mass:.9g}"{geom_attrs}/>\n'
        )
        closes.append(f"{pad}</body>\n")
        pad += "  "
    tip = (
        f'{pad}<geom name="{f.name}_tip" type="capsule" size="{f.tip_radius:.9g} '
        f'{f.tip_half_length:.9g}" pos="0 0 {f.tip_z:.9g}" mass="{f.tip_mass:.9g}"'
        f"{geom_attrs}/>\n"
        f'{pad}<site name="{f.name}_tip" type="capsule" size="{f.tip_radius + 0.002:.9g} '
        f'{f.tip_half_length + 0.002:.9g}" pos="0 0 {f.tip_z:.9g}" rgba="1 0 0 0.2"/>\n'
    )
    return "".join(opens) + tip + "".join(reversed(closes))


def hand_xml(contype: int = HAND_CONTYPE, conaffinity: int = HAND_CONAFFINITY) -> str:
    """The wrist (6 joints on one body, from the world) carrying the palm and fingers."""
    attrs = f' contype="{contype}" conaffinity="{conaffinity}" friction="{HAND_FRICTION:.9g} 0.005 0.0001"'
    wrist_joints = "\n".join(
        f'      <joint name="{w.name}" type="{w.kind}" axis="{_v(w.axis)}" '
        f'range="{w.lower:.9g} {w.upper:.9g}" armature="{servo(w.name).armature:.9g}"/>'
        for w in WRIST
    )
    fingers = "".join(_finger_xml(f, attrs, "          ") for f in HAND)
    return f"""    <body name="wrist" pos="0 0 {WRIST_HEIGHT:.9g}" gravcomp="1">
{wrist_joints}
      <inertial pos="0 0 0" mass="{WRIST_MASS:.9g}" diaginertia="1e-5 1e-5 1e-5"/>
      <site name="wrist" size="0.01" rgba="0 0 1 0.5"/>
      <body name="palm" pos="{_v(PALM_MOUNT_POS)}" quat="{_v(PALM_MOUNT_QUAT)}" gravcomp="1">
        <geom name="palm" type="box" size="{_v(PALM_BOX_HALF)}" pos="{_v(PALM_BOX_POS)}" mass="{PALM_MASS:.9g}"{attrs}/>
        <site name="palm_centre" pos="0.012 0 -0.0475" size="0.008" rgba="0 1 0 0.5"/>
{fingers}      </body>
    </body>"""


def default_xml() -> str:
    """Finger joint defaults (armature, damping) for the task's <default> section."""
    g = servo(FINGER_JOINT_NAMES[0])
    return f'    <joint armature="{g.armature:.9g}" damping="0" limited="true"/>'


def actuator_xml() -> str:
    """22 position servos in action order (wrist, then fingers), gains from `hand.py`;
    control ranges are the joint ranges."""
    lower, upper = joint_limits()
    lines = []
    for name, lo, hi in zip(WRIST_JOINT_NAMES + FINGER_JOINT_NAMES, lower, upper, strict=True):
        g = servo(name)
        lines.append(
            f'    <position name="{name}" joint="{name}" kp="{g.kp:.9g}" kv="{g.kd:.9g}" '
            f'ctrlrange="{lo:.9g} {hi:.9g}" forcerange="{-g.force_limit:.9g} {g.force_limit:.9g}"/>'
        )
    return "\n".join(lines)


def sensor_xml() -> str:
    """Per fingertip: a touch sensor (summed normal force, N) and its position (world)."""
    touch = [f'    <touch name="{s}_touch" site="{s}"/>' for s in FINGERTIP_SITES]
    pos = [f'    <framepos name="{s}_pos" objtype="site" objname="{s}"/>' for s in FINGERTIP_SITES]
    return "\n".join(touch + pos)


def model_xml(model: str, option: str, worldbody: str, head: str = "") -> str:
    """A whole MJCF model around the hand's defaults, actuators and sensors: `option` holds
    the <option> attributes, `worldbody` the world's content (hand_xml() among it), `head`
    any elements that go before <default> (e.g. <visual>)."""
    return f"""<mujoco model="{model}">
  <compiler angle="radian" autolimits="true"/>
  <option {option}/>{head}
  <default>
{default_xml()}
  </default>
  <worldbody>
{worldbody}
  </worldbody>
  <actuator>
{actuator_xml()}
  </actuator>
  <sensor>
{sensor_xml()}
  </sensor>
</mujoco>
"""


def build_mjcf(physics_dt: float = 0.005) -> str:
    """The hand alone over a floor (the floor does not touch the hand)."""
    return model_xml(
        "allegro_right_simreal",
        f'timestep="{physics_dt:.9g}" integrator="implicitfast"',
        f"""    <light pos="0 0 1.5" dir="0 0 -1"/>
    <geom name="floor" type="plane" size="1 1 0.05" contype="1" conaffinity="1" rgba="0.8 0.8 0.8 1"/>
{hand_xml()}""",
    )
