"""How deep the G1's geoms sink into each other: the check that self-collision holds.

mjbatch steps whole batches in C++ and hands back states, not contact lists, so the
depth is measured afterwards: each state's positions go into one MjData, MuJoCo's own
collision detection runs on it, and the deepest robot-robot contact is reported. It is
meant for evaluation (a few dozen states per control step), not for every training step.
"""

from __future__ import annotations

import mujoco
import numpy as np


class SelfPenetration:
    """Deepest robot-robot penetration (m, >= 0) of the states of a G1 scene model."""

    def __init__(self, model: mujoco.MjModel, robot_root: str = "pelvis"):
        self.model = model
        self.data = mujoco.MjData(model)
        root = model.body(robot_root).id
        robot_body = model.body_rootid == root
        if root == 0 or not robot_body[root]:  # a hung robot is welded to the world
            robot_body = np.zeros(model.nbody, dtype=bool)
            robot_body[root:] = True
            robot_body &= _descends_from(model, root)
        self.robot_geom = robot_body[model.geom_bodyid]

    def __call__(self, qpos: np.ndarray) -> np.ndarray:
        """(N,) deepest penetration of each (N, nq) state; 0 where no robot geoms touch."""
        qpos = np.atleast_2d(qpos)
        depth = np.zeros(len(qpos))
        m, d = self.model, self.data
        for i, q in enumerate(qpos):
            d.qpos[:] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_collision(m, d)
            if d.ncon == 0:
                continue
            g1, g2 = d.contact.geom1[: d.ncon], d.contact.geom2[: d.ncon]
            own = self.robot_geom[g1] & self.robot_geom[g2]
            if own.any():
                depth[i] = max(0.0, -float(d.contact.dist[: d.ncon][own].min()))
        return depth


def _descends_from(model: mujoco.MjModel, root: int) -> np.ndarray:
    below = np.zeros(model.nbody, dtype=bool)
    below[root] = True
    for body in range(root + 1, model.nbody):
        below[body] = below[model.body_parentid[body]]
    return below
