"""Build the Crazyflie's MuJoCo model from its parameters.

Each motor is a site actuator whose control is its thrust in newtons (not limited here:
the task clips rotor speed, and a randomized kf may exceed the nominal maximum thrust): the gear carries
the thrust along the rotor axis and, in the same actuator, the reaction torque km/kf
times the thrust about it. A first-order filter on each actuator models motor lag;
its time constant is 0 nominally (as in gym-pybullet-drones) and randomized per
simulation through actuator_dynprm.
"""

from __future__ import annotations

from simreal.robots.crazyflie.params import MOTOR_DIRECTIONS, MOTOR_NAMES, CrazyflieParams

MIN_LAG_S = 1e-6
"""filterexact needs a positive time constant; this is far below one physics step."""


def drone_body_xml(
    params: CrazyflieParams, name: str = "base", prefix: str = "", collide: bool = True
) -> str:
    """One free-flying Crazyflie body (inertia, hull, IMU and rotor sites).

    `prefix` names its sites (prefix + motor name) so several drones fit one model;
    `collide=False` leaves contacts to the floor only (contype 0, conaffinity 1).
    """
    p = params
    half_h = p.collision_height / 2.0
    sites = "\n".join(
        f'      <site name="{prefix}{m}" pos="{x:.6f} {y:.6f} {z:.6f}" size="0.005" rgba="1 0 0 1"/>'
        for m, (x, y, z) in zip(MOTOR_NAMES, p.rotor_offsets, strict=True)
    )
    contact = "" if collide else ' contype="0" conaffinity="1"'
    ixx, iyy, izz = p.inertia
    return f"""    <body name="{name}" pos="0 0 {half_h:.6f}">
      <freejoint name="{name}"/>
      <inertial pos="0 0 0" mass="{p.mass:.9g}" diaginertia="{ixx:.9g} {iyy:.9g} {izz:.9g}"/>
      <geom name="{prefix}hull" type="cylinder" size="{p.collision_radius} {half_h}" mass="0"
            rgba="0.3 0.3 0.35 1"{contact}/>
      <site name="{prefix}imu" pos="0 0 0" size="0.004"/>
{sites}
    </body>"""


def motor_actuators_xml(params: CrazyflieParams, prefix: str = "", motor_lag_s: float = 0.0) -> str:
    """The four thrust actuators of the drone whose sites carry `prefix`."""
    lag = max(motor_lag_s, MIN_LAG_S)
    ratio = params.km / params.kf
    return "\n".join(
        f'    <general name="{prefix}{m}" site="{prefix}{m}" gear="0 0 1 0 0 {d * ratio:.9g}" '
        f'ctrllimited="false" dyntype="filterexact" dynprm="{lag:.9g}" actearly="true"/>'
        for m, d in zip(MOTOR_NAMES, MOTOR_DIRECTIONS, strict=True)
    )


def build_mjcf(
    params: CrazyflieParams | None = None,
    physics_dt: float = 1.0 / 240.0,
    motor_lag_s: float = 0.0,
    floor: bool = True,
) -> str:
    """Return an MJCF string with one free-flying Crazyflie named `base` over a floor."""
    p = params or CrazyflieParams()
    floor_xml = (
        '    <geom name="floor" type="plane" size="0 0 0.05" rgba="0.8 0.85 0.9 1"/>'
        if floor
        else ""
    )
    return f"""<mujoco model="crazyflie_cf2x">
  <option timestep="{physics_dt:.9g}" gravity="0 0 -9.81"/>
  <visual><global offwidth="640" offheight="480"/></visual>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
{floor_xml}
    <site name="target" pos="0 0 1" size="0.02" rgba="0 0.8 0 0.5"/>
{drone_body_xml(p)}
  </worldbody>
  <actuator>
{motor_actuators_xml(p, motor_lag_s=motor_lag_s)}
  </actuator>
</mujoco>
"""
