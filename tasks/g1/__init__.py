"""What every G1 task shares: the robot on a floor commanded by joint position targets
(`G1Env`), its configuration and domain randomization, the policy observation (the one
definition used in training, evaluation and on the robot), the balance and effort
rewards, falls, forward kinematics and the FAT2 lean. `g1-force` and `g1-pull` build on
it, as the Crazyflie tasks build on `tasks/quadrotor/`."""

from simreal.tasks.g1.config import G1Config, G1Randomization
from simreal.tasks.g1.env import ACTION_GROUPS, G1Env
from simreal.tasks.g1.fat2 import fat2_target_tilt, torso_lean
from simreal.tasks.g1.observations import (
    POLICY_OBSERVATION,
    POLICY_TERMS,
    PRIVILEGED_OBSERVATION,
    G1Reading,
    G1State,
    policy_observation,
)

__all__ = [
    "ACTION_GROUPS",
    "POLICY_OBSERVATION",
    "POLICY_TERMS",
    "PRIVILEGED_OBSERVATION",
    "G1Config",
    "G1Env",
    "G1Randomization",
    "G1Reading",
    "G1State",
    "fat2_target_tilt",
    "policy_observation",
    "torso_lean",
]
