"""`g1-pull`: the Unitree G1 holds both ends of a rope looped through a cart on rails and
tows it, walking backward (the cart in front) or forward (the cart behind), against a
rolling resistance that rises with a fall-rate curriculum; the handle force comes from
a MuJoCo rope-tension sensor."""

from simreal.tasks.g1_pull.config import (
    CommandConfig,
    EvalPullConfig,
    G1PullConfig,
    LoadConfig,
)
from simreal.tasks.g1_pull.env import G1PullEnv
from simreal.tasks.g1_pull.metrics import held_force
from simreal.tasks.g1_pull.observations import (
    COMMAND_OBSERVATION,
    LOAD_OBSERVATION,
    PULL_CRITIC_OBSERVATION,
    PULL_POLICY_OBSERVATION,
)

__all__ = [
    "COMMAND_OBSERVATION",
    "LOAD_OBSERVATION",
    "PULL_CRITIC_OBSERVATION",
    "PULL_POLICY_OBSERVATION",
    "CommandConfig",
    "EvalPullConfig",
    "G1PullConfig",
    "G1PullEnv",
    "LoadConfig",
    "held_force",
]
