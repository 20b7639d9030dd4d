"""The swarm's MuJoCo scene: N Crazyflies, a floor, and a grid of columns.

Drones collide with the floor through MuJoCo contacts; drone-drone and drone-column
collisions are detected geometrically by the task (and end nothing physically), which
keeps contact detection off the hot path. Every simulation has the same number of
column geoms; a simulation's layout moves unused columns far below the floor.
"""

from __future__ import annotations

from simreal.robots.crazyflie import CrazyflieParams, drone_body_xml, motor_actuators_xml

PARKED_Z = -50.0
"""Where unused columns wait (m): far below the floor, out of every ray and sensor."""


def drone_prefix(i: int) -> str:
    return f"d{i}_"


def build_scene(
    params: CrazyflieParams,
    num_drones: int,
    obstacle_grid: int,
    obstacle_radius: float,
    ceiling: float,
    physics_dt: float,
) -> str:
    drones = "\n".join(
        drone_body_xml(params, name=f"drone{i}", prefix=drone_prefix(i), collide=False)
        for i in range(num_drones)
    )
    columns = "\n".join(
        f'    <geom name="column{j}" type="cylinder" size="{obstacle_radius} {ceiling / 2}" '
        f'pos="0 0 {PARKED_Z}" contype="0" conaffinity="0" rgba="0.6 0.45 0.3 1"/>'
        for j in range(obstacle_grid * obstacle_grid)
    )
    actuators = "\n".join(
        motor_actuators_xml(params, prefix=drone_prefix(i)) for i in range(num_drones)
    )
    return f"""<mujoco model="crazyflie_swarm">
  <option timestep="{physics_dt:.9g}" gravity="0 0 -9.81"/>
  <visual><global offwidth="640" offheight="480"/></visual>
  <worldbody>
    <light pos="0 0 6" dir="0 0 -1"/>
    <geom name="floor" type="plane" size="0 0 0.05" rgba="0.8 0.85 0.9 1"/>
{columns}
{drones}
  </worldbody>
  <actuator>
{actuators}
  </actuator>
</mujoco>
"""
