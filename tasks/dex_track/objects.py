"""The objects of `dex-track`: eight types built from six primitive geom slots.

Every simulation of a batch shares one MuJoCo model, so the object is one free body
holding a fixed set of slot geoms (two boxes, two cylinders, a sphere, a capsule); an
object type switches slots on (contype/conaffinity) and sizes and places them, per
simulation, through model fields. Compounds use two slots: a bottle is a body cylinder
with a neck cylinder on top, a mug a cylinder with a box handle on its side (+y), a
hammer a capsule handle (along its z) standing on its flat box head.

Dimensions (`dims`, 4 numbers, m, unused ones 0) per type:

| type | dims | rests |
|---|---|---|
| cube | half side | upright |
| box | half x, half y, half z (a slab) | upright |
| cylinder | radius, half height | upright |
| sphere | radius | - |
| capsule | radius, half length of the cylinder part | upright |
| bottle | radius, half height, neck radius, neck half height | upright |
| mug | radius, half height | upright, handle at +y |
| hammer | handle radius, handle half length, head half length (x) | upright on its head |

Objects are frames at their geometric origin (the slots' reference point), not their
centre of mass: a reference gives this frame's pose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OBJECT_TYPES = ("cube", "box", "cylinder", "sphere", "capsule", "bottle", "mug", "hammer")
SLOTS = (
    ("box_a", "box"),
    ("box_b", "box"),
    ("cyl_a", "cylinder"),
    ("cyl_b", "cylinder"),
    ("sphere", "sphere"),
    ("capsule", "capsule"),
)
"""(slot geom name, MuJoCo geom type) in geom order inside the object body."""
NUM_SLOTS = len(SLOTS)
OBJECT_CONTYPE = 1
OBJECT_CONAFFINITY = 3
"""Objects touch the table (bit 1) and the hand (bit 2)."""
OBJECT_CONDIM = 4
TORSIONAL_FRICTION = 0.01
"""Contacts on objects resist twisting about their normal (condim 4, a soft fingertip's
patch of about a centimetre): without it a pinched object pivots freely about the line
through its contacts."""
HAMMER_HEAD_HALF = (0.016, 0.012)
"""Half width (y) and half height (z) of a hammer's head; its length (x) is in dims."""

DIM_RANGES: dict[str, tuple[tuple[float, float], ...]] = {
    "cube": ((0.029, 0.035),),
    "box": ((0.018, 0.026), (0.03, 0.045), (0.03, 0.038)),
    "cylinder": ((0.02, 0.028), (0.03, 0.045)),
    "sphere": ((0.032, 0.038),),
    "capsule": ((0.018, 0.024), (0.02, 0.035)),
    "bottle": ((0.022, 0.028), (0.035, 0.05), (0.01, 0.013), (0.012, 0.02)),
    "mug": ((0.024, 0.03), (0.028, 0.04)),
    "hammer": ((0.016, 0.02), (0.03, 0.045), (0.03, 0.04)),
}
"""Uniform ranges of each type's dims (m): sized for the hand's grasp span (about 6 cm
across) and tall enough that the opposed thumb clears the table."""
MUG_HANDLE_HALF = (0.005, 0.012)
"""Half thickness (x) and half reach (y) of a mug's handle; its height is 0.7 of the mug's."""


@dataclass
class SlotGeometry:
    """Slot geoms of K objects: size (K, NUM_SLOTS, 3), pos (K, NUM_SLOTS, 3) in the object
    frame, active (K, NUM_SLOTS) bool."""

    size: np.ndarray
    pos: np.ndarray
    active: np.ndarray


def sample_dims(rng: np.random.Generator, kind: str) -> np.ndarray:
    """(4,) random dims of one object of type `kind`."""
    ranges = DIM_RANGES[kind]
    dims = np.zeros(4)
    dims[: len(ranges)] = [rng.uniform(lo, hi) for lo, hi in ranges]
    return dims


def check_dims(kind: str, dims: np.ndarray, where: str) -> None:
    """Raise naming `where` when `kind` is unknown or `dims` do not describe it."""
    if kind not in OBJECT_TYPES:
        raise ValueError(f"{where}: object_type {kind!r} is not one of {list(OBJECT_TYPES)}")
    n = len(DIM_RANGES[kind])
    dims = np.asarray(dims, dtype=float)
    if dims.shape != (4,) or not np.all(np.isfinite(dims)) or np.any(dims[:n] <= 0):
        raise ValueError(
            f"{where}: object_dims must be 4 finite numbers with the first {n} positive for "
            f"a {kind}, got {dims.tolist()}"
        )


def slot_geometry(kinds: list[str], dims: np.ndarray) -> SlotGeometry:
    """Slot sizes, positions and switches of objects `kinds` with dims (K, 4)."""
    k = len(kinds)
    size = np.full((k, NUM_SLOTS, 3), 0.005)
    pos = np.zeros((k, NUM_SLOTS, 3))
    active = np.zeros((k, NUM_SLOTS), dtype=bool)
    box_a, box_b, cyl_a, cyl_b, sphere, capsule = range(NUM_SLOTS)
    for i, (kind, d) in enumerate(zip(kinds, dims, strict=True)):
        if kind == "cube":
            size[i, box_a], active[i, box_a] = d[0], True
        elif kind == "box":
            size[i, box_a], active[i, box_a] = d[:3], True
        elif kind == "cylinder":
            size[i, cyl_a], active[i, cyl_a] = (d[0], d[1], 0.0), True
        elif kind == "sphere":
            size[i, sphere], active[i, sphere] = (d[0], 0.0, 0.0), True
        elif kind == "capsule":
            size[i, capsule], active[i, capsule] = (d[0], d[1], 0.0), True
        elif kind == "bottle":
            size[i, cyl_a], size[i, cyl_b] = (d[0], d[1], 0.0), (d[2], d[3], 0.0)
            pos[i, cyl_b] = (0.0, 0.0, d[1] + d[3])
            active[i, [cyl_a, cyl_b]] = True
        elif kind == "mug":
            tx, ty = MUG_HANDLE_HALF
            size[i, cyl_a] = (d[0], d[1], 0.0)
            size[i, box_b] = (tx, ty, 0.7 * d[1])
            pos[i, box_b] = (0.0, d[0] + ty, 0.0)
            active[i, [cyl_a, box_b]] = True
        elif kind == "hammer":
            hy, hz = HAMMER_HEAD_HALF
            size[i, capsule] = (d[0], d[1], 0.0)
            size[i, box_b] = (d[2], hy, hz)
            pos[i, box_b] = (0.0, 0.0, -(d[1] + d[0] + hz))
            active[i, [capsule, box_b]] = True
        else:
            raise ValueError(f"unknown object type {kind!r}; known: {list(OBJECT_TYPES)}")
    return SlotGeometry(size, pos, active)


def rest_height(kinds: list[str], dims: np.ndarray) -> np.ndarray:
    """(K,) height of the object frame above the table when it rests there."""
    out = np.empty(len(kinds))
    for i, (kind, d) in enumerate(zip(kinds, dims, strict=True)):
        out[i] = {
            "cube": d[0],
            "box": d[2],
            "cylinder": d[1],
            "sphere": d[0],
            "capsule": d[1] + d[0],
            "bottle": d[1],
            "mug": d[1],
            "hammer": d[1] + d[0] + 2 * HAMMER_HEAD_HALF[1],
        }[kind]
    return out


def rest_quat(yaw: np.ndarray) -> np.ndarray:
    """(K, 4) wxyz orientation of objects resting upright at `yaw` (rad) about z."""
    c, s = np.cos(yaw / 2), np.sin(yaw / 2)
    return np.stack([c, np.zeros_like(c), np.zeros_like(c), s], axis=1)


def _slot_volumes(g: SlotGeometry) -> np.ndarray:
    s = g.size
    vol = np.stack(
        [
            8 * s[:, 0].prod(axis=1),
            8 * s[:, 1].prod(axis=1),
            2 * np.pi * s[:, 2, 0] ** 2 * s[:, 2, 1],
            2 * np.pi * s[:, 3, 0] ** 2 * s[:, 3, 1],
            4 / 3 * np.pi * s[:, 4, 0] ** 3,
            np.pi * s[:, 5, 0] ** 2 * 2 * s[:, 5, 1] + 4 / 3 * np.pi * s[:, 5, 0] ** 3,
        ],
        axis=1,
    )
    return vol * g.active


def _slot_inertia(g: SlotGeometry, mass: np.ndarray) -> np.ndarray:
    """(K, NUM_SLOTS, 3) diagonal inertia of each slot about its own centre (uniform solid;
    a capsule as a cylinder of its length plus one radius)."""
    s = g.size
    m = mass[..., None]
    out = np.zeros_like(s)
    for j in (0, 1):  # boxes
        a2 = s[:, j] ** 2
        out[:, j] = np.stack([a2[:, 1] + a2[:, 2], a2[:, 0] + a2[:, 2], a2[:, 0] + a2[:, 1]], 1) / 3
    for j, extra in ((2, 0.0), (3, 0.0), (5, 1.0)):  # cylinders, capsule
        r, h = s[:, j, 0], s[:, j, 1] + extra * s[:, j, 0] / 2
        side = (3 * r**2 + (2 * h) ** 2) / 12
        out[:, j] = np.stack([side, side, r**2 / 2], axis=1)
    out[:, 4] = 0.4 * s[:, 4, :1] ** 2
    return out * m


def mass_properties(g: SlotGeometry, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre of mass (K, 3) in the object frame and diagonal inertia (K, 3) about it, for
    objects of total `mass` (K,) and uniform density."""
    vol = _slot_volumes(g)
    slot_mass = mass[:, None] * vol / vol.sum(axis=1, keepdims=True)
    com = (slot_mass[..., None] * g.pos).sum(axis=1) / mass[:, None]
    d = g.pos - com[:, None, :]
    parallel = slot_mass[..., None] * (np.sum(d**2, axis=2, keepdims=True) - d**2)
    inertia = (_slot_inertia(g, slot_mass) + parallel).sum(axis=1)
    return com, inertia


def bounding(g: SlotGeometry) -> tuple[np.ndarray, np.ndarray]:
    """Per slot bounding radius (K, NUM_SLOTS) and local axis-aligned box (K, NUM_SLOTS, 6)
    (centre, half sizes), as MuJoCo's geom_rbound and geom_aabb, for resized slots."""
    s = g.size
    half = s.copy()
    half[:, 2:4, 2] = s[:, 2:4, 1]  # cylinders: r, r, h
    half[:, 2:4, 1] = s[:, 2:4, 0]
    half[:, 4] = s[:, 4, :1]  # sphere
    half[:, 5] = np.stack([s[:, 5, 0], s[:, 5, 0], s[:, 5, 1] + s[:, 5, 0]], axis=1)
    rbound = np.linalg.norm(s, axis=2)
    rbound[:, 2:4] = np.hypot(s[:, 2:4, 0], s[:, 2:4, 1])
    rbound[:, 4] = s[:, 4, 0]
    rbound[:, 5] = s[:, 5, 0] + s[:, 5, 1]
    aabb = np.concatenate([np.zeros_like(half), half], axis=2)
    return rbound, aabb


COMPILED_SLOT_SIZE = 0.1
"""Slot size in the compiled model: MuJoCo's mid-phase culls with the body's bounding
volume hierarchy computed at compile time, so it must enclose every slot at any size
and place a type gives it (all within 0.1 m of the object frame)."""


def object_xml() -> str:
    """The object body: a free joint and the slot geoms (all on; tasks switch them). Its
    compiled centre of mass is off the frame so that MuJoCo does not treat the body as
    "simple" (frame and inertia coinciding): tasks move the centre of mass per object."""
    size = f"{COMPILED_SLOT_SIZE} {COMPILED_SLOT_SIZE} {COMPILED_SLOT_SIZE}"
    geoms = "\n".join(
        f'      <geom name="{name}" type="{kind}" size="{size}" '
        f'contype="{OBJECT_CONTYPE}" conaffinity="{OBJECT_CONAFFINITY}" condim="{OBJECT_CONDIM}" '
        f'friction="1 {TORSIONAL_FRICTION} 0.0001" rgba="0.85 0.5 0.2 1"/>'
        for name, kind in SLOTS
    )
    return f"""    <body name="object" pos="0.3 0 0.03">
      <freejoint name="object"/>
      <inertial pos="0 0 0.001" mass="0.1" diaginertia="5e-5 5e-5 5e-5"/>
{geoms}
      <site name="object" size="0.005" rgba="0 0 1 1"/>
    </body>"""
