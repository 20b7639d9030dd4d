"""PPO for vectorized environments, with a decoupled-body actor and ONNX export.

Knows only the `VecEnv` protocol, never a task: simreal tasks and Gymnasium
environments both train here.
"""

from simreal.policies.config import ModelConfig, PPOConfig, TrainConfig
from simreal.policies.models import ActorCritic
from simreal.policies.runner import OnPolicyRunner
from simreal.policies.vecenv import VecEnv

__all__ = ["ActorCritic", "ModelConfig", "OnPolicyRunner", "PPOConfig", "TrainConfig", "VecEnv"]
