"""Running a policy on a robot: the ONNX policy runtime (`runtime`), ROS 2 wire types and
the Unitree G1 messages over CycloneDDS (`dds`), rosbag2 logs and replay (`logs`,
`replay`), and for the G1 (`g1`) the deploy node with its start-up sequence and safety
layer, and the virtual robot behind the same DDS interface.

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
