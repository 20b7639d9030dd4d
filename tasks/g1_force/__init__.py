"""`g1-force`: the Unitree G1 stands, and steps when it must, while external forces act on
its hands and torso; the force-adaptive torso-tilt reward (FAT2, `fat2.py`) asks it to
lean into them."""

from simreal.tasks.g1_force.config import (
    EvalPushConfig,
    ForceConfig,
    G1ForceConfig,
    G1Randomization,
)
from simreal.tasks.g1_force.env import ACTION_GROUPS, G1ForceEnv
from simreal.tasks.g1_force.fat2 import fat2_target_tilt, torso_lean
from simreal.tasks.g1_force.forces import ForceSchedule
from simreal.tasks.g1_force.observations import (
    POLICY_OBSERVATION,
    PRIVILEGED_OBSERVATION,
    G1State,
    policy_observation,
)

__all__ = [
    "ACTION_GROUPS",
    "POLICY_OBSERVATION",
    "PRIVILEGED_OBSERVATION",
    "EvalPushConfig",
    "ForceConfig",
    "ForceSchedule",
    "G1ForceConfig",
    "G1ForceEnv",
    "G1Randomization",
    "G1State",
    "fat2_target_tilt",
    "policy_observation",
    "torso_lean",
]
