"""`lane-keep`: a car keeps its lane on procedural roads from fused lane geometry,
LiDAR, a PID correction and a semantic caption channel (after BLIP-FusePPO)."""

from simreal.tasks.lane_keep.config import LaneKeepConfig
from simreal.tasks.lane_keep.env import LaneKeepEnv

__all__ = ["LaneKeepConfig", "LaneKeepEnv"]
