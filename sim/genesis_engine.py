"""Genesis (`genesis-world`) as an engine: the MuJoCo model loaded into one Genesis scene.

The scene is built once with num_envs parallel environments (Genesis compiles its
kernels at build: about 8 s on this CPU once cached, 95 s the first time) and is never
rebuilt: resets write joint positions and velocities. Genesis runs on its CPU backend
here and on CUDA when PyTorch sees a GPU.

What maps to Genesis: free, hinge and slide joints (same qpos/qvel layout as MuJoCo:
free-joint angular velocity in the body frame, as Genesis uses too); joint actuators
with a fixed gain and an affine or no bias (position servos, motors) become Genesis'
own per-dof actuators (force = gain ctrl + bias0 + bias1 q + bias2 qdot, clamped to the
force range); site actuators (rotor thrust) are computed in numpy by MuJoCo's actuator
model (`simreal.sim.actuation`) and applied, with `xfrc_applied`, as external wrenches
at the centre of mass in the world frame. `from_xml` raises ValueError naming anything
else (tendons, equality constraints, actuator dynamics on joints, ...).

State arrays are numpy arrays owned by the engine; writes through them (a task nudging
qvel) are found by comparing with what was last read and pushed to Genesis before the
next step. Per-simulation model fields (SUPPORTED_FIELDS) are numpy arrays pushed at
`commit_model`; friction is per body (Genesis scales each geom's friction by a ratio:
the body's first collision geom sets the ratio of all of its geoms, sliding only).

Differences from MuJoCo that the agreement tests bound (tests/sim/test_engine_agreement.py):
Genesis integrates in float32 (PRECISION) with its own contact solver.
"""

from __future__ import annotations

import os
import tempfile

import mujoco
import numpy as np

from simreal.sim.actuation import SUPPORTED_DYNAMICS, ActuatorDynamics
from simreal.sim.engine import missing_extra
from simreal.sim.host_state import HostStateEngine

try:
    import genesis as gs
    import torch
except ImportError as err:  # pragma: no cover - depends on the installation
    raise missing_extra("genesis", "genesis-world") from err

DIVERGED_QVEL = 1e4
"""A generalized velocity above this (m/s or rad/s) means the simulation blew up (as in mjbatch)."""

PRECISION = "32"
"""Genesis' floating point precision: "32" as on GPUs ("64" is slower and not the GPU path)."""

SUPPORTED_FIELDS = (
    "body_mass",
    "body_inertia",
    "body_ipos",
    "geom_friction",
    "dof_armature",
    "dof_damping",
    "dof_frictionloss",
    "actuator_gear",
    "actuator_dynprm",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_forcerange",
)
"""Per-simulation model fields. Site-actuator fields act in numpy every step; joint
actuator, body, geom and dof fields reach Genesis at commit_model."""

_JOINTS = {
    int(mujoco.mjtJoint.mjJNT_FREE),
    int(mujoco.mjtJoint.mjJNT_HINGE),
    int(mujoco.mjtJoint.mjJNT_SLIDE),
}
_INTEGRATORS = {
    int(mujoco.mjtIntegrator.mjINT_EULER): "Euler",
    int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST): "implicitfast",
}
_UNSUPPORTED_ELEMENTS = {
    "neq": "equality constraints",
    "ntendon": "tendons",
    "nflex": "flexes",
    "nhfield": "height fields",
}


def _init_genesis() -> None:
    """Genesis is initialized once per process: CUDA when PyTorch sees a GPU, else CPU."""
    if not gs._initialized:
        backend = gs.gpu if torch.cuda.is_available() else gs.cpu
        gs.init(backend=backend, precision=PRECISION, logging_level="warning")


class GenesisEngine(HostStateEngine):
    """N environments of one MuJoCo model in one Genesis scene."""

    engine_name = "genesis"
    supported_fields = SUPPORTED_FIELDS

    def __init__(self, model: mujoco.MjModel, mjcf: str, num_envs: int, num_threads: int = 0):
        """num_threads is accepted for the common signature; Genesis schedules its own kernels."""
        check_supported(model)
        _init_genesis()
        self.model = model
        self.num_envs = num_envs
        self.num_threads = 1
        self.physics_dt = float(model.opt.timestep)
        n = num_envs
        self.qpos = np.tile(model.qpos0, (n, 1))
        self.qvel = np.zeros((n, model.nv))
        self.ctrl = np.zeros((n, model.nu))
        self.act = np.zeros((n, model.na))
        self.xfrc_applied = np.zeros((n, model.nbody, 6))
        self._fields = {
            name: np.repeat(getattr(model, name)[None], n, 0) for name in SUPPORTED_FIELDS
        }
        self._touched: set[str] = set()
        self._restarted = np.zeros(n, dtype=bool)
        self._build_scene(model, mjcf)
        self._map_model(model)
        self._prepare_actuators(model)
        self._seen_qpos = np.zeros_like(self.qpos)
        self._seen_qvel = np.zeros_like(self.qvel)
        self._write_state(np.arange(n))

    @classmethod
    def from_xml(cls, mjcf: str, num_envs: int, num_threads: int = 0) -> GenesisEngine:
        return cls(mujoco.MjModel.from_xml_string(mjcf), mjcf, num_envs, num_threads)

    def _build_scene(self, model: mujoco.MjModel, mjcf: str) -> None:
        opt = model.opt
        self.scene = gs.Scene(
            sim_options=gs.options.SimOptions(dt=self.physics_dt, gravity=tuple(opt.gravity)),
            rigid_options=gs.options.RigidOptions(
                integrator=getattr(gs.integrator, _INTEGRATORS[int(opt.integrator)]),
                iterations=int(opt.iterations),
                batch_links_info=True,
                batch_dofs_info=True,
                enable_mujoco_compatibility=True,
            ),
            show_viewer=False,
        )
        # Genesis reads MJCF from a file; assets are referenced relative to it, so models
        # with meshes must be given as files (the robots here are built from primitives).
        fd, path = tempfile.mkstemp(suffix=".xml", prefix="simreal-genesis-")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(mjcf)
            # align=False keeps MuJoCo's body frames (so qpos is the body's pose, as in
            # MuJoCo) and lets commit_model write centres of mass and inertias.
            self.entity = self.scene.add_entity(gs.morphs.MJCF(file=path, align=False))
            self.scene.build(n_envs=self.num_envs)
        finally:
            os.unlink(path)
        self.solver = self.scene.sim.rigid_solver

    def _map_model(self, model: mujoco.MjModel) -> None:
        """MuJoCo body -> Genesis link, joint actuator -> dof; refuse any other layout."""
        ent = self.entity
        if (ent.n_qs, ent.n_dofs) != (model.nq, model.nv):
            raise ValueError(
                f"genesis engine: Genesis built nq={ent.n_qs}, nv={ent.n_dofs} "
                f"from a model with nq={model.nq}, nv={model.nv}"
            )
        links = {link.name: link.idx for link in ent.links}
        names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(model.nbody)]
        missing = [name for name in names[1:] if name not in links]
        if missing:
            raise ValueError(f"genesis engine: bodies without a Genesis link: {missing}")
        self._link_of_body = np.array([links.get(name, -1) for name in names])
        self._bodies = np.arange(1, model.nbody)
        self._links = self._link_of_body[1:]
        geom_links = np.array([g.link.idx for g in ent.geoms])
        body_of_link = {int(link): b for b, link in enumerate(self._link_of_body)}
        self._geom_rows = np.array([body_of_link[int(link)] for link in geom_links])
        self._geom_ids = np.array([g.idx for g in ent.geoms])

    def _prepare_actuators(self, model: mujoco.MjModel) -> None:
        trn = model.actuator_trntype
        self._joint_act = np.flatnonzero(trn == mujoco.mjtTrn.mjTRN_JOINT)
        self._joint_dof = model.jnt_dofadr[model.actuator_trnid[self._joint_act, 0]]
        servo = model.actuator_biastype[self._joint_act] == mujoco.mjtBias.mjBIAS_AFFINE
        self._servo_act, self._servo_dof = self._joint_act[servo], self._joint_dof[servo]
        self._motor_act, self._motor_dof = self._joint_act[~servo], self._joint_dof[~servo]
        self._site_act = np.flatnonzero(trn == mujoco.mjtTrn.mjTRN_SITE)
        site = model.actuator_trnid[self._site_act, 0]
        self._site_body = model.site_bodyid[site]
        self._site_rot = (
            np.stack([_matrix(q) for q in model.site_quat[site]]) if site.size else None
        )
        self._site_pos = model.site_pos[site]
        self._dynamics = ActuatorDynamics.of(model)

    def step(self, substeps: int = 1) -> None:
        self._write_changed_state()
        self._control_joints()
        pushed = bool(np.any(self.xfrc_applied[:, 1:] != 0.0))
        for k in range(substeps):
            if self._site_act.size or pushed:
                self._apply_wrenches()
            self._step_once()
            if self._site_act.size or k == substeps - 1:
                self._read_state()

    def _step_once(self) -> None:
        """One scene step. Genesis stops the whole batch with an exception when an
        environment's forces turn NaN (it checks every few substeps); those environments
        are restarted from the model's initial state and flagged, the others go on."""
        try:
            self.scene.step()
        except gs.GenesisException as err:
            failed = self.solver.get_error_envs_mask().cpu().numpy().astype(bool)
            message = str(err).lower()
            if not failed.any() or not ("nan" in message or "finite" in message):
                raise
            self._read_state()
            self.qpos[failed] = np.nan
            self._write_state(np.flatnonzero(failed))

    def model_field(self, name: str) -> np.ndarray:
        field = super().model_field(name)
        self._touched.add(name)
        return field

    def commit_model(self, ids: np.ndarray | None = None) -> None:
        """Push the fields handed out by model_field, rows `ids` (all if None), to Genesis."""
        rows = np.arange(self.num_envs) if ids is None else np.arange(self.num_envs)[ids]
        if not rows.size:
            return
        f, s, envs = self._fields, self.solver, torch.as_tensor(rows)
        touched = self._touched
        if "body_mass" in touched:
            s.set_links_mass(_t(f["body_mass"][rows][:, self._bodies]), self._links, envs)
        if "body_inertia" in touched:
            diag = f["body_inertia"][rows][:, self._bodies]
            s.set_links_inertia(_t(diag[..., None] * np.eye(3)), self._links, envs)
        if "body_ipos" in touched:
            s.set_links_COM(_t(f["body_ipos"][rows][:, self._bodies]), self._links, envs)
        if "geom_friction" in touched:
            s.set_geoms_friction_ratio(_t(self._friction_ratio(rows)), self._geom_ids, envs)
        for name, setter in (
            ("dof_armature", s.set_dofs_armature),
            ("dof_damping", s.set_dofs_damping),
            ("dof_frictionloss", s.set_dofs_frictionloss),
        ):
            if name in touched:
                setter(_t(f[name][rows]), np.arange(self.model.nv), envs)
        if (
            touched & {"actuator_gainprm", "actuator_biasprm", "actuator_gear"}
            and self._joint_act.size
        ):
            a, dofs = self._joint_act, self._joint_dof
            gear = f["actuator_gear"][rows][:, a, 0]
            s.set_dofs_act_gain(_t(gear * f["actuator_gainprm"][rows][:, a, 0]), dofs, envs)
            bias = gear[..., None] * f["actuator_biasprm"][rows][:, a, :3]
            s.set_dofs_act_bias(_t(bias[..., 0]), _t(bias[..., 1]), _t(bias[..., 2]), dofs, envs)
        if "actuator_forcerange" in touched and self._servo_act.size:
            a = self._servo_act
            limited = self.model.actuator_forcelimited[a].astype(bool)
            rng = f["actuator_forcerange"][rows][:, a]
            lower = np.where(limited, rng[..., 0], -np.inf)
            upper = np.where(limited, rng[..., 1], np.inf)
            s.set_dofs_force_range(_t(lower), _t(upper), self._servo_dof, envs)

    def unstable(self) -> np.ndarray:
        """Non-finite or diverged state, or a non-finite state written since the last call
        (that environment was restarted from the model's initial state, as MuJoCo does)."""
        finite = np.isfinite(self.qpos).all(axis=1) & np.isfinite(self.qvel).all(axis=1)
        restarted, self._restarted[:] = self._restarted.copy(), False
        with np.errstate(invalid="ignore"):
            return restarted | ~finite | (np.abs(self.qvel).max(axis=1) > DIVERGED_QVEL)

    def _friction_ratio(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows), n_geoms) sliding-friction ratio of every Genesis geom to nominal."""
        nominal = np.ones(self.model.nbody)
        chosen = np.zeros((rows.size, self.model.nbody))
        friction = self._fields["geom_friction"][rows][..., 0]
        for b in range(self.model.nbody):
            geoms = np.flatnonzero(
                (self.model.geom_bodyid == b)
                & ((self.model.geom_contype | self.model.geom_conaffinity) != 0)
            )
            if geoms.size and self.model.geom_friction[geoms[0], 0] > 0:
                nominal[b] = self.model.geom_friction[geoms[0], 0]
                chosen[:, b] = friction[:, geoms[0]]
            else:
                chosen[:, b] = nominal[b]
        return (chosen / nominal)[:, self._geom_rows]

    def _control_joints(self) -> None:
        """Joint actuators: servos track ctrl in Genesis; motors get gain * ctrl as force."""
        ctrl = self.ctrl
        if self._dynamics.ctrl_range is not None:
            ctrl = np.clip(ctrl, *self._dynamics.ctrl_range)
        if self._servo_act.size:
            self.entity.control_dofs_position(_t(ctrl[:, self._servo_act]), self._servo_dof)
        if self._motor_act.size:
            a = self._motor_act
            f = self._fields
            force = f["actuator_gear"][:, a, 0] * f["actuator_gainprm"][:, a, 0] * ctrl[:, a]
            if self._dynamics.force_range is not None:
                low, high = self._dynamics.force_range
                force = np.clip(force, low[a], high[a])
            self.entity.control_dofs_force(_t(force), self._motor_dof)

    def _apply_wrenches(self) -> None:
        """External forces of this substep: xfrc_applied plus site actuators, at the CoM."""
        wrench = self.xfrc_applied.copy()
        if self._site_act.size:
            wrench += self._site_wrenches()
        self.solver.apply_links_external_wrench(
            force=_t(wrench[:, 1:, :3]),
            torque=_t(wrench[:, 1:, 3:]),
            links_idx=self._links,
            ref=gs.link_ref_frame.link_COM,
        )

    def _site_wrenches(self) -> np.ndarray:
        """(N, nbody, 6) world-frame force and torque about each body's CoM from site
        actuators; advances their activations like mj_step."""
        f, a = self._fields, self._site_act
        forces = self._dynamics.forces(
            self.ctrl, self.act, f["actuator_dynprm"], f["actuator_gainprm"], self.physics_dt
        )[:, a]
        gear = f["actuator_gear"][:, a]
        force_b = np.einsum("uij,nuj->nui", self._site_rot, gear[..., :3]) * forces[..., None]
        torque_b = np.einsum("uij,nuj->nui", self._site_rot, gear[..., 3:]) * forces[..., None]
        lever = self._site_pos[None] - f["body_ipos"][:, self._site_body]
        torque_b = torque_b + np.cross(lever, force_b)
        out = np.zeros((self.num_envs, self.model.nbody, 6))
        for k, b in enumerate(self._site_body):
            rot = _body_rotation(self.qpos, self.model, b)
            out[:, b, :3] += np.einsum("nij,nj->ni", rot, force_b[:, k])
            out[:, b, 3:] += np.einsum("nij,nj->ni", rot, torque_b[:, k])
        return out

    def _read_state(self) -> None:
        self.qpos[:] = self.entity.get_qpos().cpu().numpy()
        self.qvel[:] = self.entity.get_dofs_velocity().cpu().numpy()
        self._seen_qpos[:] = self.qpos
        self._seen_qvel[:] = self.qvel

    def _write_changed_state(self) -> None:
        changed = np.flatnonzero(
            np.any(self.qpos != self._seen_qpos, axis=1)
            | np.any(self.qvel != self._seen_qvel, axis=1)
        )
        if changed.size:
            self._write_state(changed)

    def _write_state(self, rows: np.ndarray) -> None:
        bad = ~(np.isfinite(self.qpos[rows]).all(axis=1) & np.isfinite(self.qvel[rows]).all(axis=1))
        if bad.any():  # Genesis would carry the NaN on: restart those rows instead
            self._restarted[rows[bad]] = True
            self.qpos[rows[bad]] = self.model.qpos0
            self.qvel[rows[bad]] = 0.0
            self.act[rows[bad]] = 0.0
        envs = torch.as_tensor(rows)
        qpos, qvel = self.qpos[rows], self.qvel[rows]
        self.entity.set_qpos(_t(qpos), envs_idx=envs, zero_velocity=False)
        self.entity.set_dofs_velocity(_t(qvel), envs_idx=envs)
        self._seen_qpos[rows] = self.qpos[rows]
        self._seen_qvel[rows] = self.qvel[rows]


def check_supported(model: mujoco.MjModel) -> None:
    """Raise ValueError listing every part of `model` the genesis engine cannot simulate."""
    problems = [
        f"{what} ({getattr(model, count)})"
        for count, what in _UNSUPPORTED_ELEMENTS.items()
        if getattr(model, count)
    ]
    if int(model.opt.integrator) not in _INTEGRATORS:
        problems.append(f"integrator {mujoco.mjtIntegrator(model.opt.integrator).name}")
    for j in np.flatnonzero(~np.isin(model.jnt_type, list(_JOINTS))):
        problems.append(f"joint {j} of type {mujoco.mjtJoint(model.jnt_type[j]).name}")
    for u in range(model.nu):
        trn, dyn = int(model.actuator_trntype[u]), int(model.actuator_dyntype[u])
        gain, bias = int(model.actuator_gaintype[u]), int(model.actuator_biastype[u])
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, u) or str(u)
        if gain != mujoco.mjtGain.mjGAIN_FIXED:
            problems.append(f"actuator {name}: gain {mujoco.mjtGain(gain).name}")
        if trn == mujoco.mjtTrn.mjTRN_JOINT:
            if dyn != mujoco.mjtDyn.mjDYN_NONE:
                problems.append(f"actuator {name}: dynamics on a joint actuator")
            if bias not in (mujoco.mjtBias.mjBIAS_NONE, mujoco.mjtBias.mjBIAS_AFFINE):
                problems.append(f"actuator {name}: bias {mujoco.mjtBias(bias).name}")
            if model.jnt_type[model.actuator_trnid[u, 0]] == mujoco.mjtJoint.mjJNT_FREE:
                problems.append(f"actuator {name}: on a free joint")
        elif trn == mujoco.mjtTrn.mjTRN_SITE:
            if dyn not in SUPPORTED_DYNAMICS or bias != mujoco.mjtBias.mjBIAS_NONE:
                problems.append(f"actuator {name}: site actuator with dynamics or bias")
            jnt = model.body_jntadr[model.site_bodyid[model.actuator_trnid[u, 0]]]
            if jnt < 0 or model.jnt_type[jnt] != mujoco.mjtJoint.mjJNT_FREE:
                problems.append(f"actuator {name}: site on a body without a free joint")
        else:
            problems.append(f"actuator {name}: transmission {mujoco.mjtTrn(trn).name}")
    if problems:
        raise ValueError("the genesis engine cannot simulate: " + "; ".join(problems))


def _t(values: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(values), dtype=gs.tc_float)


def _matrix(quat: np.ndarray) -> np.ndarray:
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(quat, dtype=float))
    return out.reshape(3, 3)


def _body_rotation(qpos: np.ndarray, model: mujoco.MjModel, body: int) -> np.ndarray:
    """(N, 3, 3) world-from-body rotation of a body carried by a free joint."""
    jnt = model.body_jntadr[body]
    q = qpos[:, model.jnt_qposadr[jnt] + 3 : model.jnt_qposadr[jnt] + 7]
    w, x, y, z = q.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=1,
    )
