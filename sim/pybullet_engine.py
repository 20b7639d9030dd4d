"""PyBullet as a second engine: free-flying rigid bodies driven by MuJoCo site actuators.

This engine runs the models the quadcopter tasks use, not MuJoCo models in general:
every body other than the world has one free joint and is made of sphere, capsule,
cylinder and box geoms; the world holds only horizontal planes (the floor); every
actuator acts on a site (force along gear[0:3] and torque about gear[3:6], both in the
site frame) with fixed gain, no bias, and dynamics none, filter or filterexact.
`from_xml` compiles the MJCF with MuJoCo, reads all of this from the compiled model,
and raises ValueError naming whatever else it finds.

One PyBullet DIRECT client holds all N copies on a grid (GRID_SPACING_M apart) over
shared floor planes; a copy's bodies collide with the floor and with each other, never
with another copy. State arrays follow MuJoCo's free joint exactly: qpos (N, 7 per body)
is the body frame's position relative to the copy's grid cell and its quaternion
(w, x, y, z); qvel (N, 6 per body) is the body origin's world-frame linear velocity and
the body-frame angular velocity. PyBullet's own base frame is the inertial frame
(centre of mass, principal axes); the conversion happens on every read and write.

Physics matches mjbatch where it can: the model's timestep and gravity, explicit mass
and inertia (never inertia from shapes), no damping, no sleeping, no velocity clamp,
MuJoCo's actuator dynamics and activation update (actearly included) in numpy, and
PyBullet's semi-implicit Euler, like MuJoCo's default integrator. In contact-free
flight of the Crazyflie the two engines agree to AGREEMENT_POSITION_M and
AGREEMENT_ATTITUDE_DEG over 2 s of an open-loop manoeuvre (tests/sim/test_pybullet_engine.py;
measured 2e-14 m and 1e-12 degrees, rounding error). That holds for any body whose
centre of mass is its body origin; with an offset one, MuJoCo integrates the velocity of
the origin and PyBullet that of the centre of mass, and the two differ by O(dt).
Contacts are PyBullet's own (rigid, LCP) rather than MuJoCo's soft contacts: a body at
rest on the floor stays at rest in both, but impacts differ. Sliding friction of a
body is the largest of its geoms' and the floor's, so body-floor pairs get MuJoCo's
max rule. Bullet limits rotation to pi/4 per step (188 rad/s at 240 Hz).

Actuator wrenches are summed per body in the body's inertial frame, where they do not
depend on the state, and applied with LINK_FRAME (one force at the centre of mass and
one torque per body and physics step), so intermediate substeps need no state read.
`xfrc_applied` is applied with WORLD_FRAME. Old PyBullet releases swapped LINK_FRAME
and WORLD_FRAME in applyExternalTorque on a base (bullet3 issue #1949, fixed by pull
request #3950, merged in 2021, before 3.2.6, the project's minimum). PyBullet 3.2.7
applies both frames as documented, which the tests check directly and against MuJoCo.

PyBullet has no batched API, so every step makes a few calls per body from Python;
all arithmetic is vectorized over the copies.
"""

from __future__ import annotations

from functools import partial

import mujoco
import numpy as np
import pybullet as p

from simreal.sim.actuation import SUPPORTED_DYNAMICS, ActuatorDynamics
from simreal.sim.host_state import HostStateEngine
from simreal.sim.quaternions import quat_mul

DIVERGED_QVEL = 1e4
"""A velocity above this (m/s or rad/s) means the simulation blew up (as in mjbatch)."""

MAX_STATE = 1e10
"""MuJoCo's mjMAXVAL: a state beyond it (or not finite) restarts the simulation, as MuJoCo does."""

GRID_SPACING_M = 10.0
"""Distance between neighbouring copies; they never collide, this only keeps views apart."""

SOLVER_ITERATIONS = 50
"""PyBullet's default contact solver iterations, set explicitly."""

AGREEMENT_POSITION_M = 1e-9
AGREEMENT_ATTITUDE_DEG = 1e-6
"""Largest differences from mjbatch over 2 s of Crazyflie flight, checked by the tests."""

SUPPORTED_FIELDS = (
    "body_mass",
    "body_inertia",
    "actuator_gear",
    "actuator_dynprm",
    "actuator_gainprm",
)
"""Per-copy model fields; body fields reach PyBullet at commit_model, actuator fields every step."""

_BODY_GEOMS = {
    int(mujoco.mjtGeom.mjGEOM_SPHERE): p.GEOM_SPHERE,
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): p.GEOM_CAPSULE,
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): p.GEOM_CYLINDER,
    int(mujoco.mjtGeom.mjGEOM_BOX): p.GEOM_BOX,
}
_INTEGRATORS = {int(mujoco.mjtIntegrator.mjINT_EULER), int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST)}
"""Semi-implicit Euler, like PyBullet's; implicitfast equals it without damping."""
_UNSUPPORTED_ELEMENTS = {
    "neq": "equality constraints",
    "ntendon": "tendons",
    "npair": "explicit contact pairs",
    "nexclude": "contact exclusions",
    "nflex": "flexes",
}
_ORIGIN = (0.0, 0.0, 0.0)


class PyBulletClientEngine(HostStateEngine):
    """What both PyBullet engines (free bodies here, articulated robots in
    `pybullet_articulated`) do the same way on their one client: push the rows of the host
    state written since the last read, report unstable copies, and disconnect. A subclass
    sets `_client`, `_restarted`, `_seen_qpos` / `_seen_qvel` and writes `_write_state`."""

    _client: int | None
    _restarted: np.ndarray
    _seen_qpos: np.ndarray
    _seen_qvel: np.ndarray

    def _write_state(self, rows: np.ndarray) -> None:
        raise NotImplementedError

    def _restart(self, rows: np.ndarray) -> None:
        raise NotImplementedError

    def _state_read(self) -> None:
        """The host state now holds what PyBullet has: remember it (to see later writes)
        and restart copies whose state is non-finite or out of range."""
        self._seen_qpos[:] = self.qpos
        self._seen_qvel[:] = self.qvel
        bad = _bad_state(self.qpos, self.qvel, MAX_STATE)
        if bad.any():
            self._restart(np.flatnonzero(bad))

    def _good_rows(self, rows: np.ndarray) -> np.ndarray:
        """`rows` whose written state PyBullet can take; the others are restarted."""
        bad = _bad_state(self.qpos[rows], self.qvel[rows], MAX_STATE)
        if bad.any():
            self._restart(rows[bad])
        return rows[~bad]

    def _write_changed_state(self) -> None:
        """Push rows of qpos or qvel written since the last read (bit for bit) to PyBullet."""
        changed = (self.qpos.view(np.int64) != self._seen_qpos.view(np.int64)).any(axis=1)
        changed |= (self.qvel.view(np.int64) != self._seen_qvel.view(np.int64)).any(axis=1)
        if changed.any():
            self._write_state(np.flatnonzero(changed))

    def unstable(self) -> np.ndarray:
        """Non-finite or diverged state, or a restart (bad state or forces) since the last call."""
        restarted = self._restarted.copy()
        self._restarted[:] = False
        finite = np.isfinite(self.qpos).all(axis=1) & np.isfinite(self.qvel).all(axis=1)
        return restarted | ~finite | (np.abs(self.qvel).max(axis=1) > DIVERGED_QVEL)

    def close(self) -> None:
        if self._client is not None:
            p.disconnect(physicsClientId=self._client)
            self._client = None

    def __del__(self) -> None:
        # Not contextlib.suppress: at interpreter exit the module's globals may already be
        # None, and the finalizer would print an AttributeError instead of closing quietly.
        try:  # noqa: SIM105
            self.close()
        except Exception:
            pass


class PyBulletEngine(PyBulletClientEngine):
    """N copies of one MuJoCo model simulated by PyBullet, with mjbatch's arrays."""

    engine_name = "pybullet"
    supported_fields = SUPPORTED_FIELDS

    def __init__(self, model: mujoco.MjModel, num_envs: int, num_threads: int = 0) -> None:
        """num_threads is accepted for the common signature; PyBullet steps on one thread."""
        check_supported(model)
        self.model = model
        self.num_envs = num_envs
        self.num_threads = 1
        self.physics_dt = float(model.opt.timestep)
        n, nbody = num_envs, model.nbody
        self.qpos = np.tile(model.qpos0, (n, 1))
        self.qvel = np.zeros((n, model.nv))
        self.ctrl = np.zeros((n, model.nu))
        self.act = np.zeros((n, model.na))
        self.xfrc_applied = np.zeros((n, nbody, 6))
        self._fields = {
            name: np.repeat(getattr(model, name)[None], n, 0) for name in SUPPORTED_FIELDS
        }
        self._restarted = np.zeros(n, dtype=bool)
        self._prepare_actuators(model)
        self._ipos = model.body_ipos[1:].copy()
        self._iquat = model.body_iquat[1:].copy()
        side = int(np.ceil(np.sqrt(n)))
        cell = np.stack([np.arange(n) % side, np.arange(n) // side, np.zeros(n)], axis=1)
        self._origin = (cell - [(side - 1) / 2, (side - 1) / 2, 0]) * GRID_SPACING_M
        self._client = p.connect(p.DIRECT)
        self._call = {
            name: partial(getattr(p, name), physicsClientId=self._client)
            for name in (
                "applyExternalForce",
                "applyExternalTorque",
                "getBasePositionAndOrientation",
                "getBaseVelocity",
                "resetBasePositionAndOrientation",
                "resetBaseVelocity",
                "changeDynamics",
                "stepSimulation",
            )
        }
        p.setGravity(*model.opt.gravity, physicsClientId=self._client)
        p.setPhysicsEngineParameter(
            fixedTimeStep=self.physics_dt,
            numSubSteps=0,
            numSolverIterations=SOLVER_ITERATIONS,
            deterministicOverlappingPairs=1,
            physicsClientId=self._client,
        )
        self._ids = self._build_bodies(model)
        self._flat_ids = self._ids.ravel().tolist()
        self._com = np.zeros((n, nbody - 1, 3))
        self._seen_qpos = self.qpos.copy()
        self._seen_qvel = self.qvel.copy()
        self._write_state(np.arange(n))

    @classmethod
    def from_xml(cls, mjcf: str, num_envs: int, num_threads: int = 0) -> PyBulletEngine:
        return cls(mujoco.MjModel.from_xml_string(mjcf), num_envs, num_threads)

    def step(self, substeps: int = 1) -> None:
        self._write_changed_state()
        pushed = np.flatnonzero(np.any(self.xfrc_applied[:, 1:] != 0.0, axis=(1, 2)))
        unit = self._unit_wrenches()
        step_simulation = self._call["stepSimulation"]
        for k in range(substeps):
            self._apply_actuators(unit)
            if pushed.size:
                self._apply_xfrc(pushed)
            step_simulation()
            if pushed.size or k == substeps - 1:
                self._read_state()

    def commit_model(self, ids: np.ndarray | None = None) -> None:
        """Push body_mass and body_inertia of copies `ids` (all if None) to PyBullet."""
        rows = np.arange(self.num_envs) if ids is None else np.arange(self.num_envs)[ids]
        mass, inertia = self._fields["body_mass"], self._fields["body_inertia"]
        change = self._call["changeDynamics"]
        for r in rows.tolist():
            for k, body in enumerate(self._ids[r].tolist()):
                # Mass and inertia in one call: a mass alone makes PyBullet recompute the
                # inertia from the collision shapes.
                change(
                    body, -1, mass=mass[r, k + 1], localInertiaDiagonal=inertia[r, k + 1].tolist()
                )

    def _prepare_actuators(self, model: mujoco.MjModel) -> None:
        """Constant per-actuator geometry in the inertial frame of the body it drives."""
        site = model.actuator_trnid[:, 0]
        body = model.site_bodyid[site]
        rot_inertial = _matrix(model.body_iquat[body])  # body from inertial
        rot_site = _matrix(model.site_quat[site])  # body from site
        self._site_rot = np.einsum("uji,ujk->uik", rot_inertial, rot_site)
        lever = model.site_pos[site] - model.body_ipos[body]
        self._site_lever = np.einsum("uji,uj->ui", rot_inertial, lever)
        self._drives = (body[None, :] == np.arange(1, model.nbody)[:, None]).astype(float)
        self._dynamics = ActuatorDynamics.of(model)

    def _build_bodies(self, model: mujoco.MjModel) -> np.ndarray:
        """The floor planes, then (N, nbody - 1) PyBullet ids of every free body of every copy.

        Every collision is off by default and switched on pair by pair where MuJoCo's
        contype/conaffinity allow it: a body with the floor and with the bodies of its copy.
        """
        c = self._client
        body_geoms = [_collision_geoms(model, b) for b in range(model.nbody)]
        floors, floor_friction = [], 0.0
        for g in body_geoms[0]:
            shape = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=c)
            floor = p.createMultiBody(
                0.0, shape, -1, [0, 0, model.geom_pos[g, 2]], physicsClientId=c
            )
            p.changeDynamics(floor, -1, lateralFriction=1.0, physicsClientId=c)
            p.setCollisionFilterGroupMask(floor, -1, 0, 0, physicsClientId=c)
            floors.append((floor, g))
            floor_friction = max(floor_friction, model.geom_friction[g, 0])
        touches_floor = [
            [floor for floor, g in floors if _touch(model, body_geoms[b], [g])]
            for b in range(1, model.nbody)
        ]
        touches_body = [
            [j for j in range(k) if _touch(model, body_geoms[k + 1], body_geoms[j + 1])]
            for k in range(model.nbody - 1)
        ]
        shapes = [self._collision_shape(model, body_geoms[b]) for b in range(1, model.nbody)]
        ids = np.zeros((self.num_envs, model.nbody - 1), dtype=np.int64)
        for r in range(self.num_envs):
            for k, b in enumerate(range(1, model.nbody)):
                body = p.createMultiBody(
                    float(model.body_mass[b]),
                    shapes[k],
                    -1,
                    (self._origin[r] + model.body_pos[b]).tolist(),
                    _xyzw(model.body_quat[b]),
                    baseInertialFramePosition=model.body_ipos[b].tolist(),
                    baseInertialFrameOrientation=_xyzw(model.body_iquat[b]),
                    physicsClientId=c,
                )
                friction = max(
                    model.geom_friction[body_geoms[b], 0].max(initial=0.0), floor_friction
                )
                p.changeDynamics(
                    body,
                    -1,
                    localInertiaDiagonal=model.body_inertia[b].tolist(),
                    linearDamping=0.0,
                    angularDamping=0.0,
                    maxJointVelocity=MAX_STATE,
                    lateralFriction=friction,
                    activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING,
                    physicsClientId=c,
                )
                p.setCollisionFilterGroupMask(body, -1, 0, 0, physicsClientId=c)
                for other in touches_floor[k] + [int(ids[r, j]) for j in touches_body[k]]:
                    p.setCollisionFilterPair(body, other, -1, -1, 1, physicsClientId=c)
                ids[r, k] = body
        return ids

    def _collision_shape(self, model: mujoco.MjModel, geoms: np.ndarray) -> int:
        if not geoms.size:
            return -1
        kinds = [_BODY_GEOMS[int(model.geom_type[g])] for g in geoms]
        sizes = [model.geom_size[g] for g in geoms]
        return p.createCollisionShapeArray(
            kinds,
            radii=[float(s[0]) for s in sizes],
            halfExtents=[s.tolist() for s in sizes],
            lengths=[2.0 * float(s[1]) for s in sizes],
            collisionFramePositions=[model.geom_pos[g].tolist() for g in geoms],
            collisionFrameOrientations=[_xyzw(model.geom_quat[g]) for g in geoms],
            physicsClientId=self._client,
        )

    def _unit_wrenches(self) -> np.ndarray:
        """(N, nu, 6) force and torque about the centre of mass per unit actuator force,
        in the driven body's inertial frame, from this step's gear."""
        gear = self._fields["actuator_gear"]
        force = np.einsum("uij,nuj->nui", self._site_rot, gear[..., :3])
        torque = np.einsum("uij,nuj->nui", self._site_rot, gear[..., 3:])
        return np.concatenate([force, torque + np.cross(self._site_lever, force)], axis=2)

    def _actuator_forces(self) -> np.ndarray:
        """(N, nu) actuator forces of this physics step; advances act like mj_step does."""
        f = self._fields
        return self._dynamics.forces(
            self.ctrl, self.act, f["actuator_dynprm"], f["actuator_gainprm"], self.physics_dt
        )

    def _apply_actuators(self, unit: np.ndarray) -> None:
        wrench = np.einsum("nu,nuk,bu->nbk", self._actuator_forces(), unit, self._drives)
        bad = ~np.isfinite(wrench).all(axis=(1, 2))
        if bad.any():
            wrench[bad] = 0.0
            self._restart(np.flatnonzero(bad))
        flat = wrench.reshape(-1, 6)
        apply_force, apply_torque = (
            self._call["applyExternalForce"],
            self._call["applyExternalTorque"],
        )
        for body, w in zip(self._flat_ids, flat.tolist(), strict=True):
            apply_force(body, -1, w[:3], _ORIGIN, p.LINK_FRAME)
            apply_torque(body, -1, w[3:], p.LINK_FRAME)

    def _apply_xfrc(self, rows: np.ndarray) -> None:
        apply_force, apply_torque = (
            self._call["applyExternalForce"],
            self._call["applyExternalTorque"],
        )
        wrench = self.xfrc_applied[rows, 1:].reshape(-1, 6).tolist()
        com = self._com[rows].reshape(-1, 3).tolist()
        for body, w, at in zip(self._ids[rows].ravel().tolist(), wrench, com, strict=True):
            apply_force(body, -1, w[:3], at, p.WORLD_FRAME)
            apply_torque(body, -1, w[3:], p.WORLD_FRAME)

    def _read_state(self) -> None:
        n, nfree = self._ids.shape
        get_pose, get_vel = (
            self._call["getBasePositionAndOrientation"],
            self._call["getBaseVelocity"],
        )
        pose = np.array([(*x, *q) for x, q in map(get_pose, self._flat_ids)]).reshape(n, nfree, 7)
        vel = np.array([(*v, *w) for v, w in map(get_vel, self._flat_ids)]).reshape(n, nfree, 6)
        quat = quat_mul(pose[..., [6, 3, 4, 5]], self._iquat * [1, -1, -1, -1])
        qpos = self.qpos.reshape(n, nfree, 7)
        qvel = self.qvel.reshape(n, nfree, 6)
        # q and -q are the same rotation; keep the sign continuous as MuJoCo's integrator does.
        quat *= np.where(np.sum(quat * qpos[..., 3:], axis=-1, keepdims=True) < 0, -1.0, 1.0)
        rot = _matrix(quat)
        offset = np.einsum("nbij,bj->nbi", rot, self._ipos)
        qpos[..., :3] = pose[..., :3] - offset - self._origin[:, None]
        qpos[..., 3:] = quat
        qvel[..., :3] = vel[..., :3] - np.cross(vel[..., 3:], offset)
        qvel[..., 3:] = np.einsum("nbji,nbj->nbi", rot, vel[..., 3:])
        self._com[:] = pose[..., :3]
        self._state_read()

    def _write_state(self, rows: np.ndarray) -> None:
        rows = self._good_rows(rows)
        nfree = self._ids.shape[1]
        qpos = self.qpos[rows].reshape(-1, nfree, 7)
        qvel = self.qvel[rows].reshape(-1, nfree, 6)
        quat = qpos[..., 3:] / np.linalg.norm(qpos[..., 3:], axis=-1, keepdims=True)
        rot = _matrix(quat)
        offset = np.einsum("nbij,bj->nbi", rot, self._ipos)
        com = qpos[..., :3] + offset + self._origin[rows, None]
        quat_com = quat_mul(quat, self._iquat)[..., [1, 2, 3, 0]]
        ang_vel = np.einsum("nbij,nbj->nbi", rot, qvel[..., 3:])
        lin_vel = qvel[..., :3] + np.cross(ang_vel, offset)
        reset_pose = self._call["resetBasePositionAndOrientation"]
        reset_vel = self._call["resetBaseVelocity"]
        for body, x, q, v, w in zip(
            self._ids[rows].ravel().tolist(),
            com.reshape(-1, 3).tolist(),
            quat_com.reshape(-1, 4).tolist(),
            lin_vel.reshape(-1, 3).tolist(),
            ang_vel.reshape(-1, 3).tolist(),
            strict=True,
        ):
            reset_pose(body, x, q)
            reset_vel(body, v, w)
        self._com[rows] = com
        self._seen_qpos[rows] = self.qpos[rows]
        self._seen_qvel[rows] = self.qvel[rows]

    def _restart(self, rows: np.ndarray) -> None:
        """Do what MuJoCo does with a bad state: restart from the model's initial state and
        remember it for unstable()."""
        self._restarted[rows] = True
        self.qpos[rows] = self.model.qpos0
        self.qvel[rows] = 0.0
        self.ctrl[rows] = 0.0
        self.act[rows] = 0.0
        self.xfrc_applied[rows] = 0.0
        self._write_state(rows)


def check_supported(model: mujoco.MjModel) -> None:
    """Raise ValueError listing every part of `model` the pybullet engine cannot simulate."""
    problems = []
    for name, what in _UNSUPPORTED_ELEMENTS.items():
        if getattr(model, name):
            problems.append(f"{what} ({getattr(model, name)})")
    if model.opt.integrator not in _INTEGRATORS:
        integrator = _name(mujoco.mjtIntegrator, model.opt.integrator)
        problems.append(f"{integrator} integrator (only euler and implicitfast: no damping here)")
    for flag in ("constraint", "contact", "gravity", "clampctrl", "actuation"):
        if model.opt.disableflags & getattr(mujoco.mjtDisableBit, f"mjDSBL_{flag.upper()}"):
            problems.append(f"disabled {flag} (option flag)")
    for name in ("density", "viscosity"):
        if getattr(model.opt, name):
            problems.append(f"option {name} (fluid forces)")
    if np.any(model.opt.wind):
        problems.append("option wind (fluid forces)")
    for b in range(1, model.nbody):
        body = f"body {model.body(b).name or b}"
        kinds = [_name(mujoco.mjtJoint, t) for t in model.jnt_type[model.jnt_bodyid == b]]
        if kinds != ["free"]:
            problems.append(f"{body}: joints {kinds or 'none'} (needs exactly one free joint)")
        elif model.body_parentid[b] != 0:
            problems.append(f"{body}: a free body inside another body")
        if model.body_gravcomp[b]:
            problems.append(f"{body}: gravcomp")
    dofs = np.concatenate([model.dof_damping, model.dof_armature, model.dof_frictionloss])
    if np.any(dofs):
        problems.append("joint damping, armature or frictionloss")
    for g in range(model.ngeom):
        kind = int(model.geom_type[g])
        geom = f"geom {model.geom(g).name or g} ({_name(mujoco.mjtGeom, kind)})"
        if model.geom_bodyid[g] != 0:
            if kind not in _BODY_GEOMS:
                problems.append(f"{geom}: only sphere, capsule, cylinder and box on bodies")
        elif model.geom_contype[g] | model.geom_conaffinity[g]:
            if kind != mujoco.mjtGeom.mjGEOM_PLANE.value:
                problems.append(f"{geom}: the world body may hold only planes")
            elif not np.allclose(_matrix(model.geom_quat[g])[:, 2], [0, 0, 1]):
                problems.append(f"{geom}: only horizontal planes")
    for a in range(model.nu):
        actuator = f"actuator {model.actuator(a).name or a}"
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_SITE:
            problems.append(
                f"{actuator}: {_name(mujoco.mjtTrn, model.actuator_trntype[a])} transmission "
                "(only site)"
            )
        elif model.actuator_trnid[a, 1] != -1:
            problems.append(f"{actuator}: refsite")
        if int(model.actuator_dyntype[a]) not in SUPPORTED_DYNAMICS:
            dyn = _name(mujoco.mjtDyn, model.actuator_dyntype[a])
            problems.append(f"{actuator}: {dyn} dynamics (only none, filter, filterexact)")
        if model.actuator_gaintype[a] != mujoco.mjtGain.mjGAIN_FIXED:
            problems.append(f"{actuator}: {_name(mujoco.mjtGain, model.actuator_gaintype[a])} gain")
        if model.actuator_biastype[a] != mujoco.mjtBias.mjBIAS_NONE:
            problems.append(f"{actuator}: {_name(mujoco.mjtBias, model.actuator_biastype[a])} bias")
    if problems:
        raise ValueError(
            "the pybullet engine simulates free rigid bodies driven by site actuators; "
            "unsupported: " + "; ".join(problems)
        )


def _collision_geoms(model: mujoco.MjModel, body: int) -> np.ndarray:
    """Geoms of `body` that take part in collisions at all."""
    own = model.geom_bodyid == body
    return np.flatnonzero(own & ((model.geom_contype | model.geom_conaffinity) != 0))


def _touch(model: mujoco.MjModel, geoms: np.ndarray, others: np.ndarray | list[int]) -> bool:
    """Whether any geom of one set may collide with any of the other (contype/conaffinity)."""
    ct, ca = model.geom_contype, model.geom_conaffinity
    a, b = np.meshgrid(geoms, others)
    return bool(np.any((ct[a] & ca[b]) | (ct[b] & ca[a])))


def _bad_state(qpos: np.ndarray, qvel: np.ndarray, limit: float) -> np.ndarray:
    state = np.concatenate([qpos, qvel], axis=1)
    return ~np.isfinite(state).all(axis=1) | (np.abs(state).max(axis=1) > limit)


def _name(enum: type, value: int) -> str:
    return enum(int(value)).name.split("_", 1)[1].lower()


def _xyzw(quat: np.ndarray) -> list[float]:
    return [float(quat[1]), float(quat[2]), float(quat[3]), float(quat[0])]


def _matrix(quat: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices of (..., 4) unit quaternions (w, x, y, z)."""
    w, x, y, z = np.moveaxis(quat, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )
