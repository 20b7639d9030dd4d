"""ROS 2 message definitions (.msg text) and builders for the messages simreal logs.

The definitions are those of ROS 2's common_interfaces (comments and constants left
out; the wire format is the same), concatenated with their dependencies the way
rosbag2 stores them in MCAP schemas: the top-level definition, then for each type it
uses a line of 80 `=`, a `MSG: pkg/Name` line and that type's definition.

Builders return plain dicts in the shape the CDR encoder of mcap-ros2-support takes; the
messages logged every control tick (joint states, IMU, multi-arrays) are encoded by
`encode` instead, straight to CDR bytes.
Quaternions come in simreal's (w, x, y, z) order and go out as ROS's named x, y, z, w.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SEPARATOR = "=" * 80

DEFINITIONS: dict[str, str] = {
    "builtin_interfaces/Time": "int32 sec\nuint32 nanosec",
    "std_msgs/Header": "builtin_interfaces/Time stamp\nstring frame_id",
    "std_msgs/String": "string data",
    "std_msgs/MultiArrayDimension": "string label\nuint32 size\nuint32 stride",
    "std_msgs/MultiArrayLayout": "std_msgs/MultiArrayDimension[] dim\nuint32 data_offset",
    "std_msgs/Float32MultiArray": "std_msgs/MultiArrayLayout layout\nfloat32[] data",
    "std_msgs/Float64MultiArray": "std_msgs/MultiArrayLayout layout\nfloat64[] data",
    "geometry_msgs/Vector3": "float64 x\nfloat64 y\nfloat64 z",
    "geometry_msgs/Point": "float64 x\nfloat64 y\nfloat64 z",
    "geometry_msgs/Quaternion": "float64 x\nfloat64 y\nfloat64 z\nfloat64 w",
    "geometry_msgs/Pose": "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation",
    "geometry_msgs/Twist": "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular",
    "geometry_msgs/Wrench": "geometry_msgs/Vector3 force\ngeometry_msgs/Vector3 torque",
    "geometry_msgs/PoseStamped": "std_msgs/Header header\ngeometry_msgs/Pose pose",
    "geometry_msgs/TwistStamped": "std_msgs/Header header\ngeometry_msgs/Twist twist",
    "geometry_msgs/WrenchStamped": "std_msgs/Header header\ngeometry_msgs/Wrench wrench",
    "geometry_msgs/PoseWithCovariance": "geometry_msgs/Pose pose\nfloat64[36] covariance",
    "geometry_msgs/TwistWithCovariance": "geometry_msgs/Twist twist\nfloat64[36] covariance",
    "nav_msgs/Odometry": (
        "std_msgs/Header header\nstring child_frame_id\n"
        "geometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist"
    ),
    "sensor_msgs/JointState": (
        "std_msgs/Header header\n"
        "string[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort"
    ),
    "sensor_msgs/Imu": (
        "std_msgs/Header header\n"
        "geometry_msgs/Quaternion orientation\nfloat64[9] orientation_covariance\n"
        "geometry_msgs/Vector3 angular_velocity\nfloat64[9] angular_velocity_covariance\n"
        "geometry_msgs/Vector3 linear_acceleration\nfloat64[9] linear_acceleration_covariance"
    ),
}
"""Own definition of each type, keyed `pkg/Name` as in the `MSG:` lines."""

_FIELD_TYPE = re.compile(r"^([a-z_]\w*/[A-Z]\w*)", re.MULTILINE)


def short_name(msgtype: str) -> str:
    """`pkg/msg/Name` -> `pkg/Name`."""
    package, *_, name = msgtype.split("/")
    return f"{package}/{name}"


def msgdef(msgtype: str) -> str:
    """The full schema text of `msgtype` (`pkg/msg/Name`), dependencies depth-first."""
    root = short_name(msgtype)
    order: list[str] = []

    def visit(name: str) -> None:
        for dep in _FIELD_TYPE.findall(DEFINITIONS[name]):
            if dep not in order and dep != root:
                order.append(dep)
                visit(dep)

    visit(root)
    parts = [DEFINITIONS[root], *(f"{SEPARATOR}\nMSG: {dep}\n{DEFINITIONS[dep]}" for dep in order)]
    return "\n".join(parts) + "\n"


def stamp(time_ns: int) -> dict:
    sec, nanosec = divmod(int(time_ns), 1_000_000_000)
    return {"sec": sec, "nanosec": nanosec}


def header(time_ns: int, frame_id: str = "") -> dict:
    return {"stamp": stamp(time_ns), "frame_id": frame_id}


def vector3(v: Sequence[float]) -> dict:
    x, y, z = (float(c) for c in v)
    return {"x": x, "y": y, "z": z}


def quaternion(wxyz: Sequence[float]) -> dict:
    w, x, y, z = (float(c) for c in wxyz)
    return {"x": x, "y": y, "z": z, "w": w}


def pose_stamped(time_ns: int, frame_id: str, position, orientation_wxyz) -> dict:
    return {
        "header": header(time_ns, frame_id),
        "pose": {"position": vector3(position), "orientation": quaternion(orientation_wxyz)},
    }


def twist_stamped(time_ns: int, frame_id: str, linear, angular) -> dict:
    return {
        "header": header(time_ns, frame_id),
        "twist": {"linear": vector3(linear), "angular": vector3(angular)},
    }


def wrench_stamped(time_ns: int, frame_id: str, force, torque) -> dict:
    return {
        "header": header(time_ns, frame_id),
        "wrench": {"force": vector3(force), "torque": vector3(torque)},
    }


def odometry(
    time_ns: int, frame_id: str, child_frame_id: str, position, orientation_wxyz, linear, angular
) -> dict:
    """nav_msgs/Odometry with zero covariances (a simulator's truth has no uncertainty)."""
    return {
        "header": header(time_ns, frame_id),
        "child_frame_id": child_frame_id,
        "pose": {
            "pose": {"position": vector3(position), "orientation": quaternion(orientation_wxyz)},
            "covariance": [0.0] * 36,
        },
        "twist": {
            "twist": {"linear": vector3(linear), "angular": vector3(angular)},
            "covariance": [0.0] * 36,
        },
    }


def labels(names: Sequence[str | tuple[str, int]]) -> str:
    """A MultiArrayDimension label naming the entries along it: `a,b` or `a:3,b:9`."""
    return ",".join(n if isinstance(n, str) else f"{n[0]}:{n[1]}" for n in names)


def parse_labels(label: str) -> list[tuple[str, int]]:
    """Inverse of `labels`: (name, size) pairs, size 1 where none is written."""
    pairs = []
    for item in filter(None, label.split(",")):
        name, _, size = item.partition(":")
        pairs.append((name, int(size) if size else 1))
    return pairs


def string(text: str) -> dict:
    return {"data": text}
