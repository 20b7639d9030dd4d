"""One DDS participant with its topics, readers and writers, and the QoS they use.

QoS: writers are reliable, readers best effort, both keep-last 1 and volatile. That is
what Unitree's own SDK gets (unitree_sdk2 and unitree_sdk2_python create their readers
and writers with CycloneDDS's default QoS, which is exactly this), and it matches any
peer: a best-effort reader matches every writer, and a reliable writer matches every
reader, whether a ROS 2 node with the default (reliable) or sensor-data (best-effort)
profile, or the robot. Where either side is best effort the link is best effort: a lost
sample is not resent, and the next one, 2 ms later at 500 Hz, supersedes it. Keep-last 1
because a control loop wants the newest sample, never a queue of old ones. A reliable
peer that stops acknowledging can make a write block for up to `max_blocking_time`
(100 ms, CycloneDDS's default); pass `stream_qos(reliable=False)` to a writer on a hot
path that must never wait.

Configuration: CycloneDDS reads `CYCLONEDDS_URI` when a process creates its first
participant on a domain. Unset, CycloneDDS discovers peers by multicast on a network
interface of its choosing, so `DdsParticipant` refuses to start without it unless told
otherwise: tests and local runs point it at the project's loopback config.

Raw samples: `take_raw` and `write_raw` move a sample's serialized bytes (CDR with its
4-byte encapsulation header) without cyclonedds' Python (de)serialization, for messages
with a compiled layout (`cdr.CdrLayout`). They call the same `cyclonedds._clayer`
functions that `DataReader.take` and `DataWriter.write` call around that step.
"""

import os
from pathlib import Path
from typing import Any

from cyclonedds._clayer import ddspy_take, ddspy_write
from cyclonedds.core import DDSException, InstanceState, SampleState, ViewState
from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

MAX_BLOCKING_MS = 100


_ANY_SAMPLE = SampleState.Any | ViewState.Any | InstanceState.Any
_HANDLE_MASK = 2**64 - 1


def take_raw(reader: DataReader, n: int) -> list[bytes]:
    """Take up to `n` samples from `reader` as serialized bytes; invalid samples (a writer
    gone, an instance disposed) are dropped."""
    taken = ddspy_take(reader._ref, _ANY_SAMPLE, n)
    if isinstance(taken, int):
        raise DDSException(taken, f"Occurred while taking data in {reader!r}")
    return [data for data, info in taken if info.valid_data]


def take_raw_from(reader: DataReader, n: int) -> list[tuple[bytes, int, int]]:
    """`take_raw`, each sample with the handle of the writer that sent it (unsigned, as
    `writer_handles` gives them) and its source timestamp (ns since the epoch)."""
    taken = ddspy_take(reader._ref, _ANY_SAMPLE, n)
    if isinstance(taken, int):
        raise DDSException(taken, f"Occurred while taking data in {reader!r}")
    return [
        (data, info.publication_handle & _HANDLE_MASK, info.source_timestamp)
        for data, info in taken
        if info.valid_data
    ]


def writer_handles(reader: DataReader) -> set[int]:
    """The handles (unsigned) of the writers matched with `reader` now."""
    return {h & _HANDLE_MASK for h in reader.get_matched_publications()}


def writer_guid(reader: DataReader, handle: int) -> str:
    """The GUID of the matched writer `handle`, or a note that it has gone."""
    signed = handle - 2**64 if handle >= 2**63 else handle
    try:
        return str(reader.get_matched_publication_data(signed).key)
    except DDSException:
        return f"(writer {handle}, gone)"


def write_raw(writer: DataWriter, data: bytes) -> None:
    """Write one sample already serialized (header included, a whole number of words)."""
    if len(data) % 4:
        raise ValueError(f"a serialized sample is whole 4-byte words, not {len(data)} bytes")
    ret = ddspy_write(writer._ref, data)
    if ret < 0:
        raise DDSException(ret, f"Occurred while writing a sample in {writer!r}")


def writer_guids(reader: DataReader, exclude: tuple[DataWriter, ...] = ()) -> list[str]:
    """The GUIDs of the writers matched with `reader` (on any participant, this one
    included), less those in `exclude`. DDS discovery reports every writer on a topic,
    whoever made it, so a reader sees who else publishes there."""
    own = {str(w.guid) for w in exclude}
    guids = []
    for handle in reader.get_matched_publications():
        try:
            guid = str(reader.get_matched_publication_data(handle).key)
        except DDSException:  # gone between the two calls
            continue
        if guid not in own:
            guids.append(guid)
    return sorted(guids)


def writer_count(reader: DataReader) -> int:
    """How many writers are matched with `reader` now (a cheap status read)."""
    return reader.get_subscription_matched_status().current_count


class DdsConfigError(RuntimeError):
    """CYCLONEDDS_URI is unset or names a file that does not exist."""


def stream_qos(*, reliable: bool, depth: int = 1) -> Qos:
    """Keep-last `depth`, volatile; reliable or best effort."""
    reliability = (
        Policy.Reliability.Reliable(max_blocking_time=duration(milliseconds=MAX_BLOCKING_MS))
        if reliable
        else Policy.Reliability.BestEffort
    )
    return Qos(reliability, Policy.History.KeepLast(depth), Policy.Durability.Volatile)


def latched_qos(depth: int = 1) -> Qos:
    """Reliable, keep-last `depth`, transient local: a reader that joins later still gets
    the writer's last samples (ROS 2's "latched" topics, e.g. a node's current state)."""
    reliable = Policy.Reliability.Reliable(max_blocking_time=duration(milliseconds=MAX_BLOCKING_MS))
    return Qos(reliable, Policy.History.KeepLast(depth), Policy.Durability.TransientLocal)


WRITER_QOS = stream_qos(reliable=True)
READER_QOS = stream_qos(reliable=False)


def check_dds_config(*, allow_default_config: bool = False) -> str | None:
    """The CYCLONEDDS_URI in force; raises DdsConfigError if it is unset (unless allowed)
    or names a `file://` that does not exist."""
    uri = os.environ.get("CYCLONEDDS_URI", "").strip()
    if not uri:
        if allow_default_config:
            return None
        raise DdsConfigError(
            "CYCLONEDDS_URI is unset, so CycloneDDS would discover peers by multicast on "
            "a network interface of its own choosing. For tests and local runs keep DDS on "
            "loopback: export CYCLONEDDS_URI=file://$PWD/dds/loopback.xml (from the project "
            "root). On a robot, point it at a config that names the robot's network "
            "interface. Pass allow_default_config=True to accept CycloneDDS's default."
        )
    for entry in uri.split(","):
        entry = entry.strip()
        if entry.startswith("file://") and not Path(entry[len("file://") :]).is_file():
            raise DdsConfigError(f"CYCLONEDDS_URI names {entry}, which is not a file")
    return uri


class DdsParticipant:
    """A DomainParticipant on `domain_id` and the topics, readers and writers made through it.

    Topics are made once per name; `close()` (or leaving a `with` block) deletes every
    entity made here, so a process can stop talking DDS without exiting.
    """

    def __init__(self, domain_id: int = 0, *, allow_default_config: bool = False):
        self.config_uri = check_dds_config(allow_default_config=allow_default_config)
        self.domain_id = domain_id
        self.participant = DomainParticipant(domain_id)
        self._topics: dict[str, Topic] = {}
        self._endpoints: list[DataReader | DataWriter] = []

    def topic(self, name: str, data_type: type) -> Topic:
        """The topic `name` carrying `data_type`; one per name, a second type is an error."""
        topic = self._topics.get(name)
        if topic is None:
            topic = self._topics[name] = Topic(self.participant, name, data_type)
        elif topic.data_type is not data_type:
            raise TypeError(
                f"topic {name} carries {topic.data_type.__name__}, not {data_type.__name__}"
            )
        return topic

    def writer(self, name: str, data_type: type, qos: Qos = WRITER_QOS) -> DataWriter:
        writer = DataWriter(self.participant, self.topic(name, data_type), qos)
        self._endpoints.append(writer)
        return writer

    def reader(self, name: str, data_type: type, qos: Qos = READER_QOS) -> DataReader:
        reader = DataReader(self.participant, self.topic(name, data_type), qos)
        self._endpoints.append(reader)
        return reader

    def close(self) -> None:
        """Delete the endpoints, topics and participant, children first."""
        # cyclonedds deletes an entity in its __del__ and makes later calls no-ops;
        # calling it here deletes now rather than whenever the last reference goes.
        entities: list[Any] = [*self._endpoints, *self._topics.values(), self.participant]
        self._endpoints.clear()
        self._topics.clear()
        for entity in entities:
            entity.__del__()

    def __enter__(self) -> "DdsParticipant":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
