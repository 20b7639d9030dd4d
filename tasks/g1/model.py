"""What a G1 task reads once from its MuJoCo model (`read_model`): the ids the other
parts index by, the nominal values randomization scales, the joints' PD gains and limits
(SDK order), the standing pose and the FAT2 lean's reference geometry."""

from __future__ import annotations

import mujoco
import numpy as np

from simreal.robots.g1 import ACTUATORS, DEFAULT_JOINT_POS, FEET, JOINT_NAMES, JOINTS
from simreal.robots.g1.mjcf import LOAD_BODIES
from simreal.tasks.g1 import native_actuation

SOFT_LIMIT_FRACTION = 0.9
"""The soft joint limits (the reset noise's clip, the joint_limit penalty): this share of
each joint's range about its middle."""

_NOMINAL_FIELDS = (
    "body_mass",
    "body_inertia",
    "body_ipos",
    "geom_friction",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_forcerange",
    "dof_armature",
    "dof_frictionloss",
    "dof_damping",
)
"""The model fields randomization and calibration rewrite, kept at their nominal values."""


def read_model(env, model: mujoco.MjModel) -> None:
    """Onto `env`: body, geom and dof ids, the nominal model fields, the joints' PD and
    limit tables, the standing pose and the FAT2 reference geometry."""
    pelvis = model.body("pelvis").id
    env.robot_body = model.body_rootid == pelvis
    """(nbody,) bool: the G1's own bodies (the ones link-mass randomization scales)."""
    env.force_body_ids = np.array([model.body(n).id for n in LOAD_BODIES])
    env.friction_geom_ids = np.array(
        [model.geom("floor").id, *(model.geom(g).id for g in FEET.values())]
    )
    env.torso_id = int(model.body("torso_link").id)
    env.joint_dof_ids = np.array([model.jnt_dofadr[model.joint(n).id] for n in JOINT_NAMES])
    env.history_columns = native_actuation.history_value_columns(model)
    """(29, nsample) columns of MuJoCo's `history` holding each joint actuator's ctrl
    samples (native motors; empty where the actuators keep no history)."""
    env.nominal = {name: getattr(model, name).copy() for name in _NOMINAL_FIELDS}
    acts = [ACTUATORS[n] for n in JOINT_NAMES]
    env.default_joint_pos = np.asarray(DEFAULT_JOINT_POS)
    env.action_scale = np.array([a.action_scale for a in acts])
    env.kp = np.array([a.kp for a in acts])
    env.kd = np.array([a.kd for a in acts])
    env.torque_limit = np.array([a.torque_limit for a in acts])
    lower = np.array([JOINTS[n].lower for n in JOINT_NAMES])
    upper = np.array([JOINTS[n].upper for n in JOINT_NAMES])
    env.joint_lower, env.joint_upper = lower, upper
    mid, half = (lower + upper) / 2, (upper - lower) / 2
    env.soft_lower = mid - SOFT_LIMIT_FRACTION * half
    env.soft_upper = mid + SOFT_LIMIT_FRACTION * half
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
    mujoco.mj_forward(model, data)
    env.stand_qpos = data.qpos.copy()
    env.stand_height = float(data.qpos[2])
    com = data.subtree_com[pelvis].copy()
    origin = np.array([com[0], com[1], 0.0])
    env.fat2_com = com - origin
    env.fat2_points = data.xipos[env.force_body_ids] - origin
    env.mass = float(model.body_subtreemass[pelvis])
