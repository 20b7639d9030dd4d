"""`g1-walk`: the Unitree G1 tracks a commanded planar velocity (vx, vy, yaw rate) on
rough ground (a height field of slopes and steps), standing still when the command is
zero, under the G1 tasks' randomization and random pushes."""

from simreal.tasks.g1_walk.config import EvalWalkConfig, G1WalkConfig, WalkCommandConfig
from simreal.tasks.g1_walk.env import G1WalkEnv
from simreal.tasks.g1_walk.terrain import HeightField, TerrainConfig

__all__ = [
    "EvalWalkConfig",
    "G1WalkConfig",
    "G1WalkEnv",
    "HeightField",
    "TerrainConfig",
    "WalkCommandConfig",
]
