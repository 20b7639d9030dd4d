"""A rosbag2 directory writer: `metadata.yaml` plus one MCAP file of CDR-encoded ROS 2 messages.

The layout is what `ros2 bag record -s mcap` writes (metadata version 8, readable by
ROS 2 Humble and later, by the `rosbags` package and by any MCAP reader): schemas are
ROS 2 .msg text (`ros2msg`), messages CDR, the MCAP profile `ros2`, each topic's
offered QoS profile in metadata.yaml and on its MCAP channel (readers such as `rosbags`
match the two).

The bag is written into a sibling directory `NAME.partial` and renamed onto NAME when
it is closed, so NAME is either absent or complete. `close` runs on any exception
inside a `with` block too: a failing rollout still leaves a readable bag of what was
logged.

A process killed outright (SIGKILL, power loss) cannot close the bag, so the writer
makes sure there is something to recover: metadata.yaml is written when the bag opens
and rewritten after every flush, and at least every `FLUSH_EVERY_S` the chunk in
progress is finished, written and fsync'd. What a kill leaves in `NAME.partial` is then
whole chunks plus at most one cut-off record at the end; `recover.salvage_mcap` reads
it up to its last complete chunk, and `simreal replay --recover` writes a finished bag.
Flushing more often costs compression (zstd works per chunk), not correctness.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import yaml
from mcap.records import Schema
from mcap.writer import CompressionType
from mcap_ros2.writer import Writer as McapRos2Writer

from simreal.deploy.logs.messages import msgdef

METADATA_VERSION = 8
"""rosbag2 metadata version: QoS profiles as a YAML string, type hashes, ros_distro."""

CHUNK_SIZE = 256 * 1024
"""Bytes of messages per MCAP chunk; a chunk reaches the disk when full, at the latest
`FLUSH_EVERY_S` after the previous one, or on close."""
FLUSH_EVERY_S = 0.5
"""Longest time a written message stays only in memory: the most a SIGKILL can lose."""


@dataclass(frozen=True)
class Qos:
    """A ROS 2 QoS profile as rosbag2 stores it (rmw enum values; 0 s means the default)."""

    history: int = 1
    """1 keep last, 2 keep all."""
    depth: int = 10
    reliability: int = 1
    """1 reliable, 2 best effort."""
    durability: int = 2
    """1 transient local (latched: late subscribers get the last message), 2 volatile."""
    liveliness: int = 1
    """1 automatic."""

    def to_yaml(self) -> str:
        """The `offered_qos_profiles` string of a topic offered with this profile."""
        profile = {
            "history": self.history,
            "depth": self.depth,
            "reliability": self.reliability,
            "durability": self.durability,
            "deadline": {"sec": 0, "nsec": 0},
            "lifespan": {"sec": 0, "nsec": 0},
            "liveliness": self.liveliness,
            "liveliness_lease_duration": {"sec": 0, "nsec": 0},
            "avoid_ros_namespace_conventions": False,
        }
        return yaml.safe_dump([profile], sort_keys=False)


STREAM = Qos()
"""Sensor and command streams: reliable, volatile, keep the last 10."""

LATCHED = Qos(depth=1, durability=1)
"""Once-per-log messages (the rollout description): transient local, keep the last."""


class _McapWriter(McapRos2Writer):
    """mcap-ros2-support's writer, plus channels that carry metadata (rosbag2's QoS)."""

    def register_channel(self, topic: str, schema: Schema, metadata: dict[str, str]) -> None:
        self._channel_ids[topic] = self._writer.register_channel(
            topic=topic, message_encoding="cdr", schema_id=schema.id, metadata=metadata
        )


class BagExistsError(FileExistsError):
    """The target of a new bag already holds files."""


def check_new_bag(path: Path) -> Path:
    """Raise BagExistsError unless a new bag can be written at `path`; return its partial dir."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise BagExistsError(f"{path}: already exists and is not empty; choose a new log directory")
    partial = path.with_name(path.name + ".partial")
    if partial.exists():
        raise BagExistsError(
            f"{partial}: left by an earlier run (or one still running); "
            "remove it or choose another log directory"
        )
    return partial


@dataclass
class _Topic:
    msgtype: str
    qos: Qos
    schema: Schema
    count: int = 0


class Rosbag2Writer:
    """Writes one rosbag2 directory at `path`; use as a context manager, or call `close`.

    Refuses a `path` that exists and is not an empty directory. Timestamps are
    nanoseconds in the bag's time base (rosbag2 calls them since the epoch).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        custom_data: dict[str, str] | None = None,
        flush_every_s: float = FLUSH_EVERY_S,
    ) -> None:
        self.path = Path(path)
        self.partial = check_new_bag(self.path)
        self.custom_data = dict(custom_data or {})
        self.file_name = f"{self.path.name}_0.mcap"
        self.topics: dict[str, _Topic] = {}
        self._schemas: dict[str, Schema] = {}
        self._start_ns: int | None = None
        self._end_ns = 0
        self._closed = False
        self.partial.mkdir(parents=True)
        self._stream: IO[bytes] = (self.partial / self.file_name).open("wb")
        self._mcap = _McapWriter(
            self._stream, chunk_size=CHUNK_SIZE, compression=CompressionType.ZSTD
        )
        self.flush_every_s = flush_every_s
        self._flushed_at = time.monotonic()
        self._write_metadata()

    def _write_metadata(self) -> None:
        """metadata.yaml for what has reached the disk so far (atomically replaced)."""
        text = yaml.safe_dump({"rosbag2_bagfile_information": self.metadata()}, sort_keys=False)
        tmp = self.partial / ".metadata.yaml.tmp"
        tmp.write_text(text)
        os.replace(tmp, self.partial / "metadata.yaml")

    def flush(self) -> None:
        """Finish the chunk in progress, write it, fsync the file, update metadata.yaml."""
        self._mcap._writer.flush()
        self._stream.flush()
        os.fsync(self._stream.fileno())
        self._write_metadata()
        self._flushed_at = time.monotonic()

    def _maybe_flush(self) -> None:
        if time.monotonic() - self._flushed_at >= self.flush_every_s:
            self.flush()

    def add_topic(
        self, topic: str, msgtype: str, qos: Qos = STREAM, definition: str | None = None
    ) -> None:
        """Declare `topic` with ROS 2 type `msgtype` (`pkg/msg/Name`); `definition` is its
        .msg text where it is not one of `messages.msgdef`'s."""
        if topic in self.topics:
            raise ValueError(f"topic {topic} is already declared")
        schema = self._schemas.get(msgtype) or self._mcap.register_msgdef(
            msgtype, definition or msgdef(msgtype)
        )
        self._schemas[msgtype] = schema
        self._mcap.register_channel(topic, schema, {"offered_qos_profiles": qos.to_yaml()})
        self.topics[topic] = _Topic(msgtype, qos, schema)

    def write(self, topic: str, message: dict, time_ns: int) -> None:
        """Append `message` (a dict in the type's field layout) received at `time_ns`."""
        entry = self.topics[topic]
        self._mcap.write_message(
            topic, entry.schema, message, log_time=time_ns, publish_time=time_ns
        )
        self._count(entry, time_ns)
        self._maybe_flush()

    def write_serialized(self, topic: str, data: bytes, time_ns: int) -> None:
        """Append a message already CDR-encoded (`encode`), received at `time_ns`."""
        entry = self.topics[topic]
        self._mcap._writer.add_message(
            channel_id=self._mcap._channel_ids[topic],
            log_time=time_ns,
            publish_time=time_ns,
            sequence=0,
            data=data,
        )
        self._count(entry, time_ns)
        self._maybe_flush()

    def _count(self, entry: _Topic, time_ns: int) -> None:
        entry.count += 1
        self._start_ns = time_ns if self._start_ns is None else min(self._start_ns, time_ns)
        self._end_ns = max(self._end_ns, time_ns)

    def close(self) -> Path:
        """Finish the MCAP file, write metadata.yaml and move the bag into place."""
        if self._closed:
            return self.path
        self._closed = True
        info = self.metadata()
        try:
            self._mcap.add_metadata(
                "rosbag2",
                {"serialized_metadata": yaml.safe_dump(info), "ros_distro": info["ros_distro"]},
            )
            self._mcap.finish()
            self._stream.flush()
            os.fsync(self._stream.fileno())
        finally:
            self._stream.close()
        self._write_metadata()
        if self.path.is_dir():
            self.path.rmdir()  # empty (checked on open); rename cannot replace it everywhere
        os.replace(self.partial, self.path)
        return self.path

    def metadata(self) -> dict:
        """The `rosbag2_bagfile_information` mapping of metadata.yaml for what was written."""
        start = self._start_ns or 0
        duration = self._end_ns - start if self._start_ns is not None else 0
        count = sum(t.count for t in self.topics.values())
        return {
            "version": METADATA_VERSION,
            "storage_identifier": "mcap",
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": count,
            "topics_with_message_count": [
                {
                    "topic_metadata": {
                        "name": name,
                        "type": t.msgtype,
                        "serialization_format": "cdr",
                        "offered_qos_profiles": t.qos.to_yaml(),
                        "type_description_hash": "",
                    },
                    "message_count": t.count,
                }
                for name, t in self.topics.items()
            ],
            "compression_format": "",
            "compression_mode": "",
            "relative_file_paths": [self.file_name],
            "files": [
                {
                    "path": self.file_name,
                    "starting_time": {"nanoseconds_since_epoch": start},
                    "duration": {"nanoseconds": duration},
                    "message_count": count,
                }
            ],
            "custom_data": self.custom_data,
            "ros_distro": os.environ.get("ROS_DISTRO", ""),
        }

    def __enter__(self) -> Rosbag2Writer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
