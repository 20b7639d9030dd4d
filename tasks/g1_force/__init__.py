"""`g1-force`: the Unitree G1 stands, and steps when it must, while external forces act on
its hands and torso; the force-adaptive torso-tilt reward (FAT2, `tasks/g1/fat2.py`)
asks it to lean into them."""

from simreal.tasks.g1_force.config import EvalPushConfig, ForceConfig, G1ForceConfig
from simreal.tasks.g1_force.env import G1ForceEnv
from simreal.tasks.g1_force.forces import ForceSchedule

__all__ = [
    "EvalPushConfig",
    "ForceConfig",
    "ForceSchedule",
    "G1ForceConfig",
    "G1ForceEnv",
]
