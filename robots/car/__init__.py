"""A compact passenger car for lane keeping: a dynamic bicycle model on MuJoCo bodies.

MuJoCo integrates a chassis on planar joints and a steering servo; tyre, drive and
resistance forces come from pure functions in `dynamics` (see its docstring), so the
same equations can be checked, randomized (road friction) and read in one place.
"""

from simreal.robots.car.dynamics import chassis_wrench
from simreal.robots.car.mjcf import CHASSIS_BODY, STEER_JOINTS, build_mjcf
from simreal.robots.car.params import CarParams


def build_urdf() -> str:
    raise ValueError("robot car: no URDF (the car is a planar bicycle model, not a joint tree)")


def describe() -> str:
    p = CarParams()
    return (
        f"car: dynamic bicycle model, mass {p.mass} kg, wheelbase {p.wheelbase} m, "
        f"max steer {p.max_steer} rad (min turning radius {1 / p.max_curvature:.1f} m), "
        f"max speed {p.max_speed} m/s, cornering stiffness front/rear "
        f"{p.cornering_stiffness_front:.0f}/{p.cornering_stiffness_rear:.0f} N/rad\n"
        f"actuators: {', '.join(STEER_JOINTS)} (position servos); drive force from the "
        "speed controller"
    )


__all__ = [
    "CHASSIS_BODY",
    "STEER_JOINTS",
    "CarParams",
    "build_mjcf",
    "build_urdf",
    "chassis_wrench",
    "describe",
]
