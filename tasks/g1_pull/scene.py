"""The `g1-pull` scene: the G1's own model plus a bar welded to its hands, a rope and a
cart on rails, composed with MuJoCo's model editor (MjSpec) from `build_mjcf`.

Layout (world frame, the robot standing at the origin facing +x):
    handle      a free bar between the hands, welded to each hand at its standing pose
                (site-to-site welds: the frames coincide, so the hands hold it as a rigid
                grip); its origin, the rope's hitch, lies midway between the hands.
    cart        a body on a slide joint along x (the rails) at the bar's standing
                height, touching nothing; its qpos is its x position.
    rope        a spatial tendon from the bar's hitch to the cart's hitch, limited to
                `rope_length_m`: a taut rope pulls, a slack one does nothing.
    rope_tension  a `tendonlimitfrc` sensor: the rope's tension in N (>= 0).

Tendons pass through bodies: when the robot pulls forward, the rope runs from the bar
in front of it straight back through its legs to the cart; only its line of action
matters. Constraint softness: MuJoCo scales a constraint's stiffness by an inverse
weight computed in the zero pose, which for a light bar makes the default softness
stretch the rope by decimetres; the welds and the rope therefore use the stiffest safe
time constant (twice the timestep) and impedance 0.99.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from simreal.robots.g1 import build_mjcf
from simreal.tasks.g1_pull.config import LoadConfig

HANDS = ("left_rubber_hand", "right_rubber_hand")
ROPE_SENSOR = "rope_tension"
CART_JOINT = "cart_rail"
HANDLE_JOINT = "handle"
_SOLIMP = [0.95, 0.99, 0.001, 0.5, 2.0]


@dataclass(frozen=True)
class PullScene:
    """The composed model and where its parts sit at the standing pose."""

    mjcf: str
    handle_pos: np.ndarray
    """(3,) the bar's hitch (its origin) at the standing pose, world frame."""
    hitch_height_m: float
    """Height of the cart's hitch (the rails)."""


def build_pull_scene(load: LoadConfig, physics_dt: float, visual_geoms: bool) -> PullScene:
    """The scene; its `stand` keyframe has the bar in the hands and the cart a rope length
    (less the slack) ahead of it, as when pulling backward."""
    spec = mujoco.MjSpec.from_string(
        build_mjcf(physics_dt, body_floor_contact=True, visual_geoms=visual_geoms)
    )
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
    mujoco.mj_forward(model, data)
    hand_pos = {h: data.xpos[model.body(h).id].copy() for h in HANDS}
    hand_quat = {h: data.xquat[model.body(h).id].copy() for h in HANDS}
    mid = (hand_pos[HANDS[0]] + hand_pos[HANDS[1]]) / 2

    tc = max(0.01, 2.0 * physics_dt)
    handle = spec.worldbody.add_body(name="handle", pos=mid)
    handle.add_freejoint(name=HANDLE_JOINT)
    _set_inertia(handle, load.handle_mass_kg, 0.02 * load.handle_mass_kg)
    half = hand_pos[HANDS[0]] - mid
    handle.add_geom(
        type=mujoco.mjtGeom.mjGEOM_CAPSULE,
        fromto=[*half, *(-half)],
        size=[0.015, 0.0, 0.0],
        contype=0,
        conaffinity=0,
        group=2,
        rgba=[0.9, 0.7, 0.1, 1.0],
    )
    handle.add_site(name="handle_hitch")
    for hand in HANDS:
        spec.body(hand).add_site(name=f"{hand}_grip")
        handle.add_site(name=f"handle_{hand}", pos=hand_pos[hand] - mid, quat=hand_quat[hand])
        spec.add_equality(
            type=mujoco.mjtEq.mjEQ_WELD,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            name1=f"{hand}_grip",
            name2=f"handle_{hand}",
            solref=[tc, 1.0],
            solimp=_SOLIMP,
        )

    cart = spec.worldbody.add_body(name="cart", pos=[0.0, 0.0, mid[2]])
    _set_inertia(cart, load.cart_mass_kg, 0.1 * load.cart_mass_kg)
    cart.add_joint(name=CART_JOINT, type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[1.0, 0.0, 0.0])
    cart.add_geom(
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[0.25, 0.2, 0.12],
        contype=0,
        conaffinity=0,
        group=2,
        rgba=[0.3, 0.4, 0.8, 1.0],
    )
    cart.add_site(name="cart_hitch")
    rope = spec.add_tendon(
        name="rope",
        limited=mujoco.mjtLimited.mjLIMITED_TRUE,
        range=[0.0, load.rope_length_m],
        solref_limit=[tc, 1.0],
        solimp_limit=_SOLIMP,
        width=0.008,
        rgba=[0.8, 0.8, 0.8, 1.0],
    )
    rope.wrap_site("handle_hitch")
    rope.wrap_site("cart_hitch")
    spec.add_sensor(
        name=ROPE_SENSOR,
        type=mujoco.mjtSensor.mjSENS_TENDONLIMITFRC,
        objtype=mujoco.mjtObj.mjOBJ_TENDON,
        objname="rope",
    )
    key = spec.key("stand")
    cart_x = mid[0] + load.rope_length_m - load.rope_slack_m
    key.qpos = [*key.qpos, *mid, 1.0, 0.0, 0.0, 0.0, cart_x]
    spec.compile()
    return PullScene(spec.to_xml(), mid, float(mid[2]))


def _set_inertia(body, mass: float, inertia: float) -> None:
    """Explicit mass and an isotropic inertia (the G1 model does not infer inertia from
    geoms; an isotropic one keeps the bar's constraint weights moderate)."""
    body.mass = mass
    body.inertia = [inertia, inertia, inertia]
    body.explicitinertial = True
