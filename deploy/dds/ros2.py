"""ROS 2 messages as plain DDS types, the way rmw_cyclonedds puts them on the wire.

A ROS 2 topic `/joint_states` is the DDS topic `rt/joint_states`, and the message type
`sensor_msgs/msg/JointState` is the DDS type `sensor_msgs::msg::dds_::JointState_`. The
structs below mirror ROS 2's own `.msg` definitions field by field (names, order and
types), all final and keyless, so their CDR bytes are those of a ROS 2 node and a ROS 2
graph running rmw_cyclonedds sees these topics and decodes them.
"""

from dataclasses import dataclass, field

import cyclonedds.idl.annotations as annotate
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float32, float64, int32, sequence, uint32

TOPIC_PREFIX = "rt"
"""rmw_cyclonedds prefixes ROS topics ("rt"), services ("rq", "rr") and actions alike."""


def topic_name(ros_topic: str) -> str:
    """The DDS topic carrying a ROS 2 topic: `/joint_states` -> `rt/joint_states`."""
    if not ros_topic.startswith("/"):
        raise ValueError(f"ROS 2 topic {ros_topic!r} must be absolute (start with '/')")
    return TOPIC_PREFIX + ros_topic


def type_name(package: str, message: str) -> str:
    """The DDS type of a ROS 2 message: (sensor_msgs, JointState) -> sensor_msgs::msg::dds_::JointState_."""
    return f"{package}::msg::dds_::{message}_"


def _seq() -> list:
    return []


def _zeros9() -> list[float]:
    return [0.0] * 9


@dataclass
@annotate.final
class Time(IdlStruct, typename=type_name("builtin_interfaces", "Time")):
    """builtin_interfaces/Time."""

    sec: int32 = 0
    nanosec: uint32 = 0

    @classmethod
    def from_ns(cls, ns: int) -> "Time":
        return cls(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


@dataclass
@annotate.final
class Header(IdlStruct, typename=type_name("std_msgs", "Header")):
    """std_msgs/Header."""

    stamp: Time = field(default_factory=Time)
    frame_id: str = ""


@dataclass
@annotate.final
class JointState(IdlStruct, typename=type_name("sensor_msgs", "JointState")):
    """sensor_msgs/JointState: name[i] has position[i], velocity[i], effort[i] (SI units)."""

    header: Header = field(default_factory=Header)
    name: sequence[str] = field(default_factory=_seq)
    position: sequence[float64] = field(default_factory=_seq)
    velocity: sequence[float64] = field(default_factory=_seq)
    effort: sequence[float64] = field(default_factory=_seq)


@dataclass
@annotate.final
class Quaternion(IdlStruct, typename=type_name("geometry_msgs", "Quaternion")):
    """geometry_msgs/Quaternion (x, y, z, w order, identity by default as in ROS 2)."""

    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    w: float64 = 1.0


@dataclass
@annotate.final
class Vector3(IdlStruct, typename=type_name("geometry_msgs", "Vector3")):
    """geometry_msgs/Vector3."""

    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
@annotate.final
class Twist(IdlStruct, typename=type_name("geometry_msgs", "Twist")):
    """geometry_msgs/Twist: linear (m/s) and angular (rad/s) velocity, as on `cmd_vel`."""

    linear: Vector3 = field(default_factory=Vector3)
    angular: Vector3 = field(default_factory=Vector3)


@dataclass
@annotate.final
class Imu(IdlStruct, typename=type_name("sensor_msgs", "Imu")):
    """sensor_msgs/Imu; covariances are row-major 3x3, element 0 = -1 means "not provided"."""

    header: Header = field(default_factory=Header)
    orientation: Quaternion = field(default_factory=Quaternion)
    orientation_covariance: array[float64, 9] = field(default_factory=_zeros9)
    angular_velocity: Vector3 = field(default_factory=Vector3)
    angular_velocity_covariance: array[float64, 9] = field(default_factory=_zeros9)
    linear_acceleration: Vector3 = field(default_factory=Vector3)
    linear_acceleration_covariance: array[float64, 9] = field(default_factory=_zeros9)


@dataclass
@annotate.final
class MultiArrayDimension(IdlStruct, typename=type_name("std_msgs", "MultiArrayDimension")):
    """std_msgs/MultiArrayDimension."""

    label: str = ""
    size: uint32 = 0
    stride: uint32 = 0


@dataclass
@annotate.final
class MultiArrayLayout(IdlStruct, typename=type_name("std_msgs", "MultiArrayLayout")):
    """std_msgs/MultiArrayLayout."""

    dim: sequence[MultiArrayDimension] = field(default_factory=_seq)
    data_offset: uint32 = 0


@dataclass
@annotate.final
class Float32MultiArray(IdlStruct, typename=type_name("std_msgs", "Float32MultiArray")):
    """std_msgs/Float32MultiArray."""

    layout: MultiArrayLayout = field(default_factory=MultiArrayLayout)
    data: sequence[float32] = field(default_factory=_seq)


@dataclass
@annotate.final
class Float64MultiArray(IdlStruct, typename=type_name("std_msgs", "Float64MultiArray")):
    """std_msgs/Float64MultiArray."""

    layout: MultiArrayLayout = field(default_factory=MultiArrayLayout)
    data: sequence[float64] = field(default_factory=_seq)


@dataclass
@annotate.final
class Wrench(IdlStruct, typename=type_name("geometry_msgs", "Wrench")):
    """geometry_msgs/Wrench."""

    force: Vector3 = field(default_factory=Vector3)
    torque: Vector3 = field(default_factory=Vector3)


@dataclass
@annotate.final
class WrenchStamped(IdlStruct, typename=type_name("geometry_msgs", "WrenchStamped")):
    """geometry_msgs/WrenchStamped."""

    header: Header = field(default_factory=Header)
    wrench: Wrench = field(default_factory=Wrench)


@dataclass
@annotate.final
class String(IdlStruct, typename=type_name("std_msgs", "String")):
    """std_msgs/String."""

    data: str = ""


def _zeros36() -> list[float]:
    return [0.0] * 36


@dataclass
@annotate.final
class Point(IdlStruct, typename=type_name("geometry_msgs", "Point")):
    """geometry_msgs/Point."""

    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
@annotate.final
class Pose(IdlStruct, typename=type_name("geometry_msgs", "Pose")):
    """geometry_msgs/Pose."""

    position: Point = field(default_factory=Point)
    orientation: Quaternion = field(default_factory=Quaternion)


@dataclass
@annotate.final
class PoseWithCovariance(IdlStruct, typename=type_name("geometry_msgs", "PoseWithCovariance")):
    """geometry_msgs/PoseWithCovariance (row-major 6x6: x, y, z, rotation about x, y, z)."""

    pose: Pose = field(default_factory=Pose)
    covariance: array[float64, 36] = field(default_factory=_zeros36)


@dataclass
@annotate.final
class TwistWithCovariance(IdlStruct, typename=type_name("geometry_msgs", "TwistWithCovariance")):
    """geometry_msgs/TwistWithCovariance."""

    twist: Twist = field(default_factory=Twist)
    covariance: array[float64, 36] = field(default_factory=_zeros36)


@dataclass
@annotate.final
class Odometry(IdlStruct, typename=type_name("nav_msgs", "Odometry")):
    """nav_msgs/Odometry: the pose in `header.frame_id`, the twist of `child_frame_id`."""

    header: Header = field(default_factory=Header)
    child_frame_id: str = ""
    pose: PoseWithCovariance = field(default_factory=PoseWithCovariance)
    twist: TwistWithCovariance = field(default_factory=TwistWithCovariance)
