"""What every Crazyflie task shares: per-motor RPM actions, rotor aerodynamics, domain
randomization and resets. `quad-hover` and `quad-track` build on it."""

from simreal.tasks.quadrotor.config import QuadPhysics, QuadRandomization, QuadrotorConfig
from simreal.tasks.quadrotor.env import QuadrotorEnv
from simreal.tasks.quadrotor.observations import PRIVILEGED_OBSERVATION
from simreal.tasks.quadrotor.state import QuadState, base_rot

__all__ = [
    "PRIVILEGED_OBSERVATION",
    "QuadPhysics",
    "QuadRandomization",
    "QuadState",
    "QuadrotorConfig",
    "QuadrotorEnv",
    "base_rot",
]
