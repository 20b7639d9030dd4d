"""`dex-track` environment: the Allegro-like hand reproduces hand-object references.

Action space (after DexTrack): a residual on the reference. The servo targets of a
control step are the reference's next frame (wrist joint targets realizing its wrist
pose, its finger angles), plus a grip preload on the flexing finger joints in proportion
to how closed the reference hand is (`task.grip_preload_rad`), plus scaled actions. Why: the reference already says where the
hand should be, so a zero action replays it and exploration starts near a useful
motion; the policy learns only what kinematics cannot give, above all how hard to
squeeze (references touch the object without force) and how to correct the wrist when
the object lags or slips. The preload exists because a squeeze needs several fingers
to push at once, which independent exploration noise per joint almost never does
(docs/findings.md, dex-track); with it, a zero action already grips and the policy
refines it. The residual range (4 cm, 0.2 rad on the wrist, 0.25 rad on
the fingers) bounds how far it can leave the reference.

One simulation holds one object whose type and size come from its reference and whose
mass and friction are randomized per simulation (model fields). Episodes are one
reference each; training ends an episode when the object strays beyond tolerance.
Errors are accumulated every control step against the reference frame reached.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import ClassVar

import numpy as np

from simreal.robots.allegro import FINGERTIP_SITES, JOINT_NAMES, joint_limits, servo
from simreal.sim.engine import sensor_view
from simreal.tasks.curriculum import FallRateCurriculum
from simreal.tasks.dex_track import objects as ob
from simreal.tasks.dex_track import rewards
from simreal.tasks.dex_track.config import DexTrackConfig
from simreal.tasks.dex_track.dataset import (
    FLEX_JOINTS,
    StackedReferences,
    generate_split,
    load_split,
    stack,
)
from simreal.tasks.dex_track.generator import MOTIONS
from simreal.tasks.dex_track.metrics import tracking_metrics
from simreal.tasks.dex_track.observations import (
    PRIVILEGED_OBSERVATION,
    PRIVILEGED_TERMS,
    DexReading,
    HandObjectState,
    ReferenceWindow,
    policy_terms,
)
from simreal.tasks.dex_track.scene import build_scene
from simreal.tasks.env import TaskEnv
from simreal.tasks.rotations import quat_angle
from simreal.tasks.terms import TerminationTerm, layout, observe

ACTION_GROUPS: dict[str, tuple[int, ...]] = {
    "wrist": tuple(range(6)),
    "fingers": tuple(range(6, 22)),
}
OBJECT_QPOS = slice(22, 29)
OBJECT_QVEL = slice(22, 28)


def load_references(cfg: DexTrackConfig) -> tuple[StackedReferences, list]:
    """The task's references (held-out ones when evaluating), stacked; and the rejected.

    An evaluation whose dataset directory is absent (a run's config names its own
    `runs/...`, absent from a fresh clone) generates the held-out split in-process from
    reference_seed instead: `simreal dex references` writes the same references from the
    same seed and counts."""
    split = "heldout" if cfg.evaluation else "train"
    if cfg.references and cfg.evaluation and not Path(cfg.references).is_dir():
        print(
            f"dex-track: task.references={cfg.references!r} is absent; generating the "
            f"{cfg.heldout_references} held-out references in-process from reference_seed="
            f"{cfg.reference_seed} (as `simreal dex references --seed {cfg.reference_seed} "
            f"--heldout-count {cfg.heldout_references}` writes them)",
            file=sys.stderr,
        )
        cfg = dataclasses.replace(cfg, references="")
    if cfg.references:
        refs, rejected = load_split(
            cfg.references, split, cfg.rate_hz, cfg.episode_frames, cfg.resample
        )
    else:
        count = cfg.heldout_references if cfg.evaluation else cfg.train_references
        refs, rejected = generate_split(
            split,
            count,
            cfg.reference_seed,
            tuple(cfg.heldout_types),
            cfg.rate_hz,
            cfg.episode_frames,
        )
    for r in rejected:
        print(f"dex-track: infeasible reference {r.name} not used: {r.reason}")
    return stack(refs), rejected


def object_strayed(env) -> np.ndarray:
    """(N,) bool, training only: the object is farther than `max_object_pos_error` (m) or
    `max_object_rot_error_deg` from its reference pose."""
    if env.cfg.evaluation:
        return np.zeros(env.num_envs, dtype=bool)
    e = env.errors_now()
    return (e["object_pos"] > env.cfg.max_object_pos_error) | (
        e["object_rot"] > np.deg2rad(env.cfg.max_object_rot_error_deg)
    )


def reference_ended(env) -> np.ndarray:
    """(N,) bool, training only: the reference's last frame was reached. Nothing follows
    it, so it ends the episode for good: a termination, not a time-out to bootstrap from
    (the critic never trains on final-phase states, and bootstrapping from them made its
    values diverge)."""
    if env.cfg.evaluation:
        return np.zeros(env.num_envs, dtype=bool)
    return env.episode_step >= env.max_episode_steps


TERMINATIONS = (
    TerminationTerm("object_strayed", object_strayed),
    TerminationTerm("reference_ended", reference_ended),
)


class DexTrackEnv(TaskEnv):
    robot = "allegro"
    reward_terms = rewards.REWARDS
    termination_terms = TERMINATIONS
    action_groups: ClassVar[dict[str, tuple[int, ...]]] = ACTION_GROUPS
    critic_observation_layout: tuple[tuple[str, int], ...]

    def __init__(
        self,
        cfg: DexTrackConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
    ):
        cfg.validate()
        self.cfg = cfg
        self.decimation = cfg.decimation
        self.max_episode_steps = cfg.episode_frames - 1
        self.policy_terms = policy_terms(cfg.preview_frames)
        self.critic_observation_layout = layout(self.policy_terms) + PRIVILEGED_OBSERVATION
        super().__init__(build_scene(cfg.physics_dt), num_envs, engine, seed, num_threads)
        self._read_model()
        self.refs, self.rejected = load_references(cfg)
        n, t = num_envs, cfg.episode_frames
        self.ref_id = np.zeros(n, dtype=np.int64)
        self.action = np.zeros((n, 22))
        self.last_action = np.zeros((n, 22))
        self.mass = np.ones(n)
        self.friction = np.ones(n)
        self.errors = np.zeros((n, t - 1, 3))
        """Per step: object position error (m), orientation error (deg), finger error (rad)."""
        self.curriculum = FallRateCurriculum(
            start=0,
            maximum=len(MOTIONS) - 1,
            step=1,
            raise_below=1.0 - cfg.curriculum_completion,
            lower_above=1.1,
        )
        if not cfg.curriculum:
            self.curriculum.level = len(MOTIONS) - 1
        self._slots = ob.slot_geometry(
            [ob.OBJECT_TYPES[k] for k in self.refs.object_type], self.refs.object_dims
        )
        self._rbound, self._aabb = ob.bounding(self._slots)
        self._state: HandObjectState | None = None
        self._errors: dict[str, np.ndarray] | None = None

    def _read_model(self) -> None:
        lower, upper = joint_limits()
        self.ctrl_lower, self.ctrl_upper = np.array(lower), np.array(upper)
        self.action_scale = np.array(
            [self.cfg.wrist_pos_action_scale] * 3
            + [self.cfg.wrist_rot_action_scale] * 3
            + [self.cfg.finger_action_scale] * 16
        )
        self.preload = np.zeros(22)
        long, thumb = self.cfg.grip_preload_rad
        self.preload[6 + FLEX_JOINTS] = long
        self.preload[6 + np.array([14, 15])] = thumb
        self.kp = np.array([servo(n).kp for n in JOINT_NAMES])
        self.kd = np.array([servo(n).kd for n in JOINT_NAMES])
        e = self.engine
        self.tip_touch = [sensor_view(e, f"{s}_touch", "dex-track") for s in FINGERTIP_SITES]
        self.tip_pos = [sensor_view(e, f"{s}_pos", "dex-track") for s in FINGERTIP_SITES]
        model = e.model
        self.slot_ids = np.array([model.geom(name).id for name, _ in ob.SLOTS])
        self.object_body = model.body("object").id
        self.fields = {
            name: e.model_field(name)
            for name in (
                "geom_size",
                "geom_pos",
                "geom_rbound",
                "geom_aabb",
                "geom_contype",
                "geom_conaffinity",
                "geom_friction",
                "geom_rgba",
                "body_mass",
                "body_ipos",
                "body_inertia",
            )
        }

    # -- state -------------------------------------------------------------------------
    @property
    def state(self) -> HandObjectState:
        if self._state is None:
            q, v = self.engine.qpos, self.engine.qvel
            self._state = HandObjectState(
                joint_pos=q[:, :22],
                joint_vel=v[:, :22],
                object_pos=q[:, 22:25],
                object_quat=q[:, 25:29],
                object_lin_vel=v[:, 22:25],
                object_ang_vel=v[:, 25:28],
                fingertip_pos=np.stack(self.tip_pos, axis=1),
            )
        return self._state

    def frame(self) -> np.ndarray:
        """(N,) reference frame the simulations are at now."""
        return np.minimum(self.episode_step, self.cfg.episode_frames - 1)

    def ref_joints(self, frames: np.ndarray) -> np.ndarray:
        """(N, ...) wrist joint targets and finger angles of each simulation's reference at
        `frames` (N,) or (N, K), clipped to the last frame."""
        f = np.minimum(frames, self.cfg.episode_frames - 1)
        idx = self.ref_id.reshape((-1,) + (1,) * (f.ndim - 1))
        return np.concatenate(
            [self.refs.wrist_joints[idx, f], self.refs.finger_pos[idx, f]], axis=-1
        )

    def window(self) -> ReferenceWindow:
        f = self.frame()[:, None] + 1 + np.arange(self.cfg.preview_frames)[None, :]
        f = np.minimum(f, self.cfg.episode_frames - 1)
        idx = self.ref_id[:, None]
        return ReferenceWindow(
            self.ref_joints(f), self.refs.object_pos[idx, f], self.refs.object_quat[idx, f]
        )

    def tracking_errors(self) -> dict[str, np.ndarray]:
        """Errors against the reference frame reached now, all (N,) except tips (N, 4)."""
        s, f, r = self.state, self.frame(), self.ref_id
        joints = self.ref_joints(f)
        obj_pos, obj_quat = self.refs.object_pos[r, f], self.refs.object_quat[r, f]
        tips = np.linalg.norm(s.fingertip_pos - s.object_pos[:, None], axis=2)
        ref_tips = np.linalg.norm(self.refs.tip_pos[r, f] - obj_pos[:, None], axis=2)
        return {
            "object_pos": np.linalg.norm(s.object_pos - obj_pos, axis=1),
            "object_rot": quat_angle(s.object_quat, obj_quat),
            "wrist_pos": np.linalg.norm(s.joint_pos[:, :3] - joints[:, :3], axis=1),
            "wrist_rot": np.linalg.norm(s.joint_pos[:, 3:6] - joints[:, 3:6], axis=1),
            "fingers": np.abs(s.joint_pos[:, 6:] - joints[:, 6:]).mean(axis=1),
            "tips": tips,
            "ref_tips": ref_tips,
        }

    # -- task interface ------------------------------------------------------------------
    def errors_now(self) -> dict[str, np.ndarray]:
        if self._errors is None:
            self._errors = self.tracking_errors()
        return self._errors

    def apply_action(self, action: np.ndarray) -> None:
        self.last_action[:] = self.action
        self.action[:] = action
        f = np.minimum(self.frame() + 1, self.cfg.episode_frames - 1)
        preload = self.refs.grip[self.ref_id, f][:, None] * self.preload
        target = self.ref_joints(f) + preload + self.action_scale * action
        self.engine.ctrl[:] = np.clip(target, self.ctrl_lower, self.ctrl_upper)

    def simulate(self) -> None:
        self._state = None
        self._errors = None
        self.step_physics(self.decimation)

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        self._state = None
        self._errors = None
        s = self.state
        phase = self.frame() / (self.cfg.episode_frames - 1)
        dims = self.refs.object_dims[self.ref_id]
        obs = observe(self.policy_terms, DexReading(s, self.window(), self.action, phase, dims))
        return obs, np.concatenate([obs, observe(PRIVILEGED_TERMS, self)], axis=1)

    def after_step(self) -> None:
        """Record this step's object and finger errors for the episode's metrics."""
        e = self.errors_now()
        step = np.clip(self.episode_step - 1, 0, self.max_episode_steps - 1)
        rows = np.arange(self.num_envs)
        self.errors[rows, step, 0] = e["object_pos"]
        self.errors[rows, step, 1] = np.rad2deg(e["object_rot"])
        self.errors[rows, step, 2] = e["fingers"]

    def curriculum_state(self) -> dict[str, float]:
        """The unlocked motion (index into MOTIONS), saved in checkpoints and logged."""
        return {} if self.cfg.evaluation else {"motion_level": float(self.curriculum.level)}

    def restore_curriculum(self, state: dict[str, float]) -> None:
        if "motion_level" in state and self.cfg.curriculum:
            self.curriculum.restore(state["motion_level"])

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        steps = np.maximum(self.episode_step[ids], 1)
        completed = self.episode_step[ids] >= self.max_episode_steps
        mask = np.arange(self.max_episode_steps)[None, :] < steps[:, None]
        err = self.errors[ids]
        # Frames an episode never reached (it strayed first) count at their last error.
        last = err[np.arange(ids.size), steps - 1]
        err = np.where(mask[..., None], err, last[:, None, :])
        out = tracking_metrics(err[..., 0], err[..., 1], err[..., 2])
        out["success_rate"] = out["success_rate"] * completed
        if not self.cfg.evaluation:
            if self.cfg.curriculum:
                self.curriculum.record(~completed, window=self.num_envs)
            out["curriculum_level"] = np.full(ids.size, float(self.curriculum.level))
        return out

    def summarize_episodes(self, ended: dict) -> dict:
        """Counts, and in evaluation the success rate per motion and for held-out versus
        trained object types (evaluation episodes all end together, in simulation order,
        so episode i tracked reference i)."""
        out = {
            "references_total": self.refs.count,
            "references_evaluated": min(self.num_envs, self.refs.count),
            "references_rejected": len(self.rejected),
        }
        success = np.asarray(ended.get("success_rate", []))
        if not self.cfg.evaluation or success.size != self.num_envs:
            return out
        ref = self.ref_id[: success.size]
        held = np.isin(
            self.refs.object_type[ref], [ob.OBJECT_TYPES.index(k) for k in self.cfg.heldout_types]
        )
        groups = {f"success_rate_{m}": self.refs.motion[ref] == i for i, m in enumerate(MOTIONS)}
        groups["success_rate_heldout_types"] = held
        groups["success_rate_trained_types"] = ~held
        out.update({k: float(success[g].mean()) for k, g in groups.items() if g.any()})
        return out

    def reset_state(self, ids: np.ndarray) -> None:
        c, n = self.cfg, ids.size
        if c.evaluation:
            self.ref_id[ids] = ids % self.refs.count
            rng = np.random.default_rng([c.reference_seed, 2])
            phys = rng.uniform(0, 1, (self.refs.count, 2))[self.ref_id[ids]]
        else:
            allowed = np.flatnonzero(self.refs.motion <= self.curriculum.level)
            if allowed.size == 0:
                allowed = np.arange(self.refs.count)
            anyone = self.rng.random(n) < c.curriculum_mix
            self.ref_id[ids] = np.where(
                anyone, self.rng.integers(0, self.refs.count, n), self.rng.choice(allowed, n)
            )
            phys = self.rng.uniform(0, 1, (n, 2))
        self.mass[ids] = c.object_mass[0] + phys[:, 0] * (c.object_mass[1] - c.object_mass[0])
        self.friction[ids] = c.object_friction[0] + phys[:, 1] * (
            c.object_friction[1] - c.object_friction[0]
        )
        self._write_object(ids)
        r = self.ref_id[ids]
        qpos = np.concatenate(
            [
                self.refs.wrist_joints[r, 0],
                self.refs.finger_pos[r, 0],
                self.refs.object_pos[r, 0],
                self.refs.object_quat[r, 0],
            ],
            axis=1,
        )
        self.engine.reset(ids, qpos, np.zeros((n, self.engine.qvel.shape[1])))
        self.engine.ctrl[ids] = np.clip(qpos[:, :22], self.ctrl_lower, self.ctrl_upper)
        self.action[ids] = 0.0
        self.last_action[ids] = 0.0
        self.errors[ids] = 0.0
        self._state = None
        self._errors = None

    def _write_object(self, ids: np.ndarray) -> None:
        """Object type, size, mass, inertia and friction of each simulation's reference."""
        r, f, slots, body = self.ref_id[ids], self.fields, self.slot_ids, self.object_body
        active = self._slots.active[r]
        grid = np.ix_(ids, slots)
        f["geom_size"][grid] = self._slots.size[r]
        f["geom_pos"][grid] = self._slots.pos[r]
        f["geom_rbound"][grid] = self._rbound[r]
        f["geom_aabb"][grid] = self._aabb[r]
        f["geom_contype"][grid] = np.where(active, ob.OBJECT_CONTYPE, 0)
        f["geom_conaffinity"][grid] = np.where(active, ob.OBJECT_CONAFFINITY, 0)
        f["geom_rgba"][(*grid, 3)] = active.astype(np.float32)
        f["geom_friction"][(*grid, 0)] = self.friction[ids, None]
        sub = ob.SlotGeometry(self._slots.size[r], self._slots.pos[r], active)
        com, inertia = ob.mass_properties(sub, self.mass[ids])
        f["body_mass"][ids, body] = self.mass[ids]
        f["body_ipos"][ids, body] = com
        f["body_inertia"][ids, body] = inertia
        self.engine.commit_model(ids)

    # -- deployment and baselines ----------------------------------------------------------
    def deployment_metadata(self) -> dict:
        return {
            **super().deployment_metadata(),
            "robot": self.robot,
            "joint_names": list(JOINT_NAMES),
            "default_joint_pos": [0.0] * len(JOINT_NAMES),
            "action_scale": self.action_scale.tolist(),
            "action_reference": "residual: servo target = reference next frame + "
            "action_scale * action (wrist joints x, y, z, roll, pitch, yaw; finger angles)",
            "kp": self.kp.tolist(),
            "kd": self.kd.tolist(),
            "reference_rate_hz": self.cfg.rate_hz,
        }

    def baseline_policy(self, name: str):
        """`replay`: zero residual, i.e. the reference replayed open loop."""
        if name != "replay":
            raise ValueError(f"dex-track baselines: replay; got {name!r}")
        return self.zero_action_policy()
