"""`quad-swarm`: Crazyflies cross a room of columns to individual goals with one shared,
size-independent policy (attention over neighbours and obstacles)."""

from simreal.tasks.quad_swarm.config import QuadSwarmConfig
from simreal.tasks.quad_swarm.env import QuadSwarmEnv

__all__ = ["QuadSwarmConfig", "QuadSwarmEnv"]
