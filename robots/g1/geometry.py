"""The G1's collision (and visual) shapes: primitives only, in each link's frame.

These are the project's own estimates, not Unitree's meshes: capsules run between
neighbouring joint origins and round the centres of mass, with radii of the motor
housings, so that contact against task objects lands about where the real shell is.
Primitives keep collision cheap; the same shapes are drawn as the visuals.

The sole is a box spanning Unitree's four foot contact points (spheres of radius
5 mm at x = -0.05 (heel) and 0.12 (toe), y = +-0.025 (heel) and +-0.03 (toe),
z = -0.03 in the ankle roll link frame), grown by the sphere radius: 0.18 m long
(x from -0.055 to 0.125), 0.07 m wide, its underside at z = -0.035.
"""

from __future__ import annotations

from dataclasses import dataclass

from simreal.robots.g1.joints import Vec3


@dataclass(frozen=True)
class Capsule:
    start: Vec3
    end: Vec3
    radius: float


@dataclass(frozen=True)
class Box:
    center: Vec3
    half_size: Vec3


@dataclass(frozen=True)
class Sphere:
    center: Vec3
    radius: float


Shape = Capsule | Box | Sphere

SOLE = Box(center=(0.035, 0.0, -0.025), half_size=(0.09, 0.035, 0.01))
"""Underside at z = -0.035 below the ankle roll joint; heel at x = -0.055, toe at 0.125."""

FEET: dict[str, str] = {"left_ankle_roll_link": "left_foot", "right_ankle_roll_link": "right_foot"}
"""Foot link -> name of its sole geom (the only geoms that touch the floor by default)."""

_CENTRE_SHAPES: dict[str, tuple[Shape, ...]] = {
    "pelvis": (Capsule((0.0, -0.05, -0.07), (0.0, 0.05, -0.07), 0.07),),
    "torso_link": (Box((0.0, 0.0, 0.17), (0.07, 0.09, 0.13)),),
    "head_link": (Sphere((0.005, 0.0, 0.45), 0.075),),
}

_LEFT_SHAPES: dict[str, tuple[Shape, ...]] = {
    "hip_pitch_link": (Capsule((0.0, 0.025, -0.03), (0.0, 0.065, -0.03), 0.045),),
    "hip_roll_link": (Capsule((0.02, 0.0, -0.02), (0.03, 0.0, -0.11), 0.05),),
    "hip_yaw_link": (Capsule((0.0, 0.0, -0.03), (-0.07, 0.0, -0.16), 0.055),),
    "knee_link": (Capsule((0.0, 0.0, -0.03), (0.0, 0.0, -0.26), 0.045),),
    "ankle_roll_link": (SOLE,),
    "shoulder_pitch_link": (Capsule((-0.01, 0.04, -0.01), (0.01, 0.04, -0.01), 0.03),),
    "shoulder_roll_link": (Capsule((-0.004, 0.006, -0.04), (-0.004, 0.006, -0.09), 0.03),),
    "shoulder_yaw_link": (Capsule((0.0, 0.0, -0.02), (0.015, 0.0, -0.08), 0.035),),
    "elbow_link": (Capsule((0.01, 0.0, -0.01), (0.09, 0.0, -0.01), 0.03),),
    "wrist_roll_link": (Capsule((0.0, 0.0, 0.0), (0.03, 0.0, 0.0), 0.025),),
    "wrist_pitch_link": (Capsule((0.005, 0.0, 0.0), (0.04, 0.0, 0.0), 0.03),),
    "wrist_yaw_link": (Capsule((0.005, 0.0, 0.0), (0.035, 0.0, 0.0), 0.025),),
    "rubber_hand": (Capsule((0.02, 0.0, 0.0), (0.09, 0.0, 0.0), 0.03),),
}


def _mirror_y(shape: Shape) -> Shape:
    """The same shape on the right side of the robot (reflected through the x-z plane)."""

    def flip(v: Vec3) -> Vec3:
        return (v[0], -v[1], v[2])

    if isinstance(shape, Capsule):
        return Capsule(flip(shape.start), flip(shape.end), shape.radius)
    if isinstance(shape, Box):
        return Box(flip(shape.center), shape.half_size)
    return Sphere(flip(shape.center), shape.radius)


SHAPES: dict[str, tuple[Shape, ...]] = {
    **_CENTRE_SHAPES,
    **{f"left_{link}": shapes for link, shapes in _LEFT_SHAPES.items()},
    **{f"right_{link}": tuple(map(_mirror_y, shapes)) for link, shapes in _LEFT_SHAPES.items()},
}
"""Link -> its primitives; links absent here (small ones inside others) have none."""
