"""Observation terms of `dex-track`, pure functions of the hand, object and reference.

`policy_observation` is the single definition for training, evaluation and deployment.
Positions are in the world frame (the table is fixed); orientations as the first two
columns of their rotation matrices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.tasks.dex_track.frames import rotation_6d
from simreal.tasks.rotations import quat_error_vector

HAND_JOINTS = 22
FINGERTIPS = 4
MAX_JOINT_VEL = 10.0
MAX_OBJECT_VEL = 3.0
"""Velocities are clipped (rad/s or m/s): contact impacts spike them far beyond anything a
policy should react to, and such outliers would swing the observation normalizer."""


def observation_layout(preview_frames: int) -> tuple[tuple[str, int], ...]:
    return (
        ("joint_pos", HAND_JOINTS),
        ("joint_vel", HAND_JOINTS),
        ("object_pos", 3),
        ("object_rot", 6),
        ("object_lin_vel", 3),
        ("object_ang_vel", 3),
        ("fingertip_to_object", 3 * FINGERTIPS),
        ("ref_preview", (HAND_JOINTS + 9) * preview_frames),
        ("ref_joint_error", HAND_JOINTS),
        ("ref_object_pos_error", 3),
        ("ref_object_rot_error", 3),
        ("last_action", HAND_JOINTS),
        ("phase", 1),
        ("object_dims", 4),
    )


PRIVILEGED_OBSERVATION = (
    ("fingertip_touch", FINGERTIPS),
    ("object_mass", 1),
    ("object_friction", 1),
)


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


def policy_observation(
    s: HandObjectState,
    ref: ReferenceWindow,
    last_action: np.ndarray,
    phase: np.ndarray,
    object_dims: np.ndarray,
) -> np.ndarray:
    """(N, 219 + 31 (K - 1)) float32 for a preview of K frames; `object_dims` (N, 4) are
    the reference's object dimensions (objects.py), known where the object is known."""
    n, k = ref.joint_pos.shape[:2]
    preview = np.concatenate(
        [
            ref.joint_pos,
            ref.object_pos,
            rotation_6d(ref.object_quat.reshape(n * k, 4)).reshape(n, k, 6),
        ],
        axis=2,
    ).reshape(n, -1)
    return np.concatenate(
        [
            s.joint_pos,
            np.clip(s.joint_vel, -MAX_JOINT_VEL, MAX_JOINT_VEL),
            s.object_pos,
            rotation_6d(s.object_quat),
            np.clip(s.object_lin_vel, -MAX_OBJECT_VEL, MAX_OBJECT_VEL),
            np.clip(s.object_ang_vel, -MAX_OBJECT_VEL, MAX_OBJECT_VEL),
            (s.fingertip_pos - s.object_pos[:, None, :]).reshape(n, -1),
            preview,
            ref.joint_pos[:, 0] - s.joint_pos,
            ref.object_pos[:, 0] - s.object_pos,
            quat_error_vector(ref.object_quat[:, 0], s.object_quat),
            last_action,
            phase[:, None],
            object_dims,
        ],
        axis=1,
        dtype=np.float32,
    )
