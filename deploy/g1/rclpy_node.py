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

Domain, arguments, DDS: `main` makes its own rclpy context on `DeployConfig.domain_id`
(`--domain`, else `ROS_DOMAIN_ID`: `ros2_state.ros_domain_id`) and hands rclpy the
command line's `--ros-args` (parameters, remapping, namespace: `-r __ns:=/g1`). Before
any DDS, `check_ros2_config` refuses a node that would discover peers on every network
interface, as `dds.check_dds_config` refuses CycloneDDS without CYCLONEDDS_URI.

Installing: `pip install 'simreal[ros2]'` (ROS 2 Jazzy's wheels) or a ROS 2 installation.
The wheels' shared libraries are found through LD_LIBRARY_PATH, which no process can
change for itself once started; their `ros-wheels-bootstrapper` (a .pth file) sets it and
re-runs the interpreter at start-up, so nothing is sourced and no variable is set here.
RMW_IMPLEMENTATION unset means rmw_fastrtps_cpp, the one the wheels carry; no
AMENT_PREFIX_PATH is needed. Where the import still fails, `import_error` says why and
the deploy command falls back to CycloneDDS with that reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from simreal.deploy.g1 import links, ros2_state
from simreal.deploy.g1.messages import RobotState
from simreal.deploy.g1.node import DeployConfig, G1Node, load_g1_policy
from simreal.deploy.g1.safety import check_rate, check_state_timeout
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.robots.g1 import JOINT_NAMES

NODE_NAME = "simreal_policy"
EXTRA = "pip install 'simreal[ros2]'"
"""What installs rclpy (ROS 2 Jazzy's wheels), named wherever rclpy is missing."""
LOOPBACK_PROFILE = Path(__file__).resolve().parents[2] / "dds" / "fastdds_loopback.xml"
"""The project's Fast DDS profile that keeps rclpy on 127.0.0.1 (in a source checkout)."""
PROFILE_VARIABLES = ("FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE")
"""Where Fast DDS reads its default profile: 2.x (ROS 2 Jazzy), 3.x (later ROS 2)."""


class Ros2ConfigError(ValueError):
    """The node would discover peers on every network interface, or its ROS 2 arguments
    or parameters are not valid; raised before any DDS participant exists."""


def import_error() -> str | None:
    """None where rclpy and the messages the node uses import; otherwise why not (not
    installed, or its libraries not found)."""
    try:
        import geometry_msgs.msg  # noqa: F401
        import rclpy  # noqa: F401
        import sensor_msgs.msg  # noqa: F401
        import std_msgs.msg  # noqa: F401
    except ImportError as err:
        return str(err) or type(err).__name__
    return None


def _profile_hint() -> str:
    """Where the project's loopback profile is: this checkout's, or the project root's."""
    if LOOPBACK_PROFILE.is_file():
        return f"{LOOPBACK_PROFILE} (the project's dds/fastdds_loopback.xml)"
    return "$PWD/dds/fastdds_loopback.xml (from the project root)"


def check_ros2_config(env: Mapping[str, str] = os.environ) -> str:
    """What keeps the node's DDS local (returned for the record), or Ros2ConfigError.

    Accepted: a Fast DDS profile (`PROFILE_VARIABLES`, a file that exists; the project's
    is `dds/fastdds_loopback.xml`: UDP on 127.0.0.1 only), `ROS_AUTOMATIC_DISCOVERY_RANGE=
    LOCALHOST` or `ROS_LOCALHOST_ONLY=1` (discovery among this host's nodes only; their
    sockets still bind every interface, see docs/deploy.md), and for
    `RMW_IMPLEMENTATION=rmw_cyclonedds_cpp` (a ROS 2 installation) CYCLONEDDS_URI in place
    of the profile. With none, Fast DDS discovers peers by multicast on every interface."""
    rmw = env.get("RMW_IMPLEMENTATION", "").strip() or "rmw_fastrtps_cpp"
    for var in PROFILE_VARIABLES if rmw.startswith("rmw_fastrtps") else ():
        path = env.get(var, "").strip()
        if path:
            if not Path(path).is_file():
                raise Ros2ConfigError(f"{var} names {path}, which is not a file")
            return f"{var}={path}"
    if env.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "").strip().upper() == "LOCALHOST":
        return "ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"
    if env.get("ROS_LOCALHOST_ONLY", "").strip() == "1":
        return "ROS_LOCALHOST_ONLY=1"
    if rmw == "rmw_cyclonedds_cpp":
        uri = env.get("CYCLONEDDS_URI", "").strip()
        entries = [e.strip() for e in uri.split(",") if e.strip()]
        missing = [e for e in entries if e.startswith("file://") and not Path(e[7:]).is_file()]
        if entries and not missing:
            return f"CYCLONEDDS_URI={uri}"
    raise Ros2ConfigError(
        "no Fast DDS profile (FASTRTPS_DEFAULT_PROFILES_FILE) and no "
        "ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, so rclpy's DDS would discover peers by "
        "multicast on every network interface. For tests and local runs keep it on "
        f"loopback: export FASTRTPS_DEFAULT_PROFILES_FILE={_profile_hint()}. On a robot, "
        "point it at a profile that names the robot's network interface (or, with "
        "RMW_IMPLEMENTATION=rmw_cyclonedds_cpp, set CYCLONEDDS_URI)."
    )


def _number_parameter(node, name: str, default: float) -> float:
    """A numeric parameter that takes `-p NAME:=250` as well as `250.0` (rclpy would
    refuse an integer for a double), refused unless finite."""
    from rcl_interfaces.msg import ParameterDescriptor

    value = node.declare_parameter(
        name, float(default), ParameterDescriptor(dynamic_typing=True)
    ).value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Ros2ConfigError(f"parameter {name}={value!r}: expected a finite number")
    return float(value)


class RclpyLink:
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
        joints = node.create_subscription(
            JointState, ros2_state.JOINT_STATES[1:], self._on_joints, sensor
        )
        imu = node.create_subscription(Imu, ros2_state.IMU[1:], self._on_imu, sensor)
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
        self.name = (
            f"ROS 2 through rclpy as {node.get_fully_qualified_name()} ({joints.topic_name}, "
            f"{imu.topic_name} in; {self._cmd_pub.topic_name} out)"
        )
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


def main(policy_path: Path, cfg: DeployConfig, ros_args: Sequence[str] = ()) -> int:
    """Run `simreal_policy` on DDS domain `cfg.domain_id` until shut down; `ros_args`
    (`--ros-args ...`) go to rclpy, and parameters override the command line's values.
    Call `check_ros2_config` first."""
    import json

    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    context = Context()
    node = executor = spinning = None
    try:
        try:
            rclpy.init(
                args=["simreal", *ros_args],
                context=context,
                domain_id=cfg.domain_id,
                # The node's own SIGINT/SIGTERM handling damps the robot first; rclpy's
                # would shut the context down under it, before the damping is sent.
                signal_handler_options=SignalHandlerOptions.NO,
            )
            node = rclpy.create_node(NODE_NAME, context=context)
        except RuntimeError as err:  # rcl's parse errors (RCLError, UnknownROSArgsError)
            raise Ros2ConfigError(
                f"rclpy refused {' '.join(ros_args) or 'to start'}: {err}"
            ) from None
        path = Path(node.declare_parameter("policy_path", str(policy_path)).value)
        robot = node.declare_parameter("robot", "g1").value
        if robot != "g1":
            raise Ros2ConfigError(f"parameter robot={robot!r}: only g1 is supported")
        policy = load_g1_policy(path)
        control_dt = policy.metadata.control_dt
        control_hz = _number_parameter(node, "control_rate_hz", 1.0 / control_dt)
        if abs(control_hz * control_dt - 1.0) > 1e-9:
            raise Ros2ConfigError(
                f"parameter control_rate_hz={control_hz:g}: the policy runs at {1.0 / control_dt:g} Hz"
            )
        timeout_ms = _number_parameter(node, "state_timeout_ms", cfg.safety.state_timeout_s * 1e3)
        cfg = dataclasses.replace(
            cfg,
            domain_id=context.get_domain_id(),
            rate_hz=check_rate(
                _number_parameter(node, "rate_hz", cfg.rate_hz), "parameter rate_hz"
            ),
            safety=dataclasses.replace(
                cfg.safety,
                state_timeout_s=check_state_timeout(timeout_ms / 1e3, "parameter state_timeout_ms"),
            ),
        )
        link = RclpyLink(node, JOINT_NAMES)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        spinning = threading.Thread(target=executor.spin, name="rclpy", daemon=True)
        spinning.start()
        g1 = G1Node(policy, cfg, open_link=lambda _: contextlib.nullcontext(link))
        print(json.dumps(g1.run()), flush=True)
    finally:  # the executor stops before the node it spins goes
        if executor is not None:
            executor.shutdown(timeout_sec=2.0)
        if spinning is not None:
            spinning.join(timeout=2.0)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown(context=context)
    return 0
