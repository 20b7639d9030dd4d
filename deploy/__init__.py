"""Running a policy on a robot: the ONNX policy runtime, and later transports (rclpy,
DDS), robot bridges, the safety layer, the virtual robot and rosbag2 logs.

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
