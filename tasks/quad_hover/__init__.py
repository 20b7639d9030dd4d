"""`quad-hover`: a Crazyflie rises from the ground and holds (0, 0, 1), as in HoverAviary."""

from simreal.tasks.quad_hover.config import QuadHoverConfig
from simreal.tasks.quad_hover.env import QuadHoverEnv
from simreal.tasks.quad_hover.observations import POLICY_OBSERVATION, QuadState, policy_observation
from simreal.tasks.quadrotor import QuadPhysics, QuadRandomization

__all__ = [
    "POLICY_OBSERVATION",
    "QuadHoverConfig",
    "QuadHoverEnv",
    "QuadPhysics",
    "QuadRandomization",
    "QuadState",
    "policy_observation",
]
