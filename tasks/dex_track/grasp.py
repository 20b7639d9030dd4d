"""Kinematic grasp planning and the feasibility check of references, with MuJoCo.

Both pose the hand and the object kinematically (qpos, then mj_forward) in the task's
scene built with hand-table contact and a small contact margin, and read MuJoCo's
contacts: a negative distance is interpenetration, a distance within the margin counts
as touching.

The planner finds a touching grasp for an object resting on the table: the palm above
it, tilted by one of a few pitches, the long fingers closing along a claw synergy
(distal joints first, then the knuckle) and the thumb swinging into opposition; each
finger closes until it touches (bisection on its synergy parameter, all four at once,
since fingers do not collide with each other). A grasp is kept when the thumb and at
least two fingers touch the object from opposite sides and nothing penetrates.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import mujoco
import numpy as np

from simreal.robots.allegro import FINGERS
from simreal.tasks.dex_track import objects as ob
from simreal.tasks.dex_track.frames import wrist_joints, wrist_pose
from simreal.tasks.dex_track.scene import build_scene
from simreal.tasks.rotations import quat_from_axis_angle

CONTACT_MARGIN_M = 0.002
"""Contacts closer than this count as touching in the kinematic checks."""
PENETRATION_TOLERANCE_M = 0.004
"""A reference whose hand and object (or table) interpenetrate deeper than this is infeasible."""
ADDUCTION_RAD = 0.4
"""First and ring finger turned towards the middle finger for small objects."""
PITCHES = (0.0, 0.3)
PALM_BEHIND = (-0.07, -0.06, -0.05, -0.04, -0.03, -0.02)
PALM_ABOVE = (0.005, 0.015, 0.03, 0.05, 0.06)
"""Candidate palm-centre offsets (m) from the object: behind it along the hand's x, above
its top."""
_PITCH_BEHIND = [(p, x) for p in PITCHES for x in PALM_BEHIND]
BISECTION_STEPS = 8


def finger_synergy(s: np.ndarray, opposition: float = 1.05) -> np.ndarray:
    """(..., 16) finger angles for closure parameters s (..., 4) in [0, 1] per finger:
    0 is the open pre-shape, 1 a full fist. The thumb first swings into `opposition`
    (thj0, rad), then flexes."""
    s = np.asarray(s, dtype=float)
    a = np.clip(2 * s[..., :3], 0, 1)
    b = np.clip(2 * s[..., :3] - 1, 0, 1)
    long = np.stack([np.zeros_like(a), 0.1 + 1.4 * b, 0.1 + 1.2 * a, 0.1 + 1.0 * a], axis=-1)
    long[..., 0, 0] = -ADDUCTION_RAD
    long[..., 2, 0] = ADDUCTION_RAD
    ta = np.clip(2 * s[..., 3], 0, 1)
    tb = np.clip(2 * s[..., 3] - 1, 0, 1)
    thumb = np.stack(
        [0.35 + (opposition - 0.35) * ta, 0.2 + 0.6 * ta, 0.1 + 1.2 * tb, 0.1 + 1.0 * tb], axis=-1
    )
    return np.concatenate([long.reshape(*s.shape[:-1], 12), thumb], axis=-1)


@dataclass
class Grasp:
    """A touching grasp of an object in its own frame (object at the origin, yaw 0)."""

    wrist_pos: np.ndarray
    """(3,) wrist position in the object's rest frame (z up, origin at the object frame)."""
    wrist_quat: np.ndarray
    closure: np.ndarray
    """(4,) synergy parameters where each finger touches."""
    touching: np.ndarray
    """(4,) bool: fingers (ff, mf, rf, th) in contact with the object."""


@dataclass
class Feasibility:
    ok: bool
    reason: str
    worst_penetration_m: float
    frame: int


class KinematicScene:
    """The dex-track scene in one MjData, for posing hand and object and reading contacts."""

    def __init__(self, physics_dt: float = 0.005):
        spec = build_scene(physics_dt, hand_table_contact=True)
        self.model = mujoco.MjModel.from_xml_string(spec)
        self.model.geom_margin[:] = CONTACT_MARGIN_M
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.slot0 = m.geom(ob.SLOTS[0][0]).id
        self.table = m.geom("table").id
        self.finger_of_geom = np.full(m.ngeom, -1)
        for g in range(m.ngeom):
            body = m.body(m.geom_bodyid[g]).name
            for i, f in enumerate(FINGERS):
                if body.startswith(f + "_"):
                    self.finger_of_geom[g] = i
            if body == "palm":
                self.finger_of_geom[g] = len(FINGERS)
        self.object_geoms = np.arange(self.slot0, self.slot0 + ob.NUM_SLOTS)

    def set_object(self, kind: str, dims: np.ndarray) -> None:
        g = ob.slot_geometry([kind], np.asarray(dims)[None])
        rbound, aabb = ob.bounding(g)
        m, sl = self.model, slice(self.slot0, self.slot0 + ob.NUM_SLOTS)
        m.geom_size[sl], m.geom_pos[sl] = g.size[0], g.pos[0]
        m.geom_rbound[sl], m.geom_aabb[sl] = rbound[0], aabb[0]
        m.geom_contype[sl] = np.where(g.active[0], ob.OBJECT_CONTYPE, 0)
        m.geom_conaffinity[sl] = np.where(g.active[0], ob.OBJECT_CONAFFINITY, 0)

    def pose(self, wrist: np.ndarray, fingers: np.ndarray, obj_pos, obj_quat) -> None:
        d = self.data
        d.qpos[:6], d.qpos[6:22] = wrist, fingers
        d.qpos[22:25], d.qpos[25:29] = obj_pos, obj_quat
        mujoco.mj_forward(self.model, d)

    def contacts(self) -> tuple[np.ndarray, np.ndarray, float, str]:
        """Per finger (ff, mf, rf, th, then the palm): touching the object, and touching the
        table; the deepest interpenetration (m, >= 0) and the pair it is in."""
        d = self.data
        obj, table = np.zeros(5, dtype=bool), np.zeros(5, dtype=bool)
        worst, pair = 0.0, ""
        for c in d.contact[: d.ncon]:
            g = (int(c.geom1), int(c.geom2))
            for a, b in (g, g[::-1]):
                f = self.finger_of_geom[a]
                if f < 0:
                    continue
                if b in self.object_geoms:
                    obj[f] = True
                elif b == self.table:
                    table[f] = True
            if -c.dist > worst:
                worst = -float(c.dist)
                pair = f"{self.model.geom(g[0]).name}/{self.model.geom(g[1]).name}"
        return obj, table, worst, pair

    def object_top(self) -> float:
        """Height of the highest point of the posed object's active geoms."""
        d, m = self.data, self.model
        top = -np.inf
        for g in self.object_geoms:
            if m.geom_contype[g]:
                half = np.abs(d.geom_xmat[g].reshape(3, 3)) @ m.geom_aabb[g, 3:]
                top = max(top, d.geom_xpos[g, 2] + half[2])
        return float(top)


@lru_cache(maxsize=1)
def kinematic_scene() -> KinematicScene:
    return KinematicScene()


def _palm_offset(scene: KinematicScene, pitch: float) -> tuple[np.ndarray, np.ndarray]:
    """Palm-centre position relative to the wrist, and the wrist quaternion, at `pitch`."""
    quat = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), np.array(pitch))[None]
    wrist = wrist_joints(np.zeros((1, 3)), quat)[0]
    scene.pose(wrist, finger_synergy(np.zeros(4)), np.array([0.0, 0.0, -1.0]), [1, 0, 0, 0])
    return scene.data.site("palm_centre").xpos.copy(), quat[0]


def close_fingers(scene: KinematicScene, wrist: np.ndarray, obj_pos, obj_quat) -> Grasp | None:
    """Close every finger until it touches (bisection); None if the open hand collides."""
    scene.pose(wrist, finger_synergy(np.zeros(4)), obj_pos, obj_quat)
    obj, table, _, _ = scene.contacts()
    if obj.any() or table.any():
        return None
    lo, hi = np.zeros(4), np.ones(4)
    scene.pose(wrist, finger_synergy(hi), obj_pos, obj_quat)
    obj, table, _, _ = scene.contacts()
    closes = (obj | table)[:4]
    lo[~closes] = 1.0
    for _ in range(BISECTION_STEPS):
        mid = np.where(closes, (lo + hi) / 2, 1.0)
        scene.pose(wrist, finger_synergy(mid), obj_pos, obj_quat)
        obj, table, _, _ = scene.contacts()
        hit = (obj | table)[:4]
        hi = np.where(closes & hit, mid, hi)
        lo = np.where(closes & ~hit, mid, lo)
    s = np.where(closes, hi, 1.0)
    scene.pose(wrist, finger_synergy(s), obj_pos, obj_quat)
    obj, table, worst, _ = scene.contacts()
    if worst > PENETRATION_TOLERANCE_M / 2 or obj[4] or table[4]:
        return None
    pos, quat = wrist_pose(wrist[None])
    return Grasp(pos[0], quat[0], s, (obj & ~table)[:4])


def _opposed(scene: KinematicScene, touching: np.ndarray, centre: np.ndarray) -> bool:
    """Thumb and the touching fingers on opposite sides of the object (horizontally)."""
    tips = np.array([scene.data.site(f"{f}_tip").xpos for f in FINGERS])
    fingers = tips[:3][touching[:3]].mean(axis=0)
    a, b = (tips[3] - centre)[:2], (fingers - centre)[:2]
    return float(a @ b) < -0.5 * np.linalg.norm(a) * np.linalg.norm(b)


def plan_grasp(kind: str, dims: np.ndarray, rng: np.random.Generator) -> Grasp | None:
    """A touching, opposed grasp of the object resting upright at the origin (yaw 0), the
    deepest of the candidate poses that works; None when none does."""
    scene = kinematic_scene()
    scene.set_object(kind, dims)
    obj_pos = np.array([0.0, 0.0, ob.rest_height([kind], np.asarray(dims)[None])[0]])
    obj_quat = np.array([1.0, 0.0, 0.0, 0.0])
    scene.pose(np.array([0, 0, 0.5, 0, 0, 0]), finger_synergy(np.zeros(4)), obj_pos, obj_quat)
    top = scene.object_top()
    offsets = {p: _palm_offset(scene, p) for p in PITCHES}
    # Deepest grasps first (palm closest to the object: the most contact, the least
    # pivoting), in random order among equally deep ones.
    candidates = [(p, x, z) for z in PALM_ABOVE for p, x in rng.permutation(_PITCH_BEHIND).tolist()]
    for pitch, behind, above in candidates:
        palm, quat = offsets[pitch]
        wrist = wrist_joints((np.array([behind, 0.0, top + above]) - palm)[None], quat[None])[0]
        grasp = close_fingers(scene, wrist, obj_pos, obj_quat)
        if grasp is None or not grasp.touching[3] or grasp.touching[:3].sum() < 2:
            continue
        if _opposed(scene, grasp.touching, obj_pos):
            return grasp
    return None


def check_feasible(ref, grasp_frame: int | None = None) -> Feasibility:
    """Pose every frame of reference `ref` kinematically: infeasible when hand, object and
    table interpenetrate deeper than PENETRATION_TOLERANCE_M anywhere, or (when
    `grasp_frame` is given) when the thumb and another finger do not touch the object at
    that frame, the last one before it moves."""
    scene = kinematic_scene()
    scene.set_object(ref.object_type, ref.object_dims)
    wrist = wrist_joints(ref.wrist_pos, ref.wrist_quat)
    worst, worst_frame, worst_pair = 0.0, -1, ""
    for t in range(ref.num_frames):
        scene.pose(wrist[t], ref.finger_pos[t], ref.object_pos[t], ref.object_quat[t])
        obj, _, pen, pair = scene.contacts()
        if pen > worst:
            worst, worst_frame, worst_pair = pen, t, pair
        if t == grasp_frame and not (obj[3] and obj[:3].any()):
            return Feasibility(False, f"no thumb-finger contact at grasp frame {t}", worst, t)
    if worst > PENETRATION_TOLERANCE_M:
        return Feasibility(
            False,
            f"interpenetration {worst * 1e3:.1f} mm ({worst_pair}) at frame {worst_frame}",
            worst,
            worst_frame,
        )
    return Feasibility(True, "", worst, worst_frame)
