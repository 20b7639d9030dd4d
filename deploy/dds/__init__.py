"""DDS without ROS 2: CycloneDDS participants, ROS 2 messages on their wire conventions,
and the Unitree G1's low-level messages with the CRC the robot checks.

`ros2` (JointState, Imu, Float32MultiArray, ... and `topic_name`/`type_name`),
`unitree_hg` (LowCmd_, LowState_, ...), `crc` (the robot's struct layout and CRC), `cdr`
(CDR bytes of such structs straight from numpy) and `participant` (readers, writers,
raw-byte take and write, QoS, and the CYCLONEDDS_URI guard).
"""

from simreal.deploy.dds.crc import (
    crc32_unitree,
    crc_ok,
    lowcmd_crc,
    lowstate_crc,
    pack_lowcmd,
    pack_lowstate,
    with_crc,
)
from simreal.deploy.dds.participant import (
    READER_QOS,
    WRITER_QOS,
    DdsConfigError,
    DdsParticipant,
    check_dds_config,
    latched_qos,
    stream_qos,
    take_raw,
    take_raw_from,
    write_raw,
    writer_count,
    writer_guid,
    writer_guids,
    writer_handles,
)
from simreal.deploy.dds.ros2 import topic_name, type_name

__all__ = [
    "READER_QOS",
    "WRITER_QOS",
    "DdsConfigError",
    "DdsParticipant",
    "check_dds_config",
    "crc32_unitree",
    "crc_ok",
    "latched_qos",
    "lowcmd_crc",
    "lowstate_crc",
    "pack_lowcmd",
    "pack_lowstate",
    "stream_qos",
    "take_raw",
    "take_raw_from",
    "topic_name",
    "type_name",
    "with_crc",
    "write_raw",
    "writer_count",
    "writer_guid",
    "writer_guids",
    "writer_handles",
]
