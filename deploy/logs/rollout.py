"""`RolloutLog`: one robot rollout as a rosbag2 directory, the same for simulation and hardware.

Evaluation (`simreal eval --log`), the virtual robot and the deploy node all log
through this class, so replay, plots, re-simulation and calibration read one format.
Times are seconds since the log's start `t`; every message is stamped (header and
bag timestamp alike) `meta.start_time_ns + t`. In simulation `t` is simulated time.

Topics (each declared on its first message):

| topic | ROS 2 type | content |
|---|---|---|
| `/simreal/meta` | std_msgs/msg/String | `LogMeta` as JSON, once at t = 0 (transient local) |
| `/joint_states` | sensor_msgs/msg/JointState | measured joints in hardware order, SI units; a field the robot does not measure is empty. A drone's joints are its motors: velocity = rotor speed (rad/s), position and effort empty |
| `/imu` | sensor_msgs/msg/Imu | frame `base`: orientation (world from base), angular velocity (body frame, rad/s), specific force (m/s^2; covariance[0] = -1 where unknown) |
| `/base_pose` | geometry_msgs/msg/PoseStamped | frame `world`: base position and orientation |
| `/base_twist` | geometry_msgs/msg/TwistStamped | frame `world`: base linear and angular velocity |
| `/policy/observation` | std_msgs/msg/Float32MultiArray | the policy input; dim label `term:size,...` in observation order |
| `/policy/action` | std_msgs/msg/Float32MultiArray | the policy output before clipping and scaling; dim label the action names |
| `/lowcmd` | std_msgs/msg/Float64MultiArray | the low-level command sent, shape (joints, fields): dim 0 label the joint names, dim 1 label the command fields (a drone: `rpm`; the G1: `q,dq,kp,kd,tau`). Float64 so that open-loop replay reproduces a simulated rollout exactly |
| `/sim/odom` | nav_msgs/msg/Odometry | the virtual robot's ground truth (`simreal sim-robot --log`): frame `world`, child `pelvis`; pose of the pelvis and its twist, both in the world frame (linear velocity of the pelvis origin, angular velocity) |
| `/wrench` | geometry_msgs/msg/WrenchStamped | frame `world`: external force and torque on the base at its centre of mass, where known |
| `/task_signals` | std_msgs/msg/Float32MultiArray | the task's key quantities (`simreal.tasks.signals`, simulation only); dim label their names, each ending in its unit |
| `/loop_timing` | std_msgs/msg/Float32MultiArray | `period_s,compute_s`: time since the previous control step (log time base) and wall time spent computing this one |

Multi-array dim labels list the names along the dim, comma-separated, `name:size` where
an entry spans more than one element (`messages.labels`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simreal.deploy.logs import encode
from simreal.deploy.logs import messages as msg
from simreal.deploy.logs.rosbag2 import LATCHED, STREAM, Qos, Rosbag2Writer

LOG_FORMAT = 1
"""Version of the topic layout and of LogMeta; a reader refuses newer logs."""

META_TOPIC = "/simreal/meta"

TOPICS: dict[str, tuple[str, Qos]] = {
    META_TOPIC: ("std_msgs/msg/String", LATCHED),
    "/joint_states": ("sensor_msgs/msg/JointState", STREAM),
    "/imu": ("sensor_msgs/msg/Imu", STREAM),
    "/base_pose": ("geometry_msgs/msg/PoseStamped", STREAM),
    "/base_twist": ("geometry_msgs/msg/TwistStamped", STREAM),
    "/policy/observation": ("std_msgs/msg/Float32MultiArray", STREAM),
    "/policy/action": ("std_msgs/msg/Float32MultiArray", STREAM),
    "/lowcmd": ("std_msgs/msg/Float64MultiArray", STREAM),
    "/sim/odom": ("nav_msgs/msg/Odometry", STREAM),
    "/wrench": ("geometry_msgs/msg/WrenchStamped", STREAM),
    "/loop_timing": ("std_msgs/msg/Float32MultiArray", STREAM),
    "/task_signals": ("std_msgs/msg/Float32MultiArray", STREAM),
}


@dataclass(frozen=True)
class LogMeta:
    """What a reader needs to interpret a rollout, stored as JSON on `/simreal/meta`."""

    robot: str
    joint_names: tuple[str, ...]
    """Hardware order: the order of /joint_states and of /lowcmd's first dim."""
    control_dt: float
    command_fields: tuple[str, ...]
    """Fields of /lowcmd per joint, e.g. ("rpm",) or ("q", "dq", "kp", "kd", "tau")."""
    command_tracks: tuple[str, float] = ("position", 1.0)
    """JointState field set by the first command field, and one command unit in its SI
    unit: a drone's RPM command sets rotor velocity at 2 pi / 60 rad/s per RPM."""
    observation_names: tuple[tuple[str, int], ...] = ()
    action_names: tuple[str, ...] = ()
    signal_names: tuple[str, ...] = ()
    """Entries of /task_signals, in order."""
    task: str = ""
    task_config: dict[str, Any] | None = None
    """The task's config as plain data, enough to rebuild the simulated scene."""
    source: str = "sim"
    """`sim` (simreal eval), `virtual-robot` or `robot`."""
    engine: str = ""
    mjcf: str = ""
    """The robot's (nominal) MuJoCo model, for rendering the logged motion."""
    initial_state: dict[str, list[float]] | None = None
    """Simulator state at t = 0 (`qpos`, `qvel`, `act`), where the rollout was simulated."""
    policy: str = ""
    start_time_ns: int = 0
    """Time stamp of t = 0 (ns since the epoch)."""
    format: int = LOG_FORMAT

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> LogMeta:
        """Parse; keys from a newer writer that this class does not know are ignored."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("log meta is not a JSON object")
        if data.get("format", 0) > LOG_FORMAT:
            raise ValueError(
                f"log format {data['format']} is newer than this simreal reads ({LOG_FORMAT})"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        data = {k: v for k, v in data.items() if k in names}
        tuples = ("joint_names", "command_fields", "command_tracks", "action_names", "signal_names")
        for key in tuples:
            if key in data:
                data[key] = tuple(data[key])
        if "observation_names" in data:
            data["observation_names"] = tuple((n, int(s)) for n, s in data["observation_names"])
        return cls(**data)


class RolloutLog:
    """Writes one rollout to the rosbag2 directory `path` (which must not hold files yet).

    Use as a context manager (the bag is closed, and published, even when the rollout
    fails) or call `close`. Arrays are per robot, unbatched; quaternions (w, x, y, z).
    """

    def __init__(self, path: str | os.PathLike[str], meta: LogMeta) -> None:
        if not meta.start_time_ns:
            meta = dataclasses.replace(meta, start_time_ns=time.time_ns())
        self.meta = meta
        custom = {"simreal_log_format": str(LOG_FORMAT), "robot": meta.robot, "task": meta.task}
        self.bag = Rosbag2Writer(path, custom_data=custom)
        self.path = Path(path)
        obs_names = meta.observation_names
        self._obs_label = msg.labels(obs_names) if obs_names else ""
        self._write(META_TOPIC, msg.string(meta.to_json()), 0.0)

    def time_ns(self, t: float) -> int:
        return self.meta.start_time_ns + round(t * 1e9)

    def _write(self, topic: str, message: dict | bytes, t: float) -> None:
        """Write a message given as a dict, or as CDR bytes from `encode`."""
        if topic not in self.bag.topics:
            self.bag.add_topic(topic, *TOPICS[topic])
        if isinstance(message, bytes):
            self.bag.write_serialized(topic, message, self.time_ns(t))
        else:
            self.bag.write(topic, message, self.time_ns(t))

    def joint_state(self, t: float, position=None, velocity=None, effort=None) -> None:
        """Measured joints (n_joints,) each, hardware order; None where not measured."""
        names = self.meta.joint_names
        for field, values in (("position", position), ("velocity", velocity), ("effort", effort)):
            if values is not None and np.size(values) != len(names):
                raise ValueError(f"joint {field}: {np.size(values)} values for {len(names)} joints")
        message = encode.joint_state(self.time_ns(t), names, position, velocity, effort)
        self._write("/joint_states", message, t)

    def imu(self, t: float, orientation, angular_velocity, linear_acceleration=None) -> None:
        """Orientation (w, x, y, z), body-frame rates (rad/s), specific force (m/s^2) or None."""
        message = encode.imu(
            self.time_ns(t), "base", orientation, angular_velocity, linear_acceleration
        )
        self._write("/imu", message, t)

    def base_pose(self, t: float, position, orientation) -> None:
        self._write(
            "/base_pose", msg.pose_stamped(self.time_ns(t), "world", position, orientation), t
        )

    def base_twist(self, t: float, linear, angular) -> None:
        """World-frame linear (m/s) and angular (rad/s) velocity of the base."""
        self._write("/base_twist", msg.twist_stamped(self.time_ns(t), "world", linear, angular), t)

    def odometry(self, t: float, position, orientation, linear, angular) -> None:
        """Ground truth of the base (pelvis): world-frame position, orientation (w, x, y,
        z), linear and angular velocity. The twist is in the world frame, not the child
        frame nav_msgs suggests, so that it reads directly against the commanded path."""
        message = msg.odometry(
            self.time_ns(t), "world", "pelvis", position, orientation, linear, angular
        )
        self._write("/sim/odom", message, t)

    def wrench(self, t: float, force, torque) -> None:
        """External wrench on the base at its centre of mass, world frame (N, N m)."""
        self._write("/wrench", msg.wrench_stamped(self.time_ns(t), "world", force, torque), t)

    def observation(self, t: float, obs) -> None:
        obs = np.ravel(obs)
        label = self._obs_label or f"observation:{obs.size}"
        self._write("/policy/observation", encode.multi_array(obs, [label], "<f4"), t)

    def action(self, t: float, action) -> None:
        action = np.ravel(action)
        names = self.meta.action_names
        label = msg.labels(names) if len(names) == action.size else f"action:{action.size}"
        self._write("/policy/action", encode.multi_array(action, [label], "<f4"), t)

    def command(self, t: float, command) -> None:
        """The low-level command sent: (n_joints,) or (n_joints, n_fields) in hardware units."""
        fields = self.meta.command_fields
        command = np.asarray(command, dtype=np.float64).reshape(len(self.meta.joint_names), -1)
        if command.shape[1] != len(fields):
            raise ValueError(
                f"command has {command.shape[1]} fields per joint; meta lists {fields}"
            )
        dims = [msg.labels(self.meta.joint_names), msg.labels(fields)]
        self._write("/lowcmd", encode.multi_array(command, dims, "<f8"), t)

    def task_signals(self, t: float, values) -> None:
        """The task's signals (meta.signal_names, in order) at time `t`."""
        values = np.ravel(values)
        names = self.meta.signal_names
        if values.size != len(names):
            raise ValueError(f"task signals: {values.size} values for {len(names)} names")
        self._write("/task_signals", encode.multi_array(values, [msg.labels(names)], "<f4"), t)

    def loop_timing(self, t: float, period_s: float, compute_s: float) -> None:
        self._write(
            "/loop_timing",
            encode.multi_array([period_s, compute_s], ["period_s,compute_s"], "<f4"),
            t,
        )

    def close(self) -> Path:
        return self.bag.close()

    def __enter__(self) -> RolloutLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
