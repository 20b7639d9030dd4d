"""Build the G1's MuJoCo model from its tables.

Collision bits: the soles carry contype 1, every other robot geom contype 2. A scene
geom touches the soles when its conaffinity includes 1 and the rest of the body when it
includes 2; the floor's conaffinity is 1 (soles only), or 3 with `body_floor_contact`.

Self-collision (on by default): every robot geom also has conaffinity 2, so limbs, hands
and feet collide with the body and with each other as the real robot's shells do; an
arm cannot pass through the torso to hold a load. Excluded, by one rule
(`self_collision_excludes`): each link with its nearest ancestor that has shapes (the
joint between them keeps them apart on the robot, while the primitives, which round the
motor housings, overlap at the joint), and pairs already in contact at the default pose.
With it off (`self_collision=False`) the robot's conaffinity is 0: the idealized body of
earlier results, kept to reproduce them.

Each joint is a MuJoCo position actuator with the joint's kp and kd (the damping term
is integrated implicitly by implicitfast), its force clipped at the torque limit, its
control the PD target in rad.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from simreal.robots.g1.actuators import (
    ACTUATORS,
    CTRL_HISTORY_SAMPLES,
    JOINT_FRICTION_COULOMB_N_M,
    JOINT_FRICTION_VISCOUS_N_M_S,
    MOTOR_CONSTANT,
    VELOCITY_LIMITS,
    driver_resistance,
)
from simreal.robots.g1.geometry import FEET, SHAPES, Box, Capsule, Shape
from simreal.robots.g1.joints import (
    DEFAULT_JOINT_POS,
    FRAMES,
    JOINT_NAMES,
    JOINTS,
    LINK_MOUNTS,
    ROOT_LINK,
    JointSpec,
    children_of,
)
from simreal.robots.g1.kinematics import rpy_quat, standing_height
from simreal.robots.g1.links import LINK_INERTIALS

IMU_SITES: dict[str, str] = {"pelvis": "imu_in_pelvis", "torso": "imu_in_torso"}
"""IMU name -> its site; sensors are `imu_<name>_gyro`, `imu_<name>_accel`, `imu_<name>_quat`."""

HAND_SITES: dict[str, str] = {"left_hand": "left_rubber_hand", "right_hand": "right_rubber_hand"}
"""Hand site -> hand body; sensors `<site>_force` and `<site>_torque` read the wrench the
hand passes to the wrist (the hand's own weight included), in the palm mount frame."""

_FRAME_NAMES = {frame.child for frame in FRAMES}


def _v(values: Iterable[float]) -> str:
    return " ".join(f"{x:.9g}" for x in values)


def _quat(rpy: tuple[float, float, float]) -> str:
    """A quat attribute for a URDF-style rpy, empty for no rotation."""
    return "" if rpy == (0.0, 0.0, 0.0) else f' quat="{_v(rpy_quat(rpy))}"'


def _geom(shape: Shape, attrs: str) -> str:
    if isinstance(shape, Capsule):
        return f'<geom type="capsule" fromto="{_v((*shape.start, *shape.end))}" size="{shape.radius:.9g}" {attrs}/>'
    if isinstance(shape, Box):
        return f'<geom type="box" pos="{_v(shape.center)}" size="{_v(shape.half_size)}" {attrs}/>'
    return f'<geom type="sphere" pos="{_v(shape.center)}" size="{shape.radius:.9g}" {attrs}/>'


def _body(
    link: str, pos: str, rpy: tuple[float, float, float], joint: str, visuals: bool, indent: str
) -> str:
    """One link as a body: its joint, inertial, geoms, sites and, recursively, its children."""
    inertial = LINK_INERTIALS[link]
    lines = [f'{indent}<body name="{link}" pos="{pos}"{_quat(rpy)}>']
    inner = indent + "  "
    if joint:
        lines.append(inner + joint)
    lines.append(
        f'{inner}<inertial pos="{_v(inertial.com)}" mass="{inertial.mass:.9g}" '
        f'fullinertia="{_v(inertial.inertia)}"/>'
    )
    for shape in SHAPES.get(link, ()):
        if link in FEET:
            lines.append(inner + _geom(shape, f'name="{FEET[link]}" class="sole"'))
        else:
            lines.append(inner + _geom(shape, 'class="collision"'))
        if visuals:
            lines.append(inner + _geom(shape, 'class="visual"'))
    lines += [f'{inner}<site name="{site}"/>' for site, body in HAND_SITES.items() if body == link]
    for child in children_of(link):
        if child.child in _FRAME_NAMES:
            lines.append(
                f'{inner}<site name="{child.child}" pos="{_v(child.pos)}"{_quat(child.rpy)}/>'
            )
            continue
        joint_xml = ""
        if isinstance(child, JointSpec):
            joint_xml = (
                f'<joint name="{child.name}" axis="{_v(child.axis)}" '
                f'range="{child.lower:.9g} {child.upper:.9g}" '
                f'armature="{ACTUATORS[child.name].armature:.9g}" '
                f'frictionloss="{JOINT_FRICTION_COULOMB_N_M:.9g}" '
                f'damping="{JOINT_FRICTION_VISCOUS_N_M_S:.9g}"/>'
            )
        lines.append(_body(child.child, _v(child.pos), child.rpy, joint_xml, visuals, inner))
    lines.append(f"{indent}</body>")
    return "\n".join(lines)


def _actuators(native_motors: bool = False, motor_envelope: bool = True) -> str:
    """The joints' actuators: MuJoCo position actuators (the PD loop, its force clipped at
    the torque limit), or with `native_motors` ones that keep a ctrl history for MuJoCo's
    own command delay and, with `motor_envelope`, are `dcmotor`s whose driver gives the
    torque-speed envelope (`driver_resistance`)."""
    lines = []
    for index, name in enumerate(JOINT_NAMES):
        joint, act = JOINTS[name], ACTUATORS[name]
        common = f'name="{name}" joint="{name}" ctrlrange="{joint.lower:.9g} {joint.upper:.9g}"'
        history = f' nsample="{CTRL_HISTORY_SAMPLES}" interp="linear" delay="0"'
        if native_motors and motor_envelope:
            no_load_speed = float(VELOCITY_LIMITS[index])
            resistance = driver_resistance(act.torque_limit, no_load_speed)
            lines.append(
                f'    <dcmotor {common} input="pos" resistance="{resistance:.17g}" '
                f'motorconst="{MOTOR_CONSTANT:.17g} {MOTOR_CONSTANT:.17g}" '
                f'controller="{act.kp:.17g} 0 {act.kd:.17g} 0 0 '
                f'{MOTOR_CONSTANT * no_load_speed:.17g}" '
                f'saturation="{act.torque_limit:.17g} 0 0"{history}/>'
            )
            continue
        lines.append(
            f'    <position {common} kp="{act.kp:.9g}" kv="{act.kd:.9g}" '
            f'forcerange="{-act.torque_limit:.9g} {act.torque_limit:.9g}"'
            f"{history if native_motors else ''}/>"
        )
    return "\n".join(lines)


SELF_CONTACT_SENSOR = "self_contact"
"""With self-collision on: MuJoCo's contact sensor over robot-robot contacts (both geoms
in the pelvis's subtree), reading (number of contacts, the smallest signed distance in m,
negative when penetrating). A reward that keeps limbs off the body reads it from the
engine's own collision pass, with no second collision query per simulation."""


COM_SENSOR = "robot_com"
"""MuJoCo's subtreecom sensor at the pelvis: the whole robot's centre of mass in the
world (m), which a balance reward reads from the engine instead of walking every link."""

LOAD_BODIES = ("torso_link", "left_rubber_hand", "right_rubber_hand")
"""The links external loads act on (at each link's centre of mass, as MuJoCo's
xfrc_applied does): the torso and the hands."""


def load_point_sensor(body: str) -> str:
    """Name of the framepos sensor at `body`'s centre of mass (world, m)."""
    return f"{body}_com"


def _sensors(self_collision: bool) -> str:
    lines = [f'    <subtreecom name="{COM_SENSOR}" body="{ROOT_LINK}"/>']
    # objtype "body" places a frame sensor at the body's inertial frame (xipos)
    lines += [
        f'    <framepos name="{load_point_sensor(b)}" objtype="body" objname="{b}"/>'
        for b in LOAD_BODIES
    ]
    for imu, site in IMU_SITES.items():
        lines += [
            f'    <gyro name="imu_{imu}_gyro" site="{site}"/>',
            f'    <accelerometer name="imu_{imu}_accel" site="{site}"/>',
            f'    <framequat name="imu_{imu}_quat" objtype="site" objname="{site}"/>',
        ]
    for site in HAND_SITES:
        lines += [
            f'    <force name="{site}_force" site="{site}"/>',
            f'    <torque name="{site}_torque" site="{site}"/>',
        ]
    if self_collision:
        lines.append(
            f'    <contact name="{SELF_CONTACT_SENSOR}" subtree1="{ROOT_LINK}" '
            f'subtree2="{ROOT_LINK}" data="found dist" reduce="mindist" num="1"/>'
        )
    return "\n".join(lines)


INTEGRATORS = ("implicitfast", "Euler", "RK4", "implicit")


def _shaped_ancestor(link: str, parent_of: dict[str, str]) -> str | None:
    """The nearest ancestor of `link` that carries collision shapes (None at the root)."""
    parent = parent_of.get(link)
    while parent is not None and parent not in SHAPES:
        parent = parent_of.get(parent)
    return parent


@functools.cache
def self_collision_excludes() -> tuple[tuple[str, str], ...]:
    """Body pairs that never collide with each other, sorted: each shaped link with its
    nearest shaped ancestor, and the pairs touching at the default pose (computed here
    from the model itself, so the list follows the shapes when they change)."""
    import mujoco

    parent_of = {spec.child: spec.parent for spec in (*LINK_MOUNTS, *JOINTS.values())}
    pairs = set()
    for link in SHAPES:
        ancestor = _shaped_ancestor(link, parent_of)
        if ancestor is not None:
            pairs.add(tuple(sorted((link, ancestor))))
    xml = _build(
        physics_dt=0.005,
        floor=False,
        body_floor_contact=False,
        visual_geoms=True,
        integrator="implicitfast",
        self_collision=True,
        excludes=(),
    )
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
    data.qpos[2] += 1.0  # clear of everything but itself
    mujoco.mj_forward(model, data)
    for contact in data.contact[: data.ncon]:
        a, b = (model.body(model.geom_bodyid[g]).name for g in (contact.geom1, contact.geom2))
        pairs.add(tuple(sorted((a, b))))
    return tuple(sorted(pairs))


def build_mjcf(
    physics_dt: float = 0.005,
    floor: bool = True,
    body_floor_contact: bool = False,
    visual_geoms: bool = True,
    integrator: str = "implicitfast",
    self_collision: bool = True,
    terrain: tuple[str, str] | None = None,
    native_motors: bool = False,
    motor_envelope: bool = True,
) -> str:
    """Return an MJCF string: the G1 on a free joint named `pelvis`, over a floor.

    `integrator` is MuJoCo's (implicitfast by default; Euler, RK4 or implicit for a
    sim-to-sim check of a policy against a different integration scheme).
    `self_collision`: the robot's geoms collide with each other (module docstring).
    `terrain`: (an MJCF `<hfield name="terrain">` element, the geom's position) makes the
    floor that height field instead of a plane (g1-walk's rough ground); it keeps the
    name `floor`.
    `native_motors`: the actuators MuJoCo's native actuation needs (`_actuators`; the G1
    tasks' `actuation="native"`), `motor_envelope` choosing whether they are `dcmotor`s.

    The keyframe `stand` holds DEFAULT_JOINT_POS (as qpos and as the PD targets) with
    the soles resting on the floor. Visual geoms (group 2) repeat the collision
    primitives (group 3) and need no meshes; training can drop them
    (`visual_geoms=False`): half the geoms, a cheaper step, the same physics.
    """
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator {integrator!r}: choose one of {INTEGRATORS}")
    excludes = self_collision_excludes() if self_collision else ()
    return _build(
        physics_dt,
        floor,
        body_floor_contact,
        visual_geoms,
        integrator,
        self_collision,
        excludes,
        terrain,
        native_motors,
        motor_envelope,
    )


def _build(
    physics_dt: float,
    floor: bool,
    body_floor_contact: bool,
    visual_geoms: bool,
    integrator: str,
    self_collision: bool,
    excludes: tuple[tuple[str, str], ...],
    terrain: tuple[str, str] | None = None,
    native_motors: bool = False,
    motor_envelope: bool = True,
) -> str:
    robot_affinity = 2 if self_collision else 0
    # Body contacts as stiff as the 5 ms step allows (time constant 2 dt, impedance
    # 0.95-0.99): at MuJoCo's defaults a pulling arm sank 19 mm into the torso.
    stiff = ' solref="0.01 1" solimp="0.95 0.99 0.001"' if self_collision else ""
    exclude_xml = "\n".join(f'    <exclude body1="{a}" body2="{b}"/>' for a, b in excludes)
    height = standing_height(DEFAULT_JOINT_POS)
    floor_affinity = 3 if body_floor_contact else 1
    shape = 'type="plane" size="0 0 0.05"'
    asset_xml = ""
    if terrain is not None:
        hfield, pos = terrain
        shape = f'type="hfield" hfield="terrain" pos="{pos}"'
        asset_xml = f"  <asset>\n    {hfield}\n  </asset>\n"
    floor_xml = (
        f'    <geom name="floor" {shape} contype="0" '
        f'conaffinity="{floor_affinity}" rgba="0.8 0.85 0.9 1"/>'
        if floor
        else ""
    )
    freejoint = '<freejoint name="pelvis"/>'
    robot = _body(ROOT_LINK, f"0 0 {height:.9g}", (0.0, 0.0, 0.0), freejoint, visual_geoms, "    ")
    stand_qpos = _v((0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0, *DEFAULT_JOINT_POS))
    return f"""<mujoco model="unitree_g1">
  <compiler angle="radian" autolimits="true" inertiafromgeom="false"/>
  <option timestep="{physics_dt:.9g}" integrator="{integrator}" iterations="10" ls_iterations="6"/>
  <visual><global offwidth="640" offheight="480"/></visual>
  <default>
    <default class="visual">
      <geom contype="0" conaffinity="0" group="2" rgba="0.7 0.7 0.72 1"/>
    </default>
    <default class="collision">
      <geom contype="2" conaffinity="{robot_affinity}" group="3"{stiff} rgba="0.9 0.5 0.2 0.4"/>
    </default>
    <default class="sole">
      <geom contype="1" conaffinity="{robot_affinity}" group="3" condim="3" friction="1 0.005 0.0001" rgba="0.2 0.2 0.2 1"/>
    </default>
    <site group="4" size="0.01" rgba="1 0 0 1"/>
  </default>
{asset_xml}  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
{floor_xml}
{robot}
  </worldbody>
  <contact>
{exclude_xml}
  </contact>
  <actuator>
{_actuators(native_motors, motor_envelope)}
  </actuator>
  <sensor>
{_sensors(self_collision)}
  </sensor>
  <keyframe>
    <key name="stand" qpos="{stand_qpos}" ctrl="{_v(DEFAULT_JOINT_POS)}"/>
  </keyframe>
</mujoco>
"""
