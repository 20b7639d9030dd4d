"""Reading what a killed or truncated log left on disk, and writing it out as a finished bag.

A bag being written lives in `NAME.partial/` (`rosbag2.Rosbag2Writer`): an MCAP file
that grows a chunk at a time (each chunk flushed and fsync'd at least every
`rosbag2.FLUSH_EVERY_S`) and a metadata.yaml updated after each flush. A process killed
outright leaves no MCAP footer or summary, so readers that start from the footer
(rosbags, mcap's seeking reader) refuse it. The data section is still readable from
the start: records follow each other, and a chunk is whole or not there. `salvage_mcap`
reads records in order until the first one that is cut off or fails its CRC, and keeps
everything before it; `recover_bag` writes those messages into a new, finalized bag.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from mcap.records import Channel, Chunk, Footer, Message, Schema
from mcap.stream_reader import StreamReader, breakup_chunk

from simreal.deploy.logs.rosbag2 import STREAM, Qos, Rosbag2Writer


class SalvageError(ValueError):
    """Nothing readable in the file; the message names it."""


@dataclass
class Salvage:
    """The intact start of an MCAP file."""

    path: Path
    size: int
    good_bytes: int
    """Bytes up to the end of the last whole record (a chunk counts only when whole)."""
    schemas: dict[int, Schema] = field(default_factory=dict)
    channels: dict[int, Channel] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    complete: bool = False
    """The file had its footer: nothing was lost."""
    stopped_by: str = ""

    @property
    def lost_bytes(self) -> int:
        return self.size - self.good_bytes

    def report(self) -> dict:
        """What was read and what was lost, for people and for JSON."""
        times = [m.log_time for m in self.messages]
        span = (max(times) - min(times)) * 1e-9 if times else 0.0
        out = {
            "file": str(self.path),
            "complete": self.complete,
            "messages_recovered": len(self.messages),
            "seconds_recovered": round(span, 3),
            "bytes": self.size,
            "bytes_lost": self.lost_bytes,
        }
        if not self.complete:
            out["note"] = (
                f"log cut off ({self.stopped_by}): read up to its last complete chunk; "
                f"{self.lost_bytes} bytes after it were lost (at most the last "
                "flush interval of messages)"
            )
        return out


def salvage_mcap(path: str | os.PathLike[str]) -> Salvage:
    """Every schema, channel and message in `path` before the first damaged record."""
    path = Path(path)
    size = path.stat().st_size
    salvage = Salvage(path=path, size=size, good_bytes=0)
    with path.open("rb") as stream:
        reader = StreamReader(stream, emit_chunks=True, validate_crcs=True)
        records = reader.records
        while True:
            try:
                record = next(records)
                inner = (
                    breakup_chunk(record, validate_crc=True)
                    if isinstance(record, Chunk)
                    else [record]
                )
            except StopIteration:
                break
            except Exception as err:  # cut off, or a CRC or decoding error
                salvage.stopped_by = _why(err, salvage.good_bytes, stream.tell(), size)
                break
            for r in inner:
                if isinstance(r, Schema):
                    salvage.schemas[r.id] = r
                elif isinstance(r, Channel):
                    salvage.channels[r.id] = r
                elif isinstance(r, Message):
                    salvage.messages.append(r)
            salvage.good_bytes = stream.tell()
            if isinstance(record, Footer):
                salvage.complete = True
                salvage.good_bytes = size
                break
    if salvage.good_bytes == 0:
        raise SalvageError(f"{path}: no readable MCAP records ({salvage.stopped_by or 'empty'})")
    salvage.messages.sort(key=lambda m: m.log_time)
    return salvage


def _why(err: Exception, good: int, at: int, size: int) -> str:
    if good == size:
        return "no footer: the writer never closed it"
    if at >= size:
        return f"the record at byte {good} runs past the end of the file"
    return f"{type(err).__name__} in the record at byte {good}"


def partial_dir(path: Path) -> Path:
    """`path`, or `path.partial` where only that exists (the bag was never closed)."""
    partial = path.with_name(path.name + ".partial")
    if not path.exists() and partial.is_dir():
        return partial
    return path


def recover_bag(source: str | os.PathLike[str], out: str | os.PathLike[str]) -> dict:
    """Write the readable part of the bag at `source` (a finished, killed or truncated
    rosbag2 directory, or its `.partial`) as a finished bag at `out`; return the report."""
    source = partial_dir(Path(source))
    mcaps = sorted(source.glob("*.mcap")) if source.is_dir() else []
    if not mcaps:
        raise SalvageError(f"{source}: no .mcap file to recover (expected a rosbag2 directory)")
    info = _metadata(source)
    qos = {
        t["topic_metadata"]["name"]: _qos(t["topic_metadata"].get("offered_qos_profiles", ""))
        for t in info.get("topics_with_message_count", [])
    }
    reports = []
    with Rosbag2Writer(out, custom_data=info.get("custom_data") or {}) as bag:
        for mcap_file in mcaps:
            salvage = salvage_mcap(mcap_file)
            reports.append(salvage.report())
            for message in salvage.messages:
                channel = salvage.channels[message.channel_id]
                if channel.topic not in bag.topics:
                    schema = salvage.schemas[channel.schema_id]
                    bag.add_topic(
                        channel.topic,
                        schema.name,
                        qos.get(channel.topic, STREAM),
                        definition=schema.data.decode(),
                    )
                bag.write_serialized(channel.topic, message.data, message.log_time)
        bag.custom_data["recovered_from"] = str(source)
    return {"recovered": str(Path(out)), "files": reports}


def _metadata(source: Path) -> dict:
    meta_file = source / "metadata.yaml"
    if not meta_file.is_file():
        return {}
    try:
        return yaml.safe_load(meta_file.read_text())["rosbag2_bagfile_information"] or {}
    except (yaml.YAMLError, KeyError, TypeError):
        return {}


def _qos(text: str) -> Qos:
    """A topic's profile from its offered_qos_profiles string; the stream default if unreadable."""
    try:
        p = yaml.safe_load(text)[0]
        return Qos(p["history"], p["depth"], p["reliability"], p["durability"], p["liveliness"])
    except (yaml.YAMLError, TypeError, KeyError, IndexError):
        return STREAM
