"""URDF of the Crazyflie for ROS 2 tools and PyBullet, from the same parameters as the MJCF."""

from __future__ import annotations

from simreal.robots.crazyflie.params import MOTOR_DIRECTIONS, MOTOR_NAMES, CrazyflieParams


def build_urdf(params: CrazyflieParams | None = None) -> str:
    """One rigid `base` link (mass, inertia, collision cylinder) plus massless rotor frames."""
    p = params or CrazyflieParams()
    ixx, iyy, izz = p.inertia
    rotors = "\n".join(
        f"""  <link name="{name}">
    <inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>
  </link>
  <joint name="{name}_mount" type="fixed">
    <parent link="base"/>
    <child link="{name}"/>
    <origin xyz="{x:.6f} {y:.6f} {z:.6f}" rpy="0 0 0"/>
  </joint>"""
        for name, (x, y, z) in zip(MOTOR_NAMES, p.rotor_offsets, strict=True)
    )
    return f"""<?xml version="1.0"?>
<robot name="crazyflie_cf2x">
  <link name="base">
    <inertial>
      <origin xyz="0 0 0" rpy="0 0 0"/>
      <mass value="{p.mass:.9g}"/>
      <inertia ixx="{ixx:.9g}" ixy="0" ixz="0" iyy="{iyy:.9g}" iyz="0" izz="{izz:.9g}"/>
    </inertial>
    <visual>
      <geometry><cylinder radius="{p.collision_radius}" length="{p.collision_height}"/></geometry>
    </visual>
    <collision>
      <geometry><cylinder radius="{p.collision_radius}" length="{p.collision_height}"/></geometry>
    </collision>
  </link>
{rotors}
</robot>
"""


def describe(params: CrazyflieParams | None = None) -> str:
    """Motors in hardware order with their layout, limits and rotor constants."""
    p = params or CrazyflieParams()
    lines = [
        f"Crazyflie 2.x (CF2X), {1000 * p.mass:.1f} g, arm {1000 * p.arm:.1f} mm, "
        f"inertia {p.inertia} kg m^2",
        f"thrust = kf rpm^2 (kf {p.kf:.3g}), yaw torque = km rpm^2 (km {p.km:.3g}); "
        f"hover {p.hover_rpm:,.0f} rpm, max {p.max_rpm:,.0f} rpm "
        f"(thrust-to-weight {p.thrust_to_weight:g})",
        f"{'idx':>3}  {'motor':<8}{'x (m)':>9}{'y (m)':>9}{'spin':>6}",
    ]
    for i, (name, (x, y, _), d) in enumerate(
        zip(MOTOR_NAMES, p.rotor_offsets, MOTOR_DIRECTIONS, strict=True)
    ):
        lines.append(f"{i:>3}  {name:<8}{x:>9.4f}{y:>9.4f}{'ccw' if d > 0 else 'cw':>6}")
    return "\n".join(lines)
