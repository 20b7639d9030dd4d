"""PyBullet for articulated robots: the G1 from the URDF simreal writes, with mjbatch's arrays.

The MJCF a task hands to `make_engine` is compiled with MuJoCo (to read its joints,
actuators, contact bits and exclusions); the robot itself is loaded into PyBullet from
the URDF that `simreal robot g1 --urdf` writes (`URDF_BUILDERS`, keyed by the MJCF's
model name), and `check_same_robot` holds the two equal before anything runs: the same
hinge joints in the same order with the same limits, and the same mass. A root body with
a free joint is a floating base; a root body welded to the world (no joint, the "hung"
robot) is a fixed base.

State arrays are mjbatch's: qpos (N, [7 +] njoint) is the root's body-frame position
relative to the copy's grid cell, its quaternion (w, x, y, z) and the joint angles;
qvel (N, [6 +] njoint) the root origin's world linear velocity, its body-frame angular
velocity and the joint speeds. PyBullet's base frame is the base's inertial frame (its
centre of mass and principal axes, as PyBullet diagonalized the URDF inertia); the
conversion happens on every read and write.

What is modelled as MuJoCo models it:
- MuJoCo joint actuators with fixed gain and affine bias (the G1's `position` PD motors:
  torque = kp ctrl - kp q - kd qdot), ctrl clamped to ctrlrange, force clipped to
  forcerange; computed in numpy from `actuator_gainprm`, `actuator_biasprm` and
  `actuator_forcerange` (per copy, read every physics step, so a task's per-step
  torque-speed envelope reaches it) and applied with TORQUE_CONTROL.
- Joint viscous damping (`dof_damping`): an explicit torque -d qdot in the same sum.
- Joint dry friction (`dof_frictionloss`): PyBullet's per-joint velocity motor, which
  every URDF joint has and which would otherwise hold the joints, is kept with target
  speed 0 and a force limit of the frictionloss: a Coulomb friction constraint, as
  MuJoCo's frictionloss is (MuJoCo's is soft, PyBullet's hard).
- Rotor armature: PyBullet has none. Each joint's armature is folded into its child
  link's inertia about the joint axis (`armature_in_inertia` of the URDF builder), which
  adds exactly the armature to that joint's own diagonal of the mass matrix and also to
  ancestors whose axes are parallel (e.g. 0.0072 kg m^2 on a hip roll's 0.64). Without it,
  the explicit damping of the light distal joints (ankle and wrist roll: 4e-4 kg m^2 of
  link against 7e-3 of rotor) is unstable at a 5 ms step.
- Contacts: PyBullet's (rigid, LCP, friction pyramid), filtered pair by pair as
  MuJoCo's contype/conaffinity allow (G1: only the soles touch the floor), its
  `<exclude>` pairs and parent-child pairs never collide (MuJoCo's filterparent).
  Friction is PyBullet's product of the two surfaces' coefficients (the floor's is 1,
  so a link gets its geoms' largest, MuJoCo's max rule).
- No link or joint damping of PyBullet's own, no velocity clamp, no sleeping.

MuJoCo integrates the actuators' kv and joint damping implicitly (implicitfast);
PyBullet applies them explicitly, so PyBullet runs `SUBSTEPS` internal steps per
physics step with the torques recomputed at each (the control stays the same).

Refused before the run (`check_supported`, at construction): tendons (g1-pull's rope),
equality constraints, height fields (g1-walk's rough ground) and non-plane world geoms,
flexes, explicit contact pairs, actuators other than fixed-gain affine-bias joint
actuators (the native `dcmotor` motors, activation dynamics, ctrl histories for native
latency), ball and slide joints, gravcomp, fluid forces, and models with no URDF
builder. MuJoCo sensors are refused by the task that reads one (`sensor_view`), except
`self_contact`, computed here. Per-copy model fields: LIVE_FIELDS, COMMITTED_FIELDS and
NOMINAL_ONLY_FIELDS (a changed value of those is refused at `commit_model`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial

import mujoco
import numpy as np
import pybullet as p

from simreal.sim.pybullet_engine import (
    GRID_SPACING_M,
    MAX_STATE,
    SOLVER_ITERATIONS,
    PyBulletClientEngine,
    _matrix,
    _name,
)
from simreal.sim.quaternions import quat_mul

SUBSTEPS = 2
"""PyBullet steps per physics step of the model, torques recomputed at each: the PD
damping is explicit here (implicit in MuJoCo), stable while kd h / I < 2 for the
lightest joint (ankle roll: I = 0.0076 kg m^2 with its folded armature, kd 1.8: 0.6 at
h = 2.5 ms, so gains up to about 3x nominal). Measured on the cross-engine cases: 1
substep agrees about as well (hung chirp 0.039 rad against 0.035) at twice the speed,
4 substeps a little better (0.033) at half."""

LIVE_FIELDS = ("actuator_gainprm", "actuator_biasprm", "actuator_forcerange", "dof_damping")
"""Per-copy model fields read at every physics step (no commit needed)."""

COMMITTED_FIELDS = ("dof_frictionloss", "geom_friction", "body_mass", "body_inertia")
"""Per-copy model fields pushed to PyBullet by `commit_model`: joint dry friction, link
sliding friction, link masses with their inertia (PyBullet takes the principal moments,
so an inertia must be the nominal one scaled by the mass ratio, as the G1's
randomization writes it)."""

NOMINAL_ONLY_FIELDS = ("body_ipos", "dof_armature")
"""Fields PyBullet cannot change per copy after loading (a link's centre of mass; the
armature folded into the URDF's inertia): accepted while they hold the nominal values,
refused by `commit_model` naming the field otherwise."""

SUPPORTED_FIELDS = LIVE_FIELDS + COMMITTED_FIELDS + NOMINAL_ONLY_FIELDS


def _g1_urdf() -> str:
    from simreal.robots.g1.urdf import build_urdf

    return build_urdf(armature_in_inertia=True)


URDF_BUILDERS: dict[str, Callable[[], str]] = {"unitree_g1": _g1_urdf}
"""MJCF model name -> the URDF of the same robot (with armature folded into inertia)."""

_UNSUPPORTED_ELEMENTS = {
    "neq": "equality constraints",
    "ntendon": "tendons",
    "npair": "explicit contact pairs",
    "nflex": "flexes",
    "nhfield": "height fields",
}


def is_articulated(model: mujoco.MjModel) -> bool:
    """Whether `model` has joints other than free ones, or a body welded to the world
    with children (what this engine runs rather than the free-body one)."""
    free = int(mujoco.mjtJoint.mjJNT_FREE)
    return bool(np.any(model.jnt_type != free)) or bool(
        np.any(model.body_parentid[1:] != 0) and not np.any(model.jnt_type == free)
    )


def check_supported(model: mujoco.MjModel) -> None:
    """Raise ValueError naming every part of `model` the pybullet engine cannot simulate."""
    problems = []
    name = model.names[: model.names.index(b"\0")].decode() if model.names else ""
    if name not in URDF_BUILDERS:
        problems.append(
            f"model {name!r} has no URDF for PyBullet (articulated robots: "
            f"{', '.join(URDF_BUILDERS)})"
        )
    for field, what in _UNSUPPORTED_ELEMENTS.items():
        if getattr(model, field):
            problems.append(f"{what} ({getattr(model, field)})")
    for flag in ("constraint", "contact", "gravity", "clampctrl", "actuation"):
        if model.opt.disableflags & getattr(mujoco.mjtDisableBit, f"mjDSBL_{flag.upper()}"):
            problems.append(f"disabled {flag} (option flag)")
    if model.opt.density or model.opt.viscosity or np.any(model.opt.wind):
        problems.append("fluid forces (option density, viscosity or wind)")
    hinge, free = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_FREE)
    for j in range(model.njnt):
        kind = int(model.jnt_type[j])
        if kind == free and model.jnt_bodyid[j] != 1:
            problems.append(f"joint {model.joint(j).name}: a free joint not on the root body")
        elif kind not in (hinge, free):
            problems.append(f"joint {model.joint(j).name}: {_name(mujoco.mjtJoint, kind)} joint")
    if np.any(model.body_gravcomp):
        problems.append("gravcomp")
    for g in range(model.ngeom):
        if model.geom_bodyid[g] == 0 and model.geom_contype[g] | model.geom_conaffinity[g]:
            kind = int(model.geom_type[g])
            if kind != int(mujoco.mjtGeom.mjGEOM_PLANE):
                problems.append(
                    f"world geom {model.geom(g).name or g}: {_name(mujoco.mjtGeom, kind)} "
                    "(only planes)"
                )
            elif not np.allclose(_matrix(model.geom_quat[g])[:, 2], [0, 0, 1]):
                problems.append(f"world geom {model.geom(g).name or g}: only horizontal planes")
    by_feature: dict[str, list[str]] = {}
    for a in range(model.nu):
        name = model.actuator(a).name or str(a)
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT:
            trn = _name(mujoco.mjtTrn, model.actuator_trntype[a])
            by_feature.setdefault(f"{trn} transmission (only joint)", []).append(name)
        if model.actuator_dyntype[a] != mujoco.mjtDyn.mjDYN_NONE:
            dyn = _name(mujoco.mjtDyn, model.actuator_dyntype[a])
            by_feature.setdefault(f"{dyn} actuator dynamics", []).append(name)
        if model.actuator_gaintype[a] != mujoco.mjtGain.mjGAIN_FIXED:
            gain = _name(mujoco.mjtGain, model.actuator_gaintype[a])
            by_feature.setdefault(f"{gain} actuator gain", []).append(name)
        if int(model.actuator_biastype[a]) not in (
            int(mujoco.mjtBias.mjBIAS_NONE),
            int(mujoco.mjtBias.mjBIAS_AFFINE),
        ):
            bias = _name(mujoco.mjtBias, model.actuator_biastype[a])
            by_feature.setdefault(f"{bias} actuator bias", []).append(name)
        if model.actuator_history[a, 0]:
            by_feature.setdefault("actuator ctrl history (native command delay)", []).append(name)
    for feature, names in by_feature.items():
        more = f", ... ({len(names)} actuators)" if len(names) > 2 else ""
        problems.append(f"{feature}: {', '.join(names[:2])}{more}")
    if problems:
        raise ValueError(
            "the pybullet engine cannot simulate this model; unsupported: " + "; ".join(problems)
        )


class PyBulletArticulatedEngine(PyBulletClientEngine):
    """N copies of an articulated robot in one PyBullet client, with mjbatch's arrays."""

    engine_name = "pybullet"
    supported_fields = SUPPORTED_FIELDS

    def __init__(self, model: mujoco.MjModel, num_envs: int, num_threads: int = 0) -> None:
        """num_threads is accepted for the common signature; PyBullet steps on one thread."""
        check_supported(model)
        self.model = model
        self.num_envs = n = num_envs
        self.num_threads = 1
        self.physics_dt = float(model.opt.timestep)
        self.floating = bool(model.njnt) and model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
        self.qpos = np.repeat(model.qpos0[None], n, 0)
        self.qvel = np.zeros((n, model.nv))
        self.ctrl = np.zeros((n, model.nu))
        self.act = np.zeros((n, model.na))
        self.xfrc_applied = np.zeros((n, model.nbody, 6))
        self._fields = {
            name: np.repeat(getattr(model, name)[None], n, 0) for name in SUPPORTED_FIELDS
        }
        self._restarted = np.zeros(n, dtype=bool)
        hinges = np.flatnonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
        self._hinges = hinges
        self._qadr = model.jnt_qposadr[hinges]
        self._dadr = model.jnt_dofadr[hinges]
        # actuator a drives hinge column _act_col[a] with gear[0]
        column = {int(j): k for k, j in enumerate(hinges)}
        self._act_col = np.array([column[int(j)] for j in model.actuator_trnid[:, 0]], dtype=int)
        self._gear = model.actuator_gear[:, 0].copy()
        self._ctrl_limited = model.actuator_ctrllimited.astype(bool)
        self._force_limited = model.actuator_forcelimited.astype(bool)
        side = int(np.ceil(np.sqrt(n)))
        cell = np.stack([np.arange(n) % side, np.arange(n) // side, np.zeros(n)], axis=1)
        self._origin = (cell - [(side - 1) / 2, (side - 1) / 2, 0]) * GRID_SPACING_M
        self._client = c = p.connect(p.DIRECT)
        self._call = {
            name: partial(getattr(p, name), physicsClientId=c)
            for name in (
                "getBasePositionAndOrientation",
                "getBaseVelocity",
                "resetBasePositionAndOrientation",
                "resetBaseVelocity",
                "getJointStates",
                "resetJointState",
                "setJointMotorControlArray",
                "stepSimulation",
                "getContactPoints",
            )
        }
        self._sensors: dict[str, np.ndarray] = {}
        p.setGravity(*model.opt.gravity, physicsClientId=c)
        p.setPhysicsEngineParameter(
            fixedTimeStep=self.physics_dt / SUBSTEPS,
            numSubSteps=0,
            numSolverIterations=SOLVER_ITERATIONS,
            deterministicOverlappingPairs=1,
            physicsClientId=c,
        )
        self._ids = self._build(model)
        self._seen_qpos = self.qpos.copy()
        self._seen_qvel = self.qvel.copy()
        self._write_state(np.arange(n))

    @classmethod
    def from_xml(cls, mjcf: str, num_envs: int, num_threads: int = 0) -> PyBulletArticulatedEngine:
        return cls(mujoco.MjModel.from_xml_string(mjcf), num_envs, num_threads)

    # -- building -------------------------------------------------------------------

    def _build(self, model: mujoco.MjModel) -> list[int]:
        c = self._client
        name = model.names[: model.names.index(b"\0")].decode()
        urdf = URDF_BUILDERS[name]()
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".urdf") as f:
            f.write(urdf)
            f.flush()
            self_collide = _robot_self_collides(model)
            # Not URDF_MERGE_FIXED_LINKS: PyBullet 3.2.7 merges a fixed child's inertia wrongly
            # (the hung chirp's waist joints then part from MuJoCo by 0.29 rad, 0.03 unmerged).
            flags = p.URDF_USE_INERTIA_FROM_FILE
            if self_collide:
                flags |= p.URDF_USE_SELF_COLLISION | p.URDF_USE_SELF_COLLISION_EXCLUDE_PARENT
            root_pos, root_quat = model.body_pos[1], model.body_quat[1]
            with _quiet():
                ids = [
                    self._load(f.name, r, root_pos, root_quat, flags) for r in range(self.num_envs)
                ]
        body = ids[0]
        links = {
            p.getJointInfo(body, k, physicsClientId=c)[12].decode(): k
            for k in range(p.getNumJoints(body, physicsClientId=c))
        }
        links[p.getBodyInfo(body, physicsClientId=c)[0].decode()] = -1
        joints = {
            p.getJointInfo(body, k, physicsClientId=c)[1].decode(): k
            for k in range(p.getNumJoints(body, physicsClientId=c))
        }
        check_same_robot(model, body, joints, c)
        self._pb_joints = [joints[model.joint(j).name] for j in self._hinges]
        # every MuJoCo body -> the PyBullet link it was merged into (welded bodies: their parent's)
        link_of = np.zeros(model.nbody, dtype=int)
        for b in range(1, model.nbody):
            w = b
            while model.body(w).name not in links:
                w = model.body_parentid[w]
            link_of[b] = links[model.body(w).name]
        geoms = [
            np.flatnonzero(
                (model.geom_bodyid == b) & ((model.geom_contype | model.geom_conaffinity) != 0)
            )
            for b in range(model.nbody)
        ]
        by_link: dict[int, list[int]] = {}
        for b in range(1, model.nbody):
            by_link.setdefault(int(link_of[b]), []).extend(geoms[b].tolist())
        floors = []
        for g in geoms[0]:
            shape = p.createCollisionShape(p.GEOM_PLANE, physicsClientId=c)
            floor = p.createMultiBody(
                0.0, shape, -1, [0, 0, model.geom_pos[g, 2]], physicsClientId=c
            )
            p.changeDynamics(floor, -1, lateralFriction=1.0, physicsClientId=c)
            floors.append((floor, int(g)))
        excluded = {
            tuple(sorted((int(link_of[s >> 16]), int(link_of[s & 0xFFFF]))))
            for s in model.exclude_signature
        }
        excluded |= {
            tuple(sorted((int(link_of[a]), int(link_of[b]))))
            for a in range(1, model.nbody)
            for b in range(a + 1, model.nbody)
            if _filtered_as_family(model, a, b)
        }
        link_ids = sorted(by_link)
        self._floor_geoms = np.asarray(geoms[0], dtype=int)
        self._link_geoms = by_link
        self._link_bodies: dict[int, list[int]] = {}
        for b in range(1, model.nbody):
            self._link_bodies.setdefault(int(link_of[b]), []).append(b)
        self._inertia0 = {
            link: np.array(p.getDynamicsInfo(ids[0], link, physicsClientId=c)[2])
            for link in self._link_bodies
        }
        self._scaled: dict[tuple[int, int], bool] = {}
        for robot in ids:
            p.changeDynamics(robot, -1, maxJointVelocity=MAX_STATE, physicsClientId=c)
            for link in [-1, *range(p.getNumJoints(robot, physicsClientId=c))]:
                friction = model.geom_friction[by_link.get(link, []), 0].max(initial=1.0)
                p.changeDynamics(
                    robot,
                    link,
                    linearDamping=0.0,
                    angularDamping=0.0,
                    jointDamping=0.0,
                    lateralFriction=float(friction),
                    spinningFriction=0.0,
                    rollingFriction=0.0,
                    restitution=0.0,
                    activationState=p.ACTIVATION_STATE_DISABLE_SLEEPING,
                    physicsClientId=c,
                )
            for floor, g in floors:
                for link in link_ids:
                    p.setCollisionFilterPair(
                        robot,
                        floor,
                        link,
                        -1,
                        int(_touch(model, by_link[link], [g])),
                        physicsClientId=c,
                    )
            if self_collide:
                for i, a in enumerate(link_ids):
                    for b in link_ids[i + 1 :]:
                        allowed = (a, b) not in excluded and _touch(model, by_link[a], by_link[b])
                        if not allowed:
                            p.setCollisionFilterPair(robot, robot, a, b, 0, physicsClientId=c)
            # joint dry friction: the velocity motor at target 0 with the frictionloss as limit
            p.setJointMotorControlArray(
                robot,
                self._pb_joints,
                p.VELOCITY_CONTROL,
                targetVelocities=[0.0] * len(self._pb_joints),
                forces=model.dof_frictionloss[self._dadr].tolist(),
                physicsClientId=c,
            )
        inertial = p.getDynamicsInfo(ids[0], -1, physicsClientId=c)
        self._ipos = np.array(inertial[3])
        self._iquat = np.array([inertial[4][3], *inertial[4][:3]])
        return ids

    def _load(self, path: str, r: int, pos: np.ndarray, quat: np.ndarray, flags: int) -> int:
        return p.loadURDF(
            path,
            (self._origin[r] + pos).tolist(),
            [*quat[1:], quat[0]],
            useFixedBase=not self.floating,
            flags=flags,
            physicsClientId=self._client,
        )

    # -- stepping -------------------------------------------------------------------

    def step(self, substeps: int = 1) -> None:
        self._write_changed_state()
        step_simulation = self._call["stepSimulation"]
        for _ in range(substeps):
            for _ in range(SUBSTEPS):
                self._apply_torques()
                step_simulation()
                self._read_joints()
        self._read_state()
        self._update_sensors()

    def joint_torques(self) -> np.ndarray:
        """(N, njoint) torque of the actuators and the viscous damping at the current state."""
        f = self._fields
        q = self.qpos[:, self._qadr][:, self._act_col]
        qd = self.qvel[:, self._dadr][:, self._act_col]
        ctrl = self.ctrl
        if self._ctrl_limited.any():
            lo, hi = self.model.actuator_ctrlrange.T
            ctrl = np.where(self._ctrl_limited, np.clip(ctrl, lo, hi), ctrl)
        gain, bias = f["actuator_gainprm"], f["actuator_biasprm"]
        force = gain[..., 0] * ctrl + bias[..., 0] + bias[..., 1] * q + bias[..., 2] * qd
        lo, hi = f["actuator_forcerange"][..., 0], f["actuator_forcerange"][..., 1]
        force = np.where(self._force_limited, np.clip(force, lo, hi), force)
        tau = -f["dof_damping"][:, self._dadr] * self.qvel[:, self._dadr]
        np.add.at(tau.T, self._act_col, (force * self._gear).T)
        return tau

    def _apply_torques(self) -> None:
        tau = self.joint_torques()
        bad = ~np.isfinite(tau).all(axis=1)
        if bad.any():
            tau[bad] = 0.0
            self._restart(np.flatnonzero(bad))
        control = self._call["setJointMotorControlArray"]
        for body, t in zip(self._ids, tau.tolist(), strict=True):
            control(body, self._pb_joints, p.TORQUE_CONTROL, forces=t)

    def _read_joints(self) -> None:
        get = self._call["getJointStates"]
        states = [get(body, self._pb_joints) for body in self._ids]
        arr = np.array([[s[:2] for s in row] for row in states])
        self.qpos[:, self._qadr] = arr[..., 0]
        self.qvel[:, self._dadr] = arr[..., 1]

    def _read_state(self) -> None:
        if self.floating:
            get_pose, get_vel = (
                self._call["getBasePositionAndOrientation"],
                self._call["getBaseVelocity"],
            )
            pose = np.array([(*x, *q) for x, q in map(get_pose, self._ids)])
            vel = np.array([(*v, *w) for v, w in map(get_vel, self._ids)])
            quat = quat_mul(pose[:, [6, 3, 4, 5]], self._iquat * [1, -1, -1, -1])
            quat *= np.where(
                np.sum(quat * self.qpos[:, 3:7], axis=-1, keepdims=True) < 0, -1.0, 1.0
            )
            rot = _matrix(quat)
            offset = np.einsum("nij,j->ni", rot, self._ipos)
            self.qpos[:, :3] = pose[:, :3] - offset - self._origin
            self.qpos[:, 3:7] = quat
            self.qvel[:, :3] = vel[:, :3] - np.cross(vel[:, 3:], offset)
            self.qvel[:, 3:6] = np.einsum("nji,nj->ni", rot, vel[:, 3:])
        self._state_read()

    def _write_state(self, rows: np.ndarray) -> None:
        rows = self._good_rows(rows)
        c = self._client
        reset_joint = self._call["resetJointState"]
        for r in rows.tolist():
            body = self._ids[r]
            if self.floating:
                quat = self.qpos[r, 3:7] / np.linalg.norm(self.qpos[r, 3:7])
                rot = _matrix(quat)
                offset = rot @ self._ipos
                com = self.qpos[r, :3] + offset + self._origin[r]
                quat_com = quat_mul(quat, self._iquat)[[1, 2, 3, 0]]
                ang = rot @ self.qvel[r, 3:6]
                lin = self.qvel[r, :3] + np.cross(ang, offset)
                self._call["resetBasePositionAndOrientation"](body, com.tolist(), quat_com.tolist())
                self._call["resetBaseVelocity"](body, lin.tolist(), ang.tolist())
            for k, joint in enumerate(self._pb_joints):
                reset_joint(
                    body,
                    joint,
                    float(self.qpos[r, self._qadr[k]]),
                    float(self.qvel[r, self._dadr[k]]),
                )
        del c
        self._seen_qpos[rows] = self.qpos[rows]
        self._seen_qvel[rows] = self.qvel[rows]

    def _restart(self, rows: np.ndarray) -> None:
        """Do what MuJoCo does with a bad state: restart from the initial state, flag it."""
        self._restarted[rows] = True
        self.qpos[rows] = self.model.qpos0
        self.qvel[rows] = 0.0
        self.ctrl[rows] = 0.0
        self.act[rows] = 0.0
        self.xfrc_applied[rows] = 0.0
        self._write_state(rows)

    SENSORS = ("self_contact",)
    """MuJoCo sensors this engine computes itself; others are refused by name."""

    def sensor_view(self, name: str, task: str) -> np.ndarray:
        """Live (N, dim) view of sensor `name`, updated after every `step`. `self_contact`
        (the G1's robot-robot contact sensor: number of contacts, smallest distance in
        m) from PyBullet's own contact points of each robot with itself: PyBullet's
        collision pipeline, so the count differs from MuJoCo's (one point per touching
        pair of shapes in MuJoCo, up to four per pair of links here)."""
        if name not in self.SENSORS or name not in _sensor_names(self.model):
            raise ValueError(
                f"{task} reads the MuJoCo sensor {name!r}; the pybullet engine computes only "
                f"{', '.join(self.SENSORS)} (use --engine mjbatch)"
            )
        if name not in self._sensors:
            self._sensors[name] = np.zeros((self.num_envs, 2))
            self._update_sensors()
        return self._sensors[name]

    def _update_sensors(self) -> None:
        view = self._sensors.get("self_contact")
        if view is None:
            return
        contacts = self._call["getContactPoints"]
        for r, robot in enumerate(self._ids):
            points = contacts(robot, robot)
            view[r, 0] = len(points)
            view[r, 1] = min((pt[8] for pt in points), default=0.0)

    def commit_model(self, ids: np.ndarray | None = None) -> None:
        """Push the committed fields of copies `ids` (all if None) to PyBullet; refuse a
        nominal-only field that was changed."""
        rows = np.arange(self.num_envs) if ids is None else np.arange(self.num_envs)[ids]
        f, m, c = self._fields, self.model, self._client
        for name in NOMINAL_ONLY_FIELDS:
            if not np.allclose(f[name][rows], getattr(m, name)[None], rtol=1e-9, atol=1e-12):
                raise ValueError(
                    f"model field {name!r} can only hold its nominal values on the pybullet "
                    "engine (PyBullet cannot change it per copy after loading)"
                )
        ratio = f["body_mass"][rows] / np.maximum(m.body_mass, 1e-12)
        expected = m.body_inertia[None] * ratio[..., None]
        if not np.allclose(f["body_inertia"][rows], expected, rtol=1e-9, atol=1e-15):
            raise ValueError(
                "model field 'body_inertia' on the pybullet engine must be the nominal inertia "
                "scaled by the body's mass ratio (PyBullet keeps the URDF's principal axes)"
            )
        floor_mu = f["geom_friction"][:, self._floor_geoms, 0].max(axis=1, initial=0.0)
        for r in rows.tolist():
            robot = self._ids[r]
            p.setJointMotorControlArray(
                robot,
                self._pb_joints,
                p.VELOCITY_CONTROL,
                targetVelocities=[0.0] * len(self._pb_joints),
                forces=f["dof_frictionloss"][r, self._dadr].tolist(),
                physicsClientId=c,
            )
            for link, bodies in self._link_bodies.items():
                geoms = self._link_geoms.get(link, [])
                mu = max(f["geom_friction"][r, geoms, 0].max(initial=0.0), floor_mu[r])
                mass = float(f["body_mass"][r, bodies].sum())
                scale = mass / max(float(m.body_mass[bodies].sum()), 1e-12)
                kwargs = {}
                if (mass > 0 and abs(scale - 1.0) > 1e-12) or self._scaled.get((r, link)):
                    kwargs = {
                        "mass": mass,
                        "localInertiaDiagonal": (self._inertia0[link] * scale).tolist(),
                    }
                    self._scaled[(r, link)] = abs(scale - 1.0) > 1e-12
                if link == -1 and not self.floating:
                    kwargs = {}  # a fixed base has no mass to change
                p.changeDynamics(
                    robot, link, lateralFriction=float(mu), physicsClientId=c, **kwargs
                )


def check_same_robot(model: mujoco.MjModel, body: int, joints: dict[str, int], client: int) -> None:
    """Raise ValueError unless the loaded URDF has the MJCF's hinge joints (names, limits)
    and its total mass: the two files are written from the same tables, this keeps them so."""
    problems = []
    for j in np.flatnonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE):
        name = model.joint(j).name
        if name not in joints:
            problems.append(f"joint {name} missing")
            continue
        info = p.getJointInfo(body, joints[name], physicsClientId=client)
        if info[2] != p.JOINT_REVOLUTE:
            problems.append(f"joint {name}: PyBullet type {info[2]}")
        if model.jnt_limited[j] and not np.allclose(info[8:10], model.jnt_range[j], atol=1e-6):
            problems.append(f"joint {name}: limits {info[8:10]} vs {tuple(model.jnt_range[j])}")
    mass = sum(
        p.getDynamicsInfo(body, k, physicsClientId=client)[0]
        for k in range(-1, p.getNumJoints(body, physicsClientId=client))
    )
    for k in range(p.getNumJoints(body, physicsClientId=client)):
        info = p.getDynamicsInfo(body, k, physicsClientId=client)
        if info[0] > 0 and not any(info[2]):
            # PyBullet zeroes an inertia that is no rigid body's, with only a printed warning
            problems.append(f"link {k}: PyBullet zeroed its inertia (not a rigid body's)")
    # a fixed base reports no mass in PyBullet (its fixed children do)
    floating = bool(model.njnt) and model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    expected = model.body_mass[1:].sum() - (0.0 if floating else model.body_mass[1])
    if abs(mass - expected) > 1e-6 * max(1.0, mass):
        problems.append(f"moving mass {mass:.6f} kg vs MJCF {expected:.6f} kg")
    if problems:
        raise ValueError(
            "the URDF loaded into PyBullet differs from the MJCF: " + "; ".join(problems)
        )


def _sensor_names(model: mujoco.MjModel) -> set[str]:
    return {model.sensor(k).name for k in range(model.nsensor)}


@contextlib.contextmanager
def _quiet():
    """PyBullet's URDF importer prints every link to the process's stdout (C level)."""
    import os
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _filtered_as_family(model: mujoco.MjModel, a: int, b: int) -> bool:
    """MuJoCo never collides bodies welded together, nor (filterparent) a body with its
    parent, both taken as the rigid groups they are welded into (not the world's)."""
    wa, wb = model.body_weldid[a], model.body_weldid[b]
    if wa == wb:
        return True
    if not wa or not wb:
        return False
    return model.body_parentid[wa] == wb or model.body_parentid[wb] == wa


def _robot_self_collides(model: mujoco.MjModel) -> bool:
    robot = np.flatnonzero(model.geom_bodyid != 0)
    return _touch(model, robot, robot)


def _touch(model: mujoco.MjModel, geoms, others) -> bool:
    """Whether any geom of one set may collide with any of the other (contype/conaffinity)."""
    if not len(geoms) or not len(others):
        return False
    ct, ca = model.geom_contype, model.geom_conaffinity
    a, b = np.meshgrid(np.asarray(geoms, dtype=int), np.asarray(others, dtype=int))
    return bool(np.any((ct[a] & ca[b]) | (ct[b] & ca[a])))
