"""The walking G1 (`G1GaitEnv`): what `g1-pull` and `g1-walk` add to the G1 base, a
velocity command, the gait clock that runs while the command asks for steps, its
stepping reference under the policy's action, and each foot's time in the air."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from simreal.tasks.g1 import gait
from simreal.tasks.g1.config import G1GaitConfig
from simreal.tasks.g1.env import G1Env
from simreal.tasks.rotations import quat_to_matrix


class G1GaitEnv(G1Env):
    """A G1 task with a (vx, vy, yaw_rate) command (`command`, set by the subclass) and a
    gait clock. The subclass says when the clock starts (`gait_start_s`) and which
    commands count as walking (`walking_rule`, gait.WALKING_RULES)."""

    walking_rule: ClassVar[str] = "forward"

    def __init__(
        self,
        cfg: G1GaitConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
    ):
        s = num_envs
        self.command = np.zeros((s, 3))
        self.air_time = np.zeros((s, 2))
        self.touchdown_air_time = np.zeros((s, 2))
        """Each foot's time in the air (s) when it touched down this step, else 0."""
        self.in_contact = np.ones((s, 2), dtype=bool)
        super().__init__(cfg, num_envs, engine, seed, num_threads)

    @property
    def gait_start_s(self) -> float:
        """Episode time at which the clock's phase is 0."""
        return 0.0

    def reset_state(self, ids: np.ndarray) -> None:
        super().reset_state(ids)
        self.air_time[ids] = 0.0
        self.touchdown_air_time[ids] = 0.0
        self.in_contact[ids] = True

    def after_physics(self) -> None:
        super().after_physics()
        self._update_air_time()

    def _update_air_time(self) -> None:
        contact = self.foot_contact() > 0
        self.air_time += self.control_dt
        landed = contact & ~self.in_contact
        self.touchdown_air_time = np.where(landed, self.air_time, 0.0)
        self.air_time = np.where(contact, 0.0, self.air_time)
        self.in_contact = contact

    def base_yaw_rate(self) -> np.ndarray:
        """World-frame yaw rate: the free joint's angular velocity is in the pelvis frame."""
        rot = quat_to_matrix(self.engine.qpos[:, 3:7])
        return np.einsum("nj,nj->n", rot[:, 2, :], self.engine.qvel[:, 3:6])

    def walking(self) -> np.ndarray:
        """(N,) bool: the command asks for steps now (`walking_rule`)."""
        return gait.walking(self.command, self.walking_rule)

    def phase(self) -> np.ndarray:
        """(N,) the gait clock's left-leg phase (gait.py)."""
        t = self.episode_step * self.control_dt
        return gait.gait_phase(t, self.gait_start_s, self.cfg.gait_period_s)

    def reference_offset(self) -> np.ndarray | float:
        """The stepping reference while walking (config gait_reference_rad; none at 0):
        the policy's actions are residuals on it."""
        c = self.cfg
        if c.gait_reference_rad == 0.0:
            return 0.0
        return gait.reference_offset(
            self.phase(),
            self.command,
            c.stance_fraction,
            c.gait_reference_rad,
            c.gait_stride_gain,
            self.walking_rule,
            c.gait_turn_gain,
            c.gait_side_gain,
        )

    def deployment_metadata(self) -> dict:
        """The gait clock and reference a deployment must add to the policy's targets."""
        c = self.cfg
        return {
            **super().deployment_metadata(),
            "gait_period_s": c.gait_period_s,
            "stance_fraction": c.stance_fraction,
            "gait_reference_rad": c.gait_reference_rad,
            "gait_stride_gain": c.gait_stride_gain,
            "gait_turn_gain": c.gait_turn_gain,
            "gait_side_gain": c.gait_side_gain,
            "gait_start_s": self.gait_start_s,
            "gait_walking_rule": self.walking_rule,
        }
