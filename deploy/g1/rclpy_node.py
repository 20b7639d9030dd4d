"""The deploy node as the ROS 2 node `simreal_policy`, through rclpy (when it is installed).

A thin adapter: `RclpyLink` gives `node.G1Node` the same link interface as the
CycloneDDS links (`links`), so the state machine, observation, safety layer, clock and
logs are the node's own and are tested over CycloneDDS (`links.Ros2DdsLink`, same
topics and message types). Here only rclpy's side is written: parameters, subscriptions
and publishers, an executor spinning in a thread.

Parameters: `policy_path`, `robot` (g1), `rate_hz` (command rate), `control_rate_hz`
(must match the policy's), `state_timeout_ms`. Topics (relative, so a namespace or
remapping applies): subscribes `joint_states` (sensor_msgs/JointState), `imu`
(sensor_msgs/Imu), `simreal/command` (std_msgs/String) and `cmd_vel`
(geometry_msgs/Twist: the walking command, `links.twist_command`); publishes `joint_commands`
(std_msgs/Float64MultiArray, `ros2_state`) and `simreal_policy/state` (std_msgs/String:
inactive, active, damping; latched).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import threading
from pathlib import Path

from simreal.deploy.g1 import links, ros2_state
from simreal.deploy.g1.messages import RobotState
from simreal.deploy.g1.node import DeployConfig, G1Node, load_g1_policy
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.robots.g1 import JOINT_NAMES

NODE_NAME = "simreal_policy"


def available() -> bool:
    """Whether rclpy (and so a ROS 2 installation) can be imported."""
    return importlib.util.find_spec("rclpy") is not None


class RclpyLink:
    name = "ROS 2 through rclpy (joint_states, imu, joint_commands)"
    has_tick = False

    def other_writers(self) -> list[str]:
        """Not checked through rclpy (the CycloneDDS links check it)."""
        return []

    def __init__(self, node, joint_names: tuple[str, ...]):
        from geometry_msgs.msg import Twist, WrenchStamped
        from rclpy.qos import (
            DurabilityPolicy,
            QoSProfile,
            ReliabilityPolicy,
            qos_profile_sensor_data,
        )
        from sensor_msgs.msg import Imu, JointState
        from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

        self.joint_names = joint_names
        self._lock = threading.Lock()
        self._joints: list = []
        self._imu = None
        self._commands: list[str] = []
        self._wrenches: list = []
        self._twists: list = []
        sensor = qos_profile_sensor_data
        node.create_subscription(JointState, ros2_state.JOINT_STATES[1:], self._on_joints, sensor)
        node.create_subscription(Imu, ros2_state.IMU[1:], self._on_imu, sensor)
        node.create_subscription(String, "simreal/command", self._on_command, 10)
        node.create_subscription(
            WrenchStamped, ros2_state.EXTERNAL_WRENCH[1:], self._on_wrench, sensor
        )
        node.create_subscription(Twist, links.CMD_VEL_TOPIC[1:], self._on_twist, 10)
        self._cmd_pub = node.create_publisher(
            Float64MultiArray, ros2_state.JOINT_COMMANDS[1:], sensor
        )
        latched = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        self._state_pub = node.create_publisher(String, ros2_state.NODE_STATE[1:], latched)
        self._msg = Float64MultiArray()
        self._msg.layout.dim = [
            MultiArrayDimension(label=a, size=b, stride=c)
            for a, b, c in ros2_state.command_layout(joint_names)
        ]
        self._string = String
        self.announce(ros2_state.LIFECYCLE["ZERO_TORQUE"])

    def _on_joints(self, msg) -> None:
        with self._lock:
            self._joints.append(msg)

    def _on_imu(self, msg) -> None:
        self._imu = msg

    def _on_command(self, msg) -> None:
        with self._lock:
            self._commands.append(msg.data)

    def _on_wrench(self, msg) -> None:
        f, m = msg.wrench.force, msg.wrench.torque
        with self._lock:
            self._wrenches.append(((f.x, f.y, f.z), (m.x, m.y, m.z)))

    def _on_twist(self, msg) -> None:
        with self._lock:
            self._twists.append(links.twist_command(msg.linear, msg.angular))

    def receive(self, now: float) -> tuple[RobotState | None, int]:
        with self._lock:
            joints, self._joints = self._joints, []
        return ros2_state.newest_state(joints, self._imu, self.joint_names)

    def send(self, cmd: MotorCommand, state: RobotState) -> None:
        self._msg.data = ros2_state.command_data(cmd)
        self._cmd_pub.publish(self._msg)

    def announce(self, lifecycle: str) -> None:
        self._state_pub.publish(self._string(data=lifecycle))

    def commands(self) -> list[str]:
        with self._lock:
            out, self._commands = self._commands, []
        return out

    def wrenches(self) -> list:
        with self._lock:
            out, self._wrenches = self._wrenches, []
        return out

    def velocity_commands(self) -> list:
        with self._lock:
            out, self._twists = self._twists, []
        return out


def main(policy_path: Path, cfg: DeployConfig) -> int:
    """Run `simreal_policy` until shut down; parameters override the command line's values."""
    import json

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    rclpy.init()
    node = rclpy.create_node(NODE_NAME)
    try:
        path = Path(node.declare_parameter("policy_path", str(policy_path)).value)
        robot = node.declare_parameter("robot", "g1").value
        if robot != "g1":
            raise ValueError(f"parameter robot={robot!r}: only g1 is supported")
        policy = load_g1_policy(path)
        control_dt = policy.metadata.control_dt
        control_hz = node.declare_parameter("control_rate_hz", 1.0 / control_dt).value
        if abs(control_hz * control_dt - 1.0) > 1e-9:
            raise ValueError(
                f"parameter control_rate_hz={control_hz}: the policy runs at {1.0 / control_dt:g} Hz"
            )
        timeout_ms = cfg.safety.state_timeout_s * 1e3
        cfg = dataclasses.replace(
            cfg,
            rate_hz=float(node.declare_parameter("rate_hz", cfg.rate_hz).value),
            safety=dataclasses.replace(
                cfg.safety,
                state_timeout_s=node.declare_parameter("state_timeout_ms", timeout_ms).value / 1e3,
            ),
        )
        link = RclpyLink(node, JOINT_NAMES)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        threading.Thread(target=executor.spin, name="rclpy", daemon=True).start()
        g1 = G1Node(policy, cfg, open_link=lambda _: contextlib.nullcontext(link))
        print(json.dumps(g1.run()), flush=True)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    return 0
