"""An untrained but metadata-complete G1 policy for the deploy tests.

python tests/_g1_policy.py OUT.onnx
"""

import sys
from pathlib import Path

import numpy as np

from simreal.deploy.g1.messages import RobotState
from simreal.policies.config import ModelConfig
from simreal.policies.export import export_onnx
from simreal.policies.models import ActorCritic
from simreal.robots.g1 import ACTUATORS, DEFAULT_JOINT_POS, JOINT_NAMES
from simreal.tasks.g1 import POLICY_OBSERVATION

ACTION_GROUPS = {"lower": list(range(12)), "waist": [12, 13, 14], "upper": list(range(15, 29))}


def sensed_state(env, tick: int) -> RobotState:
    """What simulation 0 of a G1 environment would report to the deploy node (its sensors,
    no torque or accelerometer readings)."""
    s = env.sensors
    return RobotState(
        q=s.joint_pos[0].copy(),
        dq=s.joint_vel[0].copy(),
        tau_est=np.zeros(29),
        quat_wxyz=s.base_quat[0].copy(),
        gyro=s.base_ang_vel[0].copy(),
        accel=np.zeros(3),
        tick=tick,
        mode_machine=5,
    )


def g1_metadata(**overrides) -> dict:
    meta = {
        "task": "g1-force",
        "robot": "g1",
        "observation_names": [list(term) for term in POLICY_OBSERVATION],
        "action_groups": ACTION_GROUPS,
        "joint_names": list(JOINT_NAMES),
        "default_joint_pos": list(DEFAULT_JOINT_POS),
        "action_scale": [ACTUATORS[n].action_scale for n in JOINT_NAMES],
        "kp": [ACTUATORS[n].kp for n in JOINT_NAMES],
        "kd": [ACTUATORS[n].kd for n in JOINT_NAMES],
        "control_dt": 0.02,
        "sim_dt": 0.005,
        "decimation": 4,
        "action_clip": 1.0,
    }
    return {**meta, **overrides}


def export_g1_policy(path: Path, memory_size: int = 0, **overrides) -> Path:
    """`memory_size` > 0: a recurrent policy (its graph carries a memory of that size)."""
    n_obs = sum(size for _, size in POLICY_OBSERVATION)
    groups = {name: tuple(idx) for name, idx in ACTION_GROUPS.items()}
    cfg = ModelConfig(actor_hidden=(32,), critic_hidden=(32,), memory_size=memory_size)
    model = ActorCritic(n_obs, n_obs, groups, cfg)
    return export_onnx(model, path, g1_metadata(**overrides))


if __name__ == "__main__":
    export_g1_policy(Path(sys.argv[1]))
