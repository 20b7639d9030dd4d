"""Test-wide setup: every DDS participant a test (or a process it starts) creates stays on
loopback, whatever CYCLONEDDS_URI (or Fast DDS profile) the developer's shell has."""

import os
from pathlib import Path

LOOPBACK_URI = "file://" + str(Path(__file__).resolve().parents[1] / "dds" / "loopback.xml")

# CycloneDDS reads this when a process creates its first participant, so it is set at
# collection, before any test runs; child processes inherit it.
os.environ["CYCLONEDDS_URI"] = LOOPBACK_URI
# Fast DDS (rclpy's RMW, the ros2 extra) likewise: UDP on 127.0.0.1 only. Each test
# names its own domain, which a ROS_DOMAIN_ID in the developer's shell would contradict.
os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(
    Path(__file__).resolve().parents[1] / "dds" / "fastdds_loopback.xml"
)
os.environ.pop("ROS_DOMAIN_ID", None)
