"""The deploy node's robot state and commands as ROS 2 messages, whatever carries them.

A ROS 2 robot reports its joints on `/joint_states` (sensor_msgs/JointState, by name, in
any order) and its base IMU on `/imu` (sensor_msgs/Imu), and takes the node's commands
on `/joint_commands` as std_msgs/Float64MultiArray of shape (joints, fields): dim 0
labelled with the joint names, dim 1 with `q,dq,kp,kd,tau`, the layout the logs use for
`/lowcmd`. The functions here work on plain values, so the CycloneDDS link
(`links.Ros2DdsLink`) and the rclpy adapter (`rclpy_node`) share them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from simreal.deploy.g1.messages import RobotState
from simreal.deploy.g1.safety import MAX_DOMAIN_ID
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.deploy.logs.messages import labels

JOINT_STATES = "/joint_states"
IMU = "/imu"
JOINT_COMMANDS = "/joint_commands"
EXTERNAL_WRENCH = "/simreal/external_wrench"
"""geometry_msgs/WrenchStamped: a push the virtual robot applies (known only in simulation);
the deploy node logs what arrives here on /wrench."""
NODE_STATE = "/simreal_policy/state"
"""std_msgs/String: the node's lifecycle state, at start and whenever it changes; latched
(transient local), so a subscriber that joins later gets the current one."""
COMMAND_FIELDS = ("q", "dq", "kp", "kd", "tau")
LIFECYCLE = {
    "ZERO_TORQUE": "inactive",
    "MOVE_TO_DEFAULT": "inactive",
    "HOLD": "inactive",
    "ACTIVE": "active",
    "DAMPING": "damping",
}
"""ROS 2 lifecycle-style state of each deploy mode: the start-up sequence is `inactive`."""


def joint_arrays(
    names: Sequence[str],
    position: Sequence[float],
    velocity: Sequence[float],
    effort: Sequence[float],
    joint_names: Sequence[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """q, dq, tau in `joint_names` order from a JointState; None if a joint is missing or
    a field has the wrong length (effort may be empty: zeros)."""
    n = len(names)
    if len(position) != n or len(velocity) != n or len(effort) not in (0, n):
        return None
    index = {name: i for i, name in enumerate(names)}
    try:
        order = np.array([index[name] for name in joint_names])
    except KeyError:
        return None
    q = np.asarray(position, dtype=float)[order]
    dq = np.asarray(velocity, dtype=float)[order]
    tau = np.asarray(effort, dtype=float)[order] if len(effort) else np.zeros(len(joint_names))
    return q, dq, tau


def robot_state(
    joints: tuple[np.ndarray, np.ndarray, np.ndarray],
    orientation_xyzw: Sequence[float],
    angular_velocity: Sequence[float],
    linear_acceleration: Sequence[float],
) -> RobotState:
    """The node's state from joint arrays and an Imu's values (ROS quaternions are x, y, z, w)."""
    x, y, z, w = orientation_xyzw
    q, dq, tau = joints
    return RobotState(
        q=q,
        dq=dq,
        tau_est=tau,
        quat_wxyz=np.array([w, x, y, z], dtype=float),
        gyro=np.asarray(angular_velocity, dtype=float),
        accel=np.asarray(linear_acceleration, dtype=float),
        tick=0,
        mode_machine=0,
    )


def newest_state(joint_states, imu, joint_names: Sequence[str]) -> tuple[RobotState | None, int]:
    """The newest whole state from JointState messages (oldest first) and the newest Imu
    message, and how many JointStates were dropped as malformed. Works on cyclonedds'
    `ros2` types and on rclpy's messages alike (same field names). No state before an
    Imu has arrived."""
    newest, bad = None, 0
    for msg in joint_states:
        arrays = joint_arrays(msg.name, msg.position, msg.velocity, msg.effort, joint_names)
        if arrays is None:
            bad += 1
            continue
        if imu is None:
            continue
        o, w, a = imu.orientation, imu.angular_velocity, imu.linear_acceleration
        state = robot_state(arrays, (o.x, o.y, o.z, o.w), (w.x, w.y, w.z), (a.x, a.y, a.z))
        if state.is_finite():
            newest = state
        else:
            bad += 1
    return newest, bad


def command_layout(joint_names: Sequence[str]) -> list[tuple[str, int, int]]:
    """(label, size, stride) of the two dims of a `/joint_commands` message."""
    n, k = len(joint_names), len(COMMAND_FIELDS)
    return [(labels(joint_names), n, n * k), (labels(COMMAND_FIELDS), k, k)]


def command_data(cmd: MotorCommand) -> list[float]:
    """A command's data, row-major (joint, field)."""
    return np.stack([getattr(cmd, f) for f in COMMAND_FIELDS], axis=1).ravel().tolist()


def motor_command(
    layout: Sequence[tuple[str, int, int]], data: Sequence[float], joint_names: Sequence[str]
) -> MotorCommand | None:
    """The command in a `/joint_commands` message; None unless its layout is exactly
    `command_layout(joint_names)` and every value is finite."""
    if list(layout) != command_layout(joint_names):
        return None
    values = np.asarray(data, dtype=float)
    if values.size != len(joint_names) * len(COMMAND_FIELDS) or not np.isfinite(values).all():
        return None
    table = values.reshape(len(joint_names), len(COMMAND_FIELDS))
    return MotorCommand(**{f: table[:, i].copy() for i, f in enumerate(COMMAND_FIELDS)})


def ros_domain_id(domain: int | None, env: Mapping[str, str]) -> int:
    """The DDS domain of a ROS 2 node: `--domain` where given, else `ROS_DOMAIN_ID` (as
    every ROS 2 node takes it), else 0. A `ROS_DOMAIN_ID` that is not an integer 0-232,
    or that differs from a given `--domain`, is refused naming both values: a node
    started on one domain while the shell says another would silently meet nobody."""
    text = env.get("ROS_DOMAIN_ID", "").strip()
    if not text:
        return 0 if domain is None else domain
    try:
        from_env = int(text)
    except ValueError:
        raise ValueError(f"ROS_DOMAIN_ID={text!r}: expected an integer 0-{MAX_DOMAIN_ID}") from None
    if not 0 <= from_env <= MAX_DOMAIN_ID:
        raise ValueError(f"ROS_DOMAIN_ID={from_env}: expected 0-{MAX_DOMAIN_ID}")
    if domain is not None and domain != from_env:
        raise ValueError(
            f"--domain {domain} conflicts with ROS_DOMAIN_ID={from_env}: pass --domain "
            f"{from_env}, or unset ROS_DOMAIN_ID to run on domain {domain}"
        )
    return from_env
