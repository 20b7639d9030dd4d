"""The `g1-pull` scene: the G1's own model plus a cart on rails (a slide joint along x;
its qpos is its x position) and a rope handle (a length-limited spatial tendon from the
left grip through the cart's hitch to the right grip), composed with MuJoCo's model
editor (MjSpec) from `build_mjcf`; sensors give the rope tension and where the grips and
the hitch are. The layout and the rope's stiffness: docs/g1-pull.md, "Scene".
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from simreal.robots.g1 import build_mjcf
from simreal.tasks.g1_pull.config import LoadConfig

HANDS = ("left_rubber_hand", "right_rubber_hand")
GRIP_SITES = tuple(f"{hand}_grip" for hand in HANDS)
HITCH_SITE = "cart_hitch"
ROPE_SENSOR = "rope_tension"
POSITION_SENSORS = (*GRIP_SITES, HITCH_SITE)
"""Sensor `<site>_pos` is the site's world position."""
CART_JOINT = "cart_rail"
_SOLIMP = [0.95, 0.99, 0.001, 0.5, 2.0]
"""The rope's impedance: near-rigid (see below)."""


@dataclass(frozen=True)
class PullScene:
    """The composed model and where its parts sit at the standing pose."""

    mjcf: str
    hand_pos: np.ndarray
    """(2, 3) left and right grip at the standing pose, world frame."""
    cart_offset_m: float
    """Distance along x from the hands to the cart's hitch with the rope `rope_slack_m`
    short of taut (each strand rope_length_m - rope_slack_m long)."""


def build_pull_scene(
    load: LoadConfig,
    physics_dt: float,
    visual_geoms: bool,
    integrator: str = "implicitfast",
    self_collision: bool = True,
    native_motors: bool = False,
    motor_envelope: bool = True,
) -> PullScene:
    """The scene; its `stand` keyframe has the cart ahead of the robot, as when pulling
    backward."""
    spec = mujoco.MjSpec.from_string(
        build_mjcf(
            physics_dt,
            body_floor_contact=True,
            visual_geoms=visual_geoms,
            integrator=integrator,
            self_collision=self_collision,
            native_motors=native_motors,
            motor_envelope=motor_envelope,
        )
    )
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
    mujoco.mj_forward(model, data)
    hand_pos = np.array([data.xpos[model.body(h).id] for h in HANDS])
    x_hands, half_width = hand_pos[:, 0].mean(), abs(hand_pos[0, 1] - hand_pos[1, 1]) / 2
    strand = load.rope_length_m - load.rope_slack_m
    if strand <= half_width:
        raise ValueError(
            f"load.rope_length_m - load.rope_slack_m = {strand} m must exceed half the "
            f"distance between the hands ({half_width:.3f} m)"
        )
    offset = float(np.sqrt(strand**2 - half_width**2))

    for hand, site in zip(HANDS, GRIP_SITES, strict=True):
        spec.body(hand).add_site(name=site)
    height = float(hand_pos[:, 2].mean())
    cart = spec.worldbody.add_body(name="cart", pos=[0.0, 0.0, height])
    cart.mass = load.cart_mass_kg
    cart.inertia = [0.1 * load.cart_mass_kg] * 3  # the G1 model does not infer inertia
    cart.explicitinertial = True
    cart.add_joint(name=CART_JOINT, type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[1.0, 0.0, 0.0])
    cart.add_geom(
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[0.25, 0.2, 0.12],
        contype=0,
        conaffinity=0,
        group=2,
        rgba=[0.3, 0.4, 0.8, 1.0],
    )
    cart.add_site(name=HITCH_SITE)
    tc = max(0.01, 2.0 * physics_dt)
    rope = spec.add_tendon(
        name="rope",
        limited=mujoco.mjtLimited.mjLIMITED_TRUE,
        range=[0.0, 2.0 * load.rope_length_m],
        solref_limit=[tc, 1.0],
        solimp_limit=_SOLIMP,
        width=0.008,
        rgba=[0.9, 0.7, 0.1, 1.0],
    )
    rope.wrap_site(GRIP_SITES[0])
    rope.wrap_site(HITCH_SITE)
    rope.wrap_site(GRIP_SITES[1])
    spec.add_sensor(
        name=ROPE_SENSOR,
        type=mujoco.mjtSensor.mjSENS_TENDONLIMITFRC,
        objtype=mujoco.mjtObj.mjOBJ_TENDON,
        objname="rope",
    )
    for site in POSITION_SENSORS:
        spec.add_sensor(
            name=f"{site}_pos",
            type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname=site,
        )
    key = spec.key("stand")
    key.qpos = [*key.qpos, x_hands + offset]
    spec.compile()
    return PullScene(spec.to_xml(), hand_pos, offset)
