"""Rollout logs: rosbag2 directories (metadata.yaml plus one MCAP file) of ROS 2 messages.

`RolloutLog` writes one rollout, from simulation or from a robot (topics and types in
`rollout`); `read_rollout` reads it back into arrays; `record_episode` logs a simulated
task episode and `resimulate` replays a log's commands open loop in a task.
"""

from simreal.deploy.logs.reader import LogReadError, Rollout, Series, read_rollout
from simreal.deploy.logs.rollout import TOPICS, LogMeta, RolloutLog
from simreal.deploy.logs.rosbag2 import BagExistsError, Rosbag2Writer, check_new_bag
from simreal.deploy.logs.sim import Resimulation, SimProbe, record_episode, resimulate

__all__ = [
    "TOPICS",
    "BagExistsError",
    "LogMeta",
    "LogReadError",
    "Resimulation",
    "Rollout",
    "RolloutLog",
    "Rosbag2Writer",
    "Series",
    "SimProbe",
    "check_new_bag",
    "read_rollout",
    "record_episode",
    "resimulate",
]
