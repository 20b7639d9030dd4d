"""Observation terms of `dex-track`, pure functions of the hand, object and reference.

`policy_terms` is the single definition for training, evaluation and deployment.
Positions are in the world frame (the table is fixed); orientations as the first two
columns of their rotation matrices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.dex_track.frames import rotation_6d
from simreal.tasks.rotations import quat_error_vector
from simreal.tasks.terms import ObservationTerm, layout

HAND_JOINTS = 22
FINGERTIPS = 4
MAX_JOINT_VEL = 10.0
MAX_OBJECT_VEL = 3.0
"""Velocities are clipped (rad/s or m/s): contact impacts spike them far beyond anything a
policy should react to, and such outliers would swing the observation normalizer."""


@dataclass
class HandObjectState:
    """Arrays lead with num_envs."""

    joint_pos: np.ndarray
    """(N, 22) wrist (6) then fingers (16)."""
    joint_vel: np.ndarray
    object_pos: np.ndarray
    object_quat: np.ndarray
    object_lin_vel: np.ndarray
    object_ang_vel: np.ndarray
    fingertip_pos: np.ndarray
    """(N, 4, 3) world."""


@dataclass
class ReferenceWindow:
    """The reference's next frame and its preview, arrays lead with num_envs."""

    joint_pos: np.ndarray
    """(N, K, 22) wrist joint targets and finger angles of the next K frames."""
    object_pos: np.ndarray
    """(N, K, 3)."""
    object_quat: np.ndarray
    """(N, K, 4)."""


@dataclass
class DexReading:
    """What the observation is computed from: hand and object, the reference window, the
    previous action (N, 22), the episode phase (N,) in [0, 1] and the reference object's
    dimensions (N, 4) (objects.py), known where the object is known."""

    state: HandObjectState
    ref: ReferenceWindow
    last_action: np.ndarray
    phase: np.ndarray
    object_dims: np.ndarray


def joint_pos(r: DexReading) -> np.ndarray:
    return r.state.joint_pos


def joint_vel(r: DexReading) -> np.ndarray:
    return np.clip(r.state.joint_vel, -MAX_JOINT_VEL, MAX_JOINT_VEL)


def object_pos(r: DexReading) -> np.ndarray:
    return r.state.object_pos


def object_rot(r: DexReading) -> np.ndarray:
    return rotation_6d(r.state.object_quat)


def object_lin_vel(r: DexReading) -> np.ndarray:
    return np.clip(r.state.object_lin_vel, -MAX_OBJECT_VEL, MAX_OBJECT_VEL)


def object_ang_vel(r: DexReading) -> np.ndarray:
    return np.clip(r.state.object_ang_vel, -MAX_OBJECT_VEL, MAX_OBJECT_VEL)


def fingertip_to_object(r: DexReading) -> np.ndarray:
    s = r.state
    return (s.fingertip_pos - s.object_pos[:, None, :]).reshape(s.object_pos.shape[0], -1)


def ref_preview(r: DexReading) -> np.ndarray:
    """The next K frames' joint targets, object positions and orientations (6D)."""
    ref = r.ref
    n, k = ref.joint_pos.shape[:2]
    return np.concatenate(
        [
            ref.joint_pos,
            ref.object_pos,
            rotation_6d(ref.object_quat.reshape(n * k, 4)).reshape(n, k, 6),
        ],
        axis=2,
    ).reshape(n, -1)


def ref_joint_error(r: DexReading) -> np.ndarray:
    return r.ref.joint_pos[:, 0] - r.state.joint_pos


def ref_object_pos_error(r: DexReading) -> np.ndarray:
    return r.ref.object_pos[:, 0] - r.state.object_pos


def ref_object_rot_error(r: DexReading) -> np.ndarray:
    return quat_error_vector(r.ref.object_quat[:, 0], r.state.object_quat)


def last_action(r: DexReading) -> np.ndarray:
    return r.last_action


def phase(r: DexReading) -> np.ndarray:
    return r.phase[:, None]


def object_dims(r: DexReading) -> np.ndarray:
    return r.object_dims


def policy_terms(preview_frames: int) -> tuple[ObservationTerm, ...]:
    """219 + 31 (K - 1) values for a preview of K frames."""
    return (
        ObservationTerm("joint_pos", HAND_JOINTS, joint_pos),
        ObservationTerm("joint_vel", HAND_JOINTS, joint_vel),
        ObservationTerm("object_pos", 3, object_pos),
        ObservationTerm("object_rot", 6, object_rot),
        ObservationTerm("object_lin_vel", 3, object_lin_vel),
        ObservationTerm("object_ang_vel", 3, object_ang_vel),
        ObservationTerm("fingertip_to_object", 3 * FINGERTIPS, fingertip_to_object),
        ObservationTerm("ref_preview", (HAND_JOINTS + 9) * preview_frames, ref_preview),
        ObservationTerm("ref_joint_error", HAND_JOINTS, ref_joint_error),
        ObservationTerm("ref_object_pos_error", 3, ref_object_pos_error),
        ObservationTerm("ref_object_rot_error", 3, ref_object_rot_error),
        ObservationTerm("last_action", HAND_JOINTS, last_action),
        ObservationTerm("phase", 1, phase),
        ObservationTerm("object_dims", 4, object_dims),
    )


def observation_layout(preview_frames: int) -> tuple[tuple[str, int], ...]:
    return layout(policy_terms(preview_frames))


PRIVILEGED_TERMS: tuple[ObservationTerm, ...] = (
    ObservationTerm(
        "fingertip_touch", FINGERTIPS, lambda env: np.log1p(np.concatenate(env.tip_touch, axis=1))
    ),
    ObservationTerm("object_mass", 1, lambda env: env.mass[:, None]),
    ObservationTerm("object_friction", 1, lambda env: env.friction[:, None]),
)
"""Critic-only, read from the simulation (a DexTrackEnv): fingertip contact force
(log1p), the object's randomized mass and friction."""
PRIVILEGED_OBSERVATION = layout(PRIVILEGED_TERMS)
