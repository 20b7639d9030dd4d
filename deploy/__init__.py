"""Running a policy on a robot: the ONNX policy runtime (`runtime`), ROS 2 wire types and
the Unitree G1 messages over CycloneDDS (`dds`), rosbag2 logs and replay (`logs`,
`replay`); the deploy node, robot bridges, safety layer and virtual robot come next.

Uses tasks (their observation functions), robots and sim; never torch or
`simreal.policies`, so a robot's computer needs only ONNX Runtime and numpy.
"""

from simreal.deploy.runtime import (
    OnnxPolicy,
    PolicyMetadata,
    PolicyMetadataError,
    PolicyMismatchError,
    check_compatible,
)

__all__ = [
    "OnnxPolicy",
    "PolicyMetadata",
    "PolicyMetadataError",
    "PolicyMismatchError",
    "check_compatible",
]
