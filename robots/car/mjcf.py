"""The car's MuJoCo model: a chassis on planar joints with two steered front wheels.

The chassis slides in x and y and turns about z (qpos 0..2: x, y, yaw); it has no
contacts (the road is flat and tyre forces come from `dynamics.chassis_wrench`, applied
through xfrc_applied). The front wheels hang on steering hinges driven by a position
servo, so the steering angle has the lag of a real steering system; the rear wheels
are fixed to the chassis (drive is a force, wheel spin is not simulated).
"""

from __future__ import annotations

from simreal.robots.car.params import CarParams

STEER_JOINTS = ("steer_left", "steer_right")
CHASSIS_BODY = "chassis"


def _wheel(name: str, x: float, y: float, p: CarParams, steer: bool) -> str:
    r = p.wheel_radius
    geom = (
        f'<geom type="cylinder" size="{r} 0.1" euler="1.5707963 0 0" rgba="0.1 0.1 0.1 1" '
        'contype="0" conaffinity="0" mass="0"/>'
    )
    if not steer:
        return f'      <body name="{name}" pos="{x} {y} 0">{geom}</body>'
    return (
        f'      <body name="{name}" pos="{x} {y} 0">\n'
        f'        <joint name="steer_{name.split("_")[-1]}" type="hinge" axis="0 0 1" '
        f'range="{-p.max_steer} {p.max_steer}" limited="true" armature="1" '
        f'damping="{p.steer_damping}"/>\n'
        '        <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>\n'
        f"        {geom}\n"
        "      </body>"
    )


def chassis_xml(p: CarParams) -> str:
    """The car body tree (to be placed in a worldbody)."""
    a, b, half_track = p.cg_to_front, p.cg_to_rear, p.track / 2
    wheels = "\n".join(
        [
            _wheel("front_left", a, half_track, p, True),
            _wheel("front_right", a, -half_track, p, True),
            _wheel("rear_left", -b, half_track, p, False),
            _wheel("rear_right", -b, -half_track, p, False),
        ]
    )
    # Each steered wheel adds 1 kg; the chassis carries the rest of the car's mass.
    return f"""    <body name="{CHASSIS_BODY}" pos="0 0 {p.wheel_radius}">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="y" type="slide" axis="0 1 0"/>
      <joint name="yaw" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="{p.mass - 2}" diaginertia="400 2000 {p.yaw_inertia}"/>
      <geom type="box" size="{p.length / 2} {p.width / 2} 0.35" pos="{(a - b) / 2} 0 0.35"
            rgba="0.15 0.35 0.8 1" contype="0" conaffinity="0" mass="0"/>
      <camera name="front" pos="{(a - b) / 2 + p.length / 2 + 0.05} 0 0.9" xyaxes="0 -1 0 0.15 0 1"
              fovy="70"/>
{wheels}
    </body>
"""


def steering_actuators_xml(p: CarParams) -> str:
    return "\n".join(
        f'    <position name="{j}" joint="{j}" kp="{p.steer_kp}" '
        f'ctrlrange="{-p.max_steer} {p.max_steer}" ctrllimited="true"/>'
        for j in STEER_JOINTS
    )


def build_mjcf(
    params: CarParams | None = None, physics_dt: float = 0.01, world_xml: str = ""
) -> str:
    """The car on a ground plane; `world_xml` adds static scenery (road, obstacles)."""
    p = params or CarParams()
    return f"""<mujoco model="car">
  <compiler angle="radian"/>
  <option timestep="{physics_dt}" gravity="0 0 0" integrator="implicitfast"/>
  <visual>
    <global offwidth="640" offheight="480"/>
    <headlight ambient="0.3 0.3 0.3"/>
    <map znear="0.0005"/>
    <rgba haze="0.6 0.75 0.9 1"/>
  </visual>
  <asset>
    <texture name="grass" type="2d" builtin="flat" rgb1="0.3 0.5 0.25" width="8" height="8"/>
    <material name="grass" texture="grass"/>
    <texture type="skybox" builtin="gradient" rgb1="0.6 0.75 0.95" rgb2="0.9 0.95 1" width="32" height="32"/>
  </asset>
  <worldbody>
    <light pos="0 0 50" dir="0 0 -1" directional="true" castshadow="false"/>
    <geom name="ground" type="plane" size="0 0 1" material="grass" contype="0" conaffinity="0"/>
{world_xml}
{chassis_xml(p)}
  </worldbody>
  <actuator>
{steering_actuators_xml(p)}
  </actuator>
</mujoco>
"""
