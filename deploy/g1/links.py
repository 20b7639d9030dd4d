"""How the deploy node reaches the robot: the topics it reads state from and sends commands to.

A link has the same small interface whatever carries it, so the node's loop, state
machine, observation and safety layer are the same for every transport:

- `receive(now)`: the newest valid `RobotState` that arrived since the last call (or
  None) and how many malformed ones were dropped;
- `send(cmd, state)`: one motor command;
- `announce(lifecycle)`: the node's lifecycle-style state changed (`ros2_state.LIFECYCLE`);
- `commands()`: operator words that arrived on `/simreal/command` (std_msgs/String);
- `wrenches()`: (force, torque) pushes reported on `/simreal/external_wrench`;
- `velocity_commands()`: (vx, vy, yaw_rate) of each geometry_msgs/Twist that arrived on
  `/cmd_vel` (`twist_command`);
- `other_writers()`: GUIDs of writers other than this link's own on the robot's command
  topic (DDS discovery), so that the node never shares the robot with a second commander;
- `has_tick`: whether states carry the robot's own tick, which the node checks advances.

`UnitreeLink` is the G1's own low-level interface (`rt/lowstate`, `rt/lowcmd`, unitree_hg
types with crc). `Ros2DdsLink` is a ROS 2 robot's interface over CycloneDDS with ROS 2's
wire conventions (`rt/joint_states`, `rt/imu`, `rt/joint_commands`, `pkg::msg::dds_::T_`
types); `rclpy_node.RclpyLink` is the same one through rclpy.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from simreal.deploy.dds import (
    DdsParticipant,
    latched_qos,
    stream_qos,
    take_raw,
    topic_name,
    write_raw,
    writer_count,
    writer_guids,
)
from simreal.deploy.dds import ros2 as msgs
from simreal.deploy.dds.unitree_hg import LOWCMD_TOPIC, LOWSTATE_TOPIC, LowCmd_, LowState_
from simreal.deploy.g1 import ros2_state
from simreal.deploy.g1.messages import RobotState, decode_lowstate, encode_lowcmd
from simreal.deploy.g1.sim_robot import MotorCommand

BEST_EFFORT = stream_qos(reliable=False)
COMMAND_TOPIC = "/simreal/command"
"""std_msgs/String: operator commands (`safety.COMMANDS`, or lifecycle words)."""
CMD_VEL_TOPIC = "/cmd_vel"
"""geometry_msgs/Twist: the walking command (DDS topic rt/cmd_vel)."""

Wrench = tuple[np.ndarray, np.ndarray]


class Link(Protocol):
    name: str
    has_tick: bool

    def other_writers(self) -> list[str]: ...

    def receive(self, now: float) -> tuple[RobotState | None, int]: ...

    def send(self, cmd: MotorCommand, state: RobotState) -> None: ...

    def announce(self, lifecycle: str) -> None: ...

    def commands(self) -> list[str]: ...

    def wrenches(self) -> list[Wrench]: ...

    def velocity_commands(self) -> list[np.ndarray]: ...


def twist_command(linear, angular) -> np.ndarray:
    """(vx, vy, yaw_rate) of a Twist: a planar base ignores linear z and roll/pitch rates."""
    return np.array([linear.x, linear.y, angular.z], dtype=float)


class _DdsOperator:
    """Operator commands and reported pushes over CycloneDDS (ROS 2 naming)."""

    def __init__(self, dds: DdsParticipant):
        self._commands = dds.reader(
            topic_name(COMMAND_TOPIC), msgs.String, stream_qos(reliable=True, depth=8)
        )
        self._wrenches = dds.reader(
            topic_name(ros2_state.EXTERNAL_WRENCH),
            msgs.WrenchStamped,
            stream_qos(reliable=False, depth=8),
        )
        self._cmd_vel = dds.reader(
            topic_name(CMD_VEL_TOPIC), msgs.Twist, stream_qos(reliable=False, depth=8)
        )

    def velocity_commands(self) -> list[np.ndarray]:
        return [
            twist_command(s.linear, s.angular)
            for s in self._cmd_vel.take(8)
            if isinstance(s, msgs.Twist)
        ]

    def commands(self) -> list[str]:
        return [s.data for s in self._commands.take(8) if isinstance(s, msgs.String)]

    def wrenches(self) -> list[Wrench]:
        out = []
        for s in self._wrenches.take(8):
            if isinstance(s, msgs.WrenchStamped):
                f, m = s.wrench.force, s.wrench.torque
                out.append((np.array([f.x, f.y, f.z]), np.array([m.x, m.y, m.z])))
        return out


class UnitreeLink(_DdsOperator):
    """rt/lowstate in, rt/lowcmd out, as raw CDR bytes (no Python IDL objects on the hot
    path); `mode_machine` of every command is copied from the state."""

    name = "unitree_hg low-level (rt/lowstate, rt/lowcmd)"
    has_tick = True

    def __init__(self, dds: DdsParticipant):
        super().__init__(dds)
        self.writer = dds.writer(LOWCMD_TOPIC, LowCmd_, BEST_EFFORT)
        self.reader = dds.reader(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False, depth=16))
        # Never read: it only matches the writers on rt/lowcmd, so discovery names them.
        self.cmd_watch = dds.reader(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False))

    def other_writers(self) -> list[str]:
        if writer_count(self.cmd_watch) <= 1:  # this link's own writer
            return []
        return writer_guids(self.cmd_watch, exclude=(self.writer,))

    def receive(self, now: float) -> tuple[RobotState | None, int]:
        newest, bad = None, 0
        for data in take_raw(self.reader, 16):
            state = decode_lowstate(data)
            if state is None or not state.is_finite():
                bad += 1
            else:
                newest = state
        return newest, bad

    def send(self, cmd: MotorCommand, state: RobotState) -> None:
        write_raw(self.writer, encode_lowcmd(cmd, state.mode_machine))

    def announce(self, lifecycle: str) -> None:
        pass


class Ros2DdsLink(_DdsOperator):
    """A ROS 2 robot over CycloneDDS: JointState and Imu in, Float64MultiArray commands out.

    The state is whole once both a JointState and an Imu have arrived; each new
    JointState then makes a new state with the newest Imu. A JointState that lacks one
    of the policy's joints, or has mismatched lengths, is dropped and counted.
    """

    name = "ROS 2 over CycloneDDS (rt/joint_states, rt/imu, rt/joint_commands)"
    has_tick = False

    def __init__(self, dds: DdsParticipant, joint_names: tuple[str, ...]):
        super().__init__(dds)
        self.joint_names = joint_names
        depth = stream_qos(reliable=False, depth=16)
        self.joints = dds.reader(topic_name(ros2_state.JOINT_STATES), msgs.JointState, depth)
        self.imu = dds.reader(topic_name(ros2_state.IMU), msgs.Imu, depth)
        self.writer = dds.writer(
            topic_name(ros2_state.JOINT_COMMANDS), msgs.Float64MultiArray, BEST_EFFORT
        )
        self.state_writer = dds.writer(
            topic_name(ros2_state.NODE_STATE), msgs.String, latched_qos()
        )
        self.announce(ros2_state.LIFECYCLE["ZERO_TORQUE"])
        dims = ros2_state.command_layout(joint_names)
        self.layout = msgs.MultiArrayLayout(
            dim=[msgs.MultiArrayDimension(label=a, size=b, stride=c) for a, b, c in dims]
        )
        self.last_imu: msgs.Imu | None = None
        self.cmd_watch = dds.reader(
            topic_name(ros2_state.JOINT_COMMANDS), msgs.Float64MultiArray, BEST_EFFORT
        )

    def other_writers(self) -> list[str]:
        if writer_count(self.cmd_watch) <= 1:
            return []
        return writer_guids(self.cmd_watch, exclude=(self.writer,))

    def receive(self, now: float) -> tuple[RobotState | None, int]:
        for sample in self.imu.take(16):
            if isinstance(sample, msgs.Imu):
                self.last_imu = sample
        joints = [s for s in self.joints.take(16) if isinstance(s, msgs.JointState)]
        return ros2_state.newest_state(joints, self.last_imu, self.joint_names)

    def send(self, cmd: MotorCommand, state: RobotState) -> None:
        self.writer.write(
            msgs.Float64MultiArray(layout=self.layout, data=ros2_state.command_data(cmd))
        )

    def announce(self, lifecycle: str) -> None:
        self.state_writer.write(msgs.String(data=lifecycle))
