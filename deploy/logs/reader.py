"""Reading a rollout log back into arrays, with the MCAP library and its ROS 2 decoder.

`read_rollout` returns the log's `LogMeta` and one time series per logged quantity;
time is seconds since the log's start. A directory that is not a readable rosbag2
log raises `LogReadError` naming the file at fault.

A log whose writer was killed (its `NAME.partial` directory, or NAME when only the
partial exists) or whose MCAP file was cut short is read up to its last complete chunk
(`recover.salvage_mcap`); `Rollout.recovery` then says what was read and how much was
lost.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from simreal.deploy.logs.recover import SalvageError, partial_dir, salvage_mcap
from simreal.deploy.logs.rollout import META_TOPIC, LogMeta

MCAP_MAGIC = b"\x89MCAP0\r\n"
"""An MCAP file starts and, once finished, ends with these bytes."""


class LogReadError(ValueError):
    """The path is not a readable simreal rollout log; the message names the file."""


class Series(NamedTuple):
    t: np.ndarray
    """(K,) seconds since the log's start."""
    values: np.ndarray
    """(K, ...) one row per message."""


@dataclass
class Rollout:
    """A rollout log in memory. `series` keys (present when logged):

    joint_position, joint_velocity, joint_effort (K, n_joints); imu_orientation (K, 4)
    wxyz; imu_angular_velocity, imu_linear_acceleration (K, 3), NaN rows where unknown;
    base_position, base_orientation (wxyz), base_linear_velocity, base_angular_velocity;
    observation (K, n_obs); action (K, n_act); command (K, n_joints, n_fields);
    odom_position, odom_orientation (wxyz), odom_linear_velocity, odom_angular_velocity
    (the virtual robot's ground truth, world frame); wrench (K, 6) force then torque; loop_timing (K, 2) period_s, compute_s.
    """

    path: Path
    meta: LogMeta
    topics: dict[str, tuple[str, int]]
    """topic -> (ROS 2 type, message count), from metadata.yaml."""
    duration_s: float
    series: dict[str, Series] = field(default_factory=dict)
    recovery: list[dict] = field(default_factory=list)
    """One report per MCAP file that was cut off (`recover.Salvage.report`); empty when
    the log was closed properly."""


def _xyz(v) -> list[float]:
    return [v.x, v.y, v.z]


def _wxyz(q) -> list[float]:
    return [q.w, q.x, q.y, q.z]


def _imu_acceleration(m) -> list[float]:
    unknown = m.linear_acceleration_covariance[0] == -1.0
    return [np.nan] * 3 if unknown else _xyz(m.linear_acceleration)


def _multi_array(m) -> np.ndarray:
    shape = [d.size for d in m.layout.dim] or [len(m.data)]
    return np.asarray(m.data, dtype=np.float64)[m.layout.data_offset :].reshape(shape)


ROWS = {
    "/joint_states": lambda m: {
        "joint_position": m.position,
        "joint_velocity": m.velocity,
        "joint_effort": m.effort,
    },
    "/imu": lambda m: {
        "imu_orientation": _wxyz(m.orientation),
        "imu_angular_velocity": _xyz(m.angular_velocity),
        "imu_linear_acceleration": _imu_acceleration(m),
    },
    "/base_pose": lambda m: {
        "base_position": _xyz(m.pose.position),
        "base_orientation": _wxyz(m.pose.orientation),
    },
    "/base_twist": lambda m: {
        "base_linear_velocity": _xyz(m.twist.linear),
        "base_angular_velocity": _xyz(m.twist.angular),
    },
    "/sim/odom": lambda m: {
        "odom_position": _xyz(m.pose.pose.position),
        "odom_orientation": _wxyz(m.pose.pose.orientation),
        "odom_linear_velocity": _xyz(m.twist.twist.linear),
        "odom_angular_velocity": _xyz(m.twist.twist.angular),
    },
    "/wrench": lambda m: {"wrench": _xyz(m.wrench.force) + _xyz(m.wrench.torque)},
    "/policy/observation": lambda m: {"observation": _multi_array(m)},
    "/policy/action": lambda m: {"action": _multi_array(m)},
    "/lowcmd": lambda m: {"command": _multi_array(m)},
    "/loop_timing": lambda m: {"loop_timing": _multi_array(m)},
    "/task_signals": lambda m: {"task_signals": _multi_array(m)},
}
"""Topic -> the series rows one decoded message contributes (empty lists are skipped)."""


REQUIRED_KEYS = (
    "storage_identifier",
    "relative_file_paths",
    "topics_with_message_count",
    "duration",
)


def read_metadata(path: Path) -> dict:
    """The `rosbag2_bagfile_information` mapping of the bag at `path`."""
    meta_file = path / "metadata.yaml"
    if not meta_file.is_file():
        what = "does not exist" if not path.exists() else "has no metadata.yaml"
        raise LogReadError(f"{path}: {what}; expected a rosbag2 directory written with --log")
    try:
        info = yaml.safe_load(meta_file.read_text())["rosbag2_bagfile_information"]
        missing = [key for key in REQUIRED_KEYS if key not in info]
    except (yaml.YAMLError, KeyError, TypeError) as err:
        raise LogReadError(f"{meta_file}: not rosbag2 metadata ({err!r})") from None
    if missing:
        raise LogReadError(f"{meta_file}: rosbag2 metadata lacks {', '.join(missing)}")
    if info.get("storage_identifier") != "mcap":
        raise LogReadError(f"{meta_file}: storage {info.get('storage_identifier')!r}, not mcap")
    return info


def finished(mcap_file: Path) -> bool:
    """Whether the MCAP file ends with its closing magic (its writer finished it)."""
    with mcap_file.open("rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() < 2 * len(MCAP_MAGIC):
            return False
        f.seek(-len(MCAP_MAGIC), os.SEEK_END)
        return f.read() == MCAP_MAGIC


def _messages(mcap_file: Path, recovery: list[dict]):
    """(topic, log_time, decoded message) in log-time order; a file cut off is read up
    to its last complete chunk and reported in `recovery`."""
    if finished(mcap_file):
        with mcap_file.open("rb") as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            for _, channel, message, decoded in reader.iter_decoded_messages(log_time_order=True):
                yield channel.topic, message.log_time, decoded
        return
    try:
        salvage = salvage_mcap(mcap_file)
    except SalvageError as err:
        raise LogReadError(str(err)) from None
    recovery.append(salvage.report())
    factory, decoders = DecoderFactory(), {}
    for message in salvage.messages:
        channel = salvage.channels[message.channel_id]
        decode = decoders.get(channel.id)
        if decode is None:
            schema = salvage.schemas[channel.schema_id]
            decode = decoders[channel.id] = factory.decoder_for(channel.message_encoding, schema)
        yield channel.topic, message.log_time, decode(message.data)


def read_rollout(path: str | os.PathLike[str]) -> Rollout:
    """Read the rollout log (rosbag2 directory) at `path`."""
    path = partial_dir(Path(path))
    info = read_metadata(path)
    topics = {
        t["topic_metadata"]["name"]: (t["topic_metadata"]["type"], t["message_count"])
        for t in info["topics_with_message_count"]
    }
    rows: dict[str, tuple[list[float], list]] = {}
    meta_text = None
    recovery: list[dict] = []
    counts: dict[str, int] = {}
    for name in info["relative_file_paths"]:
        mcap_file = path / Path(name).name
        try:
            for topic, log_time, decoded in _messages(mcap_file, recovery):
                counts[topic] = counts.get(topic, 0) + 1
                if topic == META_TOPIC:
                    meta_text = decoded.data
                    continue
                to_rows = ROWS.get(topic)
                if to_rows is None:
                    continue
                for key, value in to_rows(decoded).items():
                    if len(value):
                        t_list, v_list = rows.setdefault(key, ([], []))
                        t_list.append(log_time)
                        v_list.append(value)
        except LogReadError:
            raise
        except (FileNotFoundError, PermissionError) as err:
            raise LogReadError(f"{mcap_file}: cannot read ({err.strerror})") from None
        except Exception as err:  # the MCAP and CDR layers raise many unrelated types
            raise LogReadError(f"{mcap_file}: corrupt or truncated MCAP file ({err!r})") from None
    if meta_text is None and recovery:
        raise LogReadError(
            f"{recovery[0]['file']}: truncated before its first complete chunk "
            f"({recovery[0]['note']}); nothing to replay"
        )
    if meta_text is None:
        raise LogReadError(f"{path}: no {META_TOPIC} message; not a simreal rollout log")
    try:
        meta = LogMeta.from_json(meta_text)
    except (ValueError, TypeError) as err:
        raise LogReadError(f"{path}: unreadable {META_TOPIC} ({err})") from None
    start = meta.start_time_ns
    series = {
        key: Series((np.asarray(t) - start) * 1e-9, np.asarray(v, dtype=np.float64))
        for key, (t, v) in rows.items()
    }
    duration_s = info["duration"]["nanoseconds"] * 1e-9
    if recovery:  # metadata.yaml is as of the last flush; the data may reach further
        ends = [s.t[-1] for s in series.values() if len(s.t)]
        duration_s = max([duration_s, *ends])
        topics = {name: (kind, counts.get(name, 0)) for name, (kind, _) in topics.items()}
    return Rollout(
        path=path,
        meta=meta,
        topics=topics,
        duration_s=duration_s,
        series=series,
        recovery=recovery,
    )
