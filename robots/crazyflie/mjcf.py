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


def build_mjcf(
    params: CrazyflieParams | None = None,
    physics_dt: float = 1.0 / 240.0,
    motor_lag_s: float = 0.0,
    floor: bool = True,
) -> str:
    """Return an MJCF string with one free-flying Crazyflie named `base` over a floor."""
    p = params or CrazyflieParams()
    half_h = p.collision_height / 2.0
    sites = "\n".join(
        f'      <site name="{name}" pos="{x:.6f} {y:.6f} {z:.6f}" size="0.005" rgba="1 0 0 1"/>'
        for name, (x, y, z) in zip(MOTOR_NAMES, p.rotor_offsets, strict=True)
    )
    lag = max(motor_lag_s, MIN_LAG_S)
    ratio = p.km / p.kf
    motors = "\n".join(
        f'    <general name="{name}" site="{name}" gear="0 0 1 0 0 {d * ratio:.9g}" '
        f'ctrllimited="false" dyntype="filterexact" '
        f'dynprm="{lag:.9g}" actearly="true"/>'
        for name, d in zip(MOTOR_NAMES, MOTOR_DIRECTIONS, strict=True)
    )
    floor_xml = (
        '    <geom name="floor" type="plane" size="0 0 0.05" rgba="0.8 0.85 0.9 1"/>'
        if floor
        else ""
    )
    ixx, iyy, izz = p.inertia
    return f"""<mujoco model="crazyflie_cf2x">
  <option timestep="{physics_dt:.9g}" gravity="0 0 -9.81"/>
  <visual><global offwidth="640" offheight="480"/></visual>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
{floor_xml}
    <site name="target" pos="0 0 1" size="0.02" rgba="0 0.8 0 0.5"/>
    <body name="base" pos="0 0 {half_h:.6f}">
      <freejoint name="base"/>
      <inertial pos="0 0 0" mass="{p.mass:.9g}" diaginertia="{ixx:.9g} {iyy:.9g} {izz:.9g}"/>
      <geom name="hull" type="cylinder" size="{p.collision_radius} {half_h}" mass="0"
            rgba="0.3 0.3 0.35 1"/>
      <site name="imu" pos="0 0 0" size="0.004"/>
{sites}
    </body>
  </worldbody>
  <actuator>
{motors}
  </actuator>
</mujoco>
"""
