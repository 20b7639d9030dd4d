"""The deploy node as ROS 2 node `simreal_policy` through rclpy (the `ros2` extra: ROS 2
Jazzy's wheels, Fast DDS as the RMW), against the virtual G1 behind ROS 2 topics
(CycloneDDS), with a test-side rclpy node commanding `/cmd_vel` and reading
`/joint_states`, `simreal_policy/state` and the robot's ground truth on `/sim/odom`.

Every rclpy participant stays on 127.0.0.1: tests/conftest.py points Fast DDS at
dds/fastdds_loopback.xml (FASTRTPS_DEFAULT_PROFILES_FILE) as it points CycloneDDS at
dds/loopback.xml; `test_fastdds_profile_keeps_rclpy_on_loopback` and the walking test
check the sockets a node really opened. Each test has its own DDS domain.

CI installs the extra, so there a missing rclpy fails this file instead of skipping it.
No test asserts wall times (the machine is shared); every wait is bounded and generous,
and the walking test waits for distance, not for a time.
"""

import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

if os.environ.get("CI"):
    import rclpy  # CI installs the ros2 extra: there rclpy must import, never skip
else:
    rclpy = pytest.importorskip("rclpy", reason="needs the ros2 extra: pip install -e '.[ros2]'")

from _procs import Proc, domain, g1_node, virtual_g1
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rcl_interfaces.srv import GetParameters
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import parameter_value_to_python
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from simreal import cli
from simreal.deploy.dds import ros2 as msgs
from simreal.deploy.g1 import rclpy_node, ros2_state
from simreal.robots.g1 import JOINT_NAMES

ROOT = Path(__file__).resolve().parents[2]
WALK = ROOT / "results" / "g1-walk" / "policy.onnx"
"""The headline g1-walk policy (walks on /cmd_vel: vx -0.6..1.0 m/s)."""
WALK_VX = 0.5
"""Commanded forward speed (m/s)."""
WALK_AT_LEAST_M = 1.0
"""Forward distance (ground truth) the robot must cover; the policy tracks about 0.94 of
the command, so this is about 2 s of simulated walking after the band lets go."""
START_S = 180.0
"""Bound on starting a process or seeing it in the graph: a loaded 2-core machine takes
tens of seconds to import and load a policy."""


def udp_addresses(pid: int) -> list[str]:
    """The local addresses (ip:port) of every UDP socket process `pid` has open, from
    /proc (its descriptors' socket inodes against the kernel's UDP tables)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, family in (("udp", socket.AF_INET), ("udp6", socket.AF_INET6)):
        with open(f"/proc/net/{table}") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[9] not in inodes:
                    continue
                address, port = fields[1].split(":")
                raw = bytes.fromhex(address)
                if family == socket.AF_INET:
                    raw = raw[::-1]  # the kernel prints the 32-bit word little-endian
                else:
                    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                found.append(f"{socket.inet_ntop(family, raw)}:{int(port, 16)}")
    return found


def assert_loopback_only(pid: int) -> list[str]:
    """Every UDP socket of `pid` is bound to 127.0.0.1 (no 0.0.0.0, no other interface's
    address, no multicast group), and it has some."""
    addresses = udp_addresses(pid)
    assert addresses, f"process {pid} has no UDP socket: is it a DDS participant?"
    elsewhere = [a for a in addresses if not a.startswith("127.0.0.1:")]
    assert not elsewhere, f"sockets beyond loopback: {elsewhere} (all: {addresses})"
    return addresses


class RosPeer:
    """A test-side rclpy node on DDS domain `dom`, spun in a thread: publishes Twist on
    `NS/cmd_vel`; collects the robot's `/sim/odom` and `/joint_states` and the deploy
    node's `NS/simreal_policy/state` (latched: a late subscriber still gets the last)."""

    def __init__(self, dom: int, ns: str = "/"):
        self.ns = ns
        self.context = Context()
        rclpy.init(context=self.context, domain_id=dom)
        self.node = rclpy.create_node("simreal_test_peer", context=self.context)
        self.lock = threading.Lock()
        self.odom: list[tuple[float, float, float]] = []
        self.joint_names: list[str] = []
        self.states: list[str] = []
        sensor = qos_profile_sensor_data
        latched = QoSProfile(
            depth=10,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        self.node.create_subscription(Odometry, "/sim/odom", self._on_odom, sensor)
        self.node.create_subscription(JointState, "/joint_states", self._on_joints, sensor)
        self.node.create_subscription(String, f"{ns}simreal_policy/state", self._on_state, latched)
        self.cmd_vel = self.node.create_publisher(Twist, f"{ns}cmd_vel", 10)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _on_odom(self, msg) -> None:
        p = msg.pose.pose.position
        with self.lock:
            self.odom.append((p.x, p.y, p.z))

    def _on_joints(self, msg) -> None:
        with self.lock:
            self.joint_names = list(msg.name)

    def _on_state(self, msg) -> None:
        with self.lock:
            self.states.append(msg.data)

    def wait(self, what: str, check, timeout_s: float = START_S, every=None):
        """Poll `check()` (calling `every()` between polls) until it is truthy; fail
        naming `what` and what was seen if it never is."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            with self.lock:
                got = check()
            if got:
                return got
            if every:
                every()
            time.sleep(0.05)
        raise AssertionError(
            f"no {what} within {timeout_s:g} s; states {self.states}, "
            f"{len(self.odom)} odometry samples, joints {len(self.joint_names)}"
        )

    def sees_node(self, name: str, namespace: str) -> bool:
        return (name, namespace) in self.node.get_node_names_and_namespaces()

    def send(self, vx: float) -> None:
        twist = Twist()
        twist.linear.x = vx
        self.cmd_vel.publish(twist)

    def parameter(self, node: str, name: str, timeout_s: float = 60.0):
        """A parameter's value as the node's own parameter service reports it."""
        client = self.node.create_client(GetParameters, f"{node}/get_parameters")
        try:
            assert client.wait_for_service(timeout_sec=timeout_s), f"no {node}/get_parameters"
            future = client.call_async(GetParameters.Request(names=[name]))
            end = time.monotonic() + timeout_s
            while not future.done() and time.monotonic() < end:
                time.sleep(0.05)
            assert future.done(), f"{node}/get_parameters did not answer"
            return parameter_value_to_python(future.result().values[0])
        finally:
            self.node.destroy_client(client)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=2.0)
        self.thread.join(timeout=2.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)

    def __enter__(self) -> "RosPeer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def deploy_error(capsys, *args: str) -> str:
    """`simreal deploy` with the walking policy refused (exit 2): its error line."""
    code = cli.main(["deploy", str(WALK), "--robot", "g1", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


def no_dds_config(monkeypatch) -> None:
    """Neither DDS may start now: an error that got as far as DDS would be about this."""
    for var in (*rclpy_node.PROFILE_VARIABLES, "CYCLONEDDS_URI", "ROS_DOMAIN_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
    monkeypatch.delenv("ROS_LOCALHOST_ONLY", raising=False)


def test_domain_conflicting_with_ros_domain_id_is_refused_naming_both(monkeypatch, capsys):
    no_dds_config(monkeypatch)
    monkeypatch.setenv("ROS_DOMAIN_ID", "7")
    err = deploy_error(capsys, "--transport", "ros2", "--domain", "9")
    assert "--domain 9 conflicts with ROS_DOMAIN_ID=7" in err
    assert "FASTRTPS" not in err and "CYCLONEDDS_URI" not in err  # before any DDS
    monkeypatch.setenv("ROS_DOMAIN_ID", "300")
    assert "ROS_DOMAIN_ID=300: expected 0-232" in deploy_error(capsys, "--transport", "ros2")
    monkeypatch.setenv("ROS_DOMAIN_ID", "seven")
    assert "ROS_DOMAIN_ID='seven'" in deploy_error(capsys, "--transport", "ros2")
    monkeypatch.delenv("ROS_DOMAIN_ID")
    err = deploy_error(capsys, "--transport", "ros2", "--domain", "233")
    assert "--domain 233: expected 0-232" in err


def test_ros_domain_id_is_the_default_domain():
    assert ros2_state.ros_domain_id(None, {"ROS_DOMAIN_ID": " 7 "}) == 7
    assert ros2_state.ros_domain_id(7, {"ROS_DOMAIN_ID": "7"}) == 7
    assert ros2_state.ros_domain_id(None, {}) == 0
    assert ros2_state.ros_domain_id(12, {"ROS_DOMAIN_ID": ""}) == 12


def test_rclpy_node_refuses_to_start_without_a_loopback_profile(monkeypatch, capsys, tmp_path):
    no_dds_config(monkeypatch)
    err = deploy_error(capsys, "--transport", "ros2", "--domain", "5")
    assert "FASTRTPS_DEFAULT_PROFILES_FILE" in err and "fastdds_loopback.xml" in err
    missing = tmp_path / "nowhere.xml"
    monkeypatch.setenv("FASTRTPS_DEFAULT_PROFILES_FILE", str(missing))
    err = deploy_error(capsys, "--transport", "ros2", "--domain", "5")
    assert f"FASTRTPS_DEFAULT_PROFILES_FILE names {missing}, which is not a file" in err
    monkeypatch.delenv("FASTRTPS_DEFAULT_PROFILES_FILE")
    for env, said in (
        ({"ROS_AUTOMATIC_DISCOVERY_RANGE": "localhost"}, "ROS_AUTOMATIC_DISCOVERY_RANGE"),
        ({"ROS_LOCALHOST_ONLY": "1"}, "ROS_LOCALHOST_ONLY=1"),
        ({"FASTDDS_DEFAULT_PROFILES_FILE": str(rclpy_node.LOOPBACK_PROFILE)}, "FASTDDS_"),
    ):
        assert said in rclpy_node.check_ros2_config(env)
    cyclone = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    profile = {"FASTRTPS_DEFAULT_PROFILES_FILE": str(rclpy_node.LOOPBACK_PROFILE)}
    with pytest.raises(rclpy_node.Ros2ConfigError):  # Cyclone's RMW reads no Fast DDS profile
        rclpy_node.check_ros2_config({**cyclone, **profile})
    uri = "file://" + str(ROOT / "dds" / "loopback.xml")
    assert rclpy_node.check_ros2_config({**cyclone, "CYCLONEDDS_URI": uri}).endswith(uri)


def test_ros_args_are_split_off_and_refused_where_nothing_takes_them(capsys):
    argv = ["deploy", "p.onnx", "--ros-args", "-r", "__ns:=/g1", "--", "--robot", "g1"]
    assert cli.split_ros_args(argv) == (
        ["deploy", "p.onnx", "--robot", "g1"],
        ["--ros-args", "-r", "__ns:=/g1"],
    )
    err = deploy_error(capsys, "--transport", "dds", "--ros-args", "-p", "rate_hz:=250")
    assert "--ros-args: only --transport ros2" in err
    err = deploy_error(capsys, "--transport", "ros2", "--no-rclpy", "--ros-args", "-p", "a:=1")
    assert "--no-rclpy" in err
    err = deploy_error(
        capsys, "--transport", "ros2", "--domain", "5", "--ros-args", "-r", "__ns:=g1"
    )
    assert "rclpy refused --ros-args -r __ns:=g1" in err  # not a fully qualified namespace


def test_without_rclpy_the_node_falls_back_to_cyclonedds_naming_the_extra(monkeypatch, capsys):
    """With rclpy unimportable (None in sys.modules: Python's own way to block an import)
    `--transport ros2` runs over CycloneDDS, and says so naming the extra."""
    monkeypatch.setitem(sys.modules, "rclpy", None)
    err = deploy_error(capsys, "--transport", "ros2", "--ros-args", "-p", "rate_hz:=250")
    assert "--ros-args need rclpy" in err and "pip install 'simreal[ros2]'" in err
    code = cli.main(
        ["deploy", str(WALK), "--robot", "g1", "--transport", "ros2", "--duration", "0.3",
         "--domain", str(domain())]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "rclpy is not importable" in err and "pip install 'simreal[ros2]'" in err
    assert "ROS 2 over CycloneDDS" in out


def test_odometry_on_the_wire_is_ros2s_own():
    """The virtual robot's /sim/odom (cyclonedds) and rclpy's nav_msgs/Odometry read each
    other's CDR as the same message, of the same length. (Not compared byte for byte:
    rclpy's serializer leaves alignment padding unwritten, whatever the buffer held.)"""
    ours = msgs.Odometry(
        header=msgs.Header(stamp=msgs.Time(sec=12, nanosec=345), frame_id="world"),
        child_frame_id="pelvis",
        pose=msgs.PoseWithCovariance(
            pose=msgs.Pose(msgs.Point(1.0, -2.0, 0.79), msgs.Quaternion(0.0, 0.1, 0.0, 0.99)),
            covariance=[float(i) for i in range(36)],
        ),
        twist=msgs.TwistWithCovariance(
            twist=msgs.Twist(msgs.Vector3(0.5, 0.0, 0.01), msgs.Vector3(0.0, 0.0, 0.2))
        ),
    )
    theirs = Odometry()
    theirs.header.stamp.sec, theirs.header.stamp.nanosec = 12, 345
    theirs.header.frame_id, theirs.child_frame_id = "world", "pelvis"
    pose = theirs.pose.pose
    pose.position.x, pose.position.y, pose.position.z = 1.0, -2.0, 0.79
    pose.orientation.x, pose.orientation.y, pose.orientation.z = 0.0, 0.1, 0.0
    pose.orientation.w = 0.99
    theirs.pose.covariance = [float(i) for i in range(36)]
    theirs.twist.twist.linear.x, theirs.twist.twist.linear.z = 0.5, 0.01
    theirs.twist.twist.angular.z = 0.2
    assert deserialize_message(ours.serialize(), Odometry) == theirs
    assert msgs.Odometry.deserialize(serialize_message(theirs)) == ours
    assert len(serialize_message(theirs)) == len(ours.serialize())


def test_fastdds_profile_keeps_rclpy_on_loopback():
    """An rclpy node with the project's Fast DDS profile (conftest) binds every UDP
    socket to 127.0.0.1: no 0.0.0.0, no other interface, no multicast listener."""
    code = (
        "import sys, time, rclpy\n"
        "from rclpy.context import Context\n"
        "from std_msgs.msg import String\n"
        "c = Context(); rclpy.init(context=c, domain_id=int(sys.argv[1]))\n"
        "n = rclpy.create_node('loopback_probe', context=c)\n"
        "n.create_publisher(String, 'chatter', 10)\n"
        "print('up', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(domain())], stdout=subprocess.PIPE, text=True
    )
    try:
        ready, _, _ = select.select([child.stdout], [], [], START_S)
        assert ready and child.stdout.readline().strip() == "up", "the rclpy child never came up"
        addresses = assert_loopback_only(child.pid)
        assert len(addresses) >= 3  # discovery and user-data unicast, the sender
    finally:
        child.kill()
        child.wait(timeout=30)


@pytest.mark.slow
def test_rclpy_node_walks_the_robot_on_cmd_vel_and_damps_when_it_stops():
    """`simreal deploy --transport ros2 --domain N` as node /simreal_policy on domain N:
    an rclpy node there sees it in the graph, the robot's 29 joint states, its state go
    active; Twist on /cmd_vel walks the robot forward (ground truth on /sim/odom); when
    the robot stops, the node's state goes to damping."""
    dom = domain()
    robot = virtual_g1(dom, "--interface", "ros2", "--band", "--band-release", "4",
                       duration_s=400)  # fmt: skip
    node: Proc | None = None
    try:
        with RosPeer(dom) as peer:
            node = g1_node(WALK, dom, "--transport", "ros2", "--auto-start", duration_s=400)
            ready = node.wait_for("deploy node ready", START_S)
            assert f"on DDS domain {dom} at 500 Hz: ROS 2 through rclpy as /simreal_policy" in ready
            assert_loopback_only(node.popen.pid)
            peer.wait("simreal_policy in the graph", lambda: peer.sees_node("simreal_policy", "/"))
            names = peer.wait("joint states", lambda: peer.joint_names)
            assert sorted(names) == sorted(JOINT_NAMES) and len(names) == 29
            peer.wait("active state", lambda: "active" in peer.states)
            robot.wait_for("band released", START_S)
            x0, y0, _ = peer.wait("odometry", lambda: peer.odom[-1] if peer.odom else None)
            x, y, z = peer.wait(
                f"{WALK_AT_LEAST_M} m forward",
                lambda: peer.odom[-1] if peer.odom[-1][0] - x0 >= WALK_AT_LEAST_M else None,
                timeout_s=300,
                every=lambda: peer.send(WALK_VX),
            )
            assert z > 0.5, f"fell: pelvis at {z:.2f} m"  # walked, not fell forward
            assert abs(y - y0) < x - x0
            robot_summary = robot.stop()
            line = node.wait_for("-> DAMPING", 60)
            peer.wait("damping state", lambda: "damping" in peer.states, timeout_s=60)
            states = list(peer.states)
    finally:
        robot.stop()
        node_summary = node.stop() if node else None
    assert "ACTIVE -> DAMPING (watchdog" in line
    assert states[-1] == "damping" and "active" in states
    assert robot_summary["fell_at_s"] is None and robot_summary["valid_commands"] > 500
    assert node_summary["commands_received"] > 10 and node_summary["bad_states"] == 0


@pytest.mark.slow
def test_rclpy_node_runs_under_a_namespace_with_ros_args():
    """`--ros-args -r __ns:=/g1 -p rate_hz:=250` and remapped robot topics: the node is
    /g1/simreal_policy at 250 Hz (its parameter service says so), drives the robot on
    the remapped /joint_states, /imu, /joint_commands, and publishes its state on
    /g1/simreal_policy/state."""
    dom = domain()
    robot = virtual_g1(dom, "--interface", "ros2", "--band", duration_s=400)
    node: Proc | None = None
    try:
        with RosPeer(dom, ns="/g1/") as peer:
            node = g1_node(
                WALK, dom, "--transport", "ros2", "--auto-start", "--ros-args",
                "-r", "__ns:=/g1", "-p", "rate_hz:=250", "-r", "joint_states:=/joint_states",
                "-r", "imu:=/imu", "-r", "joint_commands:=/joint_commands", duration_s=400,
            )  # fmt: skip
            ready = node.wait_for("deploy node ready", START_S)
            peer.wait(
                "/g1/simreal_policy in the graph", lambda: peer.sees_node("simreal_policy", "/g1")
            )
            assert peer.parameter("/g1/simreal_policy", "rate_hz") == 250
            peer.wait("active state", lambda: "active" in peer.states)
            robot_summary = robot.stop()
            peer.wait("damping state", lambda: "damping" in peer.states, timeout_s=60)
    finally:
        robot.stop()
        node_summary = node.stop() if node else None
    assert "at 250 Hz: ROS 2 through rclpy as /g1/simreal_policy" in ready
    assert "(/joint_states, /imu in; /joint_commands out)" in ready
    assert robot_summary["valid_commands"] > 100
    assert node_summary["policy_steps"] > 0 and node_summary["bad_states"] == 0
