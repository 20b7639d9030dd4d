"""What the G1 measures and where its links are (`G1Sensing`, a part of `G1Env`): joint
state, the IMU and encoders as the robot reads them, the heading frame, heights over the
ground, the soles' contacts and the torso's lean, all read from the engine's state."""

from __future__ import annotations

import numpy as np

from simreal.robots.g1 import FEET, SOLE
from simreal.robots.g1.mjcf import SELF_CONTACT_SENSOR
from simreal.sim.engine import sensor_view
from simreal.tasks.g1.fat2 import fat2_target_tilt, torso_lean
from simreal.tasks.g1.kinematics import LinkChains
from simreal.tasks.g1.observations import G1State
from simreal.tasks.rotations import quat_to_matrix

CONTACT_HEIGHT_M = 0.02
"""A sole lower than this above the ground is in contact."""
ROBOT_QPOS = slice(0, 7 + 29)
ROBOT_QVEL = slice(0, 6 + 29)
"""The robot's free joint and 29 joints lead qpos and qvel; a scene's other bodies follow."""
_SOLE_BOTTOM = np.array([SOLE.center[0], SOLE.center[1], SOLE.center[2] - SOLE.half_size[2]])
_TORSO = LinkChains(["torso_link"])
_FEET = LinkChains(list(FEET))


class G1Sensing:
    """State readers of a `G1Env` (its engine, config, gyro bias, encoder offsets and the
    kinematic state `update_kinematics` keeps: torso_rot, foot_pos, foot_vel)."""

    @property
    def joint_pos(self) -> np.ndarray:
        """True joint angles (N, 29), SDK order (the model's qpos order)."""
        return self.engine.qpos[:, 7 : ROBOT_QPOS.stop]

    @property
    def joint_vel(self) -> np.ndarray:
        return self.engine.qvel[:, 6 : ROBOT_QVEL.stop]

    @property
    def sensors(self) -> G1State:
        """What the robot measures (encoders carry their offsets), noise-free."""
        return G1State(
            self.engine.qpos[:, 3:7],
            self.engine.qvel[:, 3:6] + self.gyro_bias,
            self.joint_pos + self.joint_offset,
            self.joint_vel,
        )

    def yaw(self) -> np.ndarray:
        """(N,) the pelvis' heading about the vertical (rad): atan2 of the rotation
        matrix's entries (1, 0) and (0, 0), from the quaternion without the whole matrix
        (the same expressions as `quat_to_matrix`)."""
        w, x, y, z = self.engine.qpos[:, 3:7].T
        return np.arctan2(2 * (x * y + w * z), 1 - 2 * (y * y + z * z))

    def heading_rot(self) -> np.ndarray:
        """(N, 3, 3) world from heading frame: the pelvis yaw only."""
        yaw = self.yaw()
        c, s = np.cos(yaw), np.sin(yaw)
        out = np.zeros((yaw.shape[0], 3, 3))
        out[:, 0, 0], out[:, 0, 1], out[:, 1, 0], out[:, 1, 1] = c, -s, s, c
        out[:, 2, 2] = 1.0
        return out

    def to_heading(self, vectors: np.ndarray) -> np.ndarray:
        """World vectors (N, ..., 3) in the heading frame: `heading_rot()` transposed
        applied, written out (a rotation about the vertical leaves z as it is)."""
        yaw = self.yaw().reshape((-1,) + (1,) * (vectors.ndim - 2))
        c, s = np.cos(yaw), np.sin(yaw)
        x, y = vectors[..., 0], vectors[..., 1]
        out = np.empty(vectors.shape)
        out[..., 0] = c * x + s * y
        out[..., 1] = -s * x + c * y
        out[..., 2] = vectors[..., 2]
        out += 0.0  # zeros as +0, as a matrix product gives them: -0 changes a hash's bytes
        return out

    def fat2_target(self) -> np.ndarray:
        return fat2_target_tilt(
            self.to_heading(self.external_force),
            self.fat2_points,
            self.fat2_com,
            self.mass,
            self.cfg.fat2_max_tilt_rad,
        )

    def torso_lean(self) -> np.ndarray:
        return torso_lean(self.to_heading(self.torso_rot[:, :, 2]))

    def ground_height(self, xy: np.ndarray) -> np.ndarray:
        """Height (...,) of the ground under points xy (..., 2): the flat floor at 0; a
        task on rough ground (`g1-walk`) looks it up in its height field."""
        return np.zeros(xy.shape[:-1])

    def base_height(self) -> np.ndarray:
        """(N,) pelvis height above the ground under it (m)."""
        qpos = self.engine.qpos
        return qpos[:, 2] - self.ground_height(qpos[:, 0:2])

    def foot_clearance(self) -> np.ndarray:
        """(N, 2) each sole's height above the ground under it (m)."""
        return self.foot_pos[..., 2] - self.ground_height(self.foot_pos[..., :2])

    def foot_contact(self) -> np.ndarray:
        return (self.foot_clearance() < CONTACT_HEIGHT_M).astype(float)

    def self_contacts(self) -> np.ndarray:
        """(N,) robot-robot contacts in each simulation at the last physics substep, from
        MuJoCo's contact sensor (`SELF_CONTACT_SENSOR`); only the `self_contact` reward
        reads it. With self-collision off the model has no such contacts (and no sensor):
        0, so a policy trained with the penalty still evaluates on the idealized body."""
        if not self.cfg.self_collision:
            return np.zeros(self.num_envs)
        return self.sensor(SELF_CONTACT_SENSOR)[:, 0]

    def sensor(self, name: str) -> np.ndarray:
        """Live (N, dim) view of MuJoCo sensor `name`, made on first use and kept: only the
        terms that read a sensor pay for the lookup, and other engines are refused only by
        the tasks that need one."""
        view = self._sensor_views.get(name)
        if view is None:
            view = self._sensor_views[name] = sensor_view(self.engine, name, type(self).__name__)
        return view

    def update_kinematics(self, ids: np.ndarray | None = None) -> None:
        """Torso orientation and sole positions; sole velocity by difference over a control
        step. With `ids` (simulations just reset) only those rows, their sole velocity zero."""
        rows = slice(None) if ids is None else ids
        qpos = self.engine.qpos[rows]
        base_pos, base_rot = qpos[:, 0:3], quat_to_matrix(qpos[:, 3:7])
        q = qpos[:, 7 : ROBOT_QPOS.stop]
        torso_rot, _ = _TORSO.poses(base_pos, base_rot, q)
        rot, pos = _FEET.poses(base_pos, base_rot, q)
        feet_pos = pos + rot @ _SOLE_BOTTOM
        if ids is None:
            self.torso_rot = torso_rot[:, 0]
            self.foot_vel = (feet_pos - self.foot_pos) / self.control_dt
            self.foot_pos = feet_pos
        else:
            self.torso_rot[ids] = torso_rot[:, 0]
            self.foot_vel[ids] = 0.0
            self.foot_pos[ids] = feet_pos
