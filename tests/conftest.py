"""Test-wide setup: every DDS participant a test (or a process it starts) creates stays on
loopback, whatever CYCLONEDDS_URI (or Fast DDS profile) the developer's shell has; the
helper modules at tests/ (`_procs`, `_g1_policy`, ...) import by name from every test
folder."""

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LOOPBACK_URI = "file://" + str(TESTS.parent / "dds" / "loopback.xml")

# CycloneDDS reads this when a process creates its first participant, so it is set at
# collection, before any test runs; child processes inherit it.
os.environ["CYCLONEDDS_URI"] = LOOPBACK_URI
# Fast DDS (rclpy's RMW, the ros2 extra) likewise: UDP on 127.0.0.1 only. Each test
# names its own domain, which a ROS_DOMAIN_ID in the developer's shell would contradict.
os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(TESTS.parent / "dds" / "fastdds_loopback.xml")
os.environ.pop("ROS_DOMAIN_ID", None)

# The test folders mirror the packages; the shared helper modules stay at tests/, put on
# the path here whatever pytest's import mode.
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@pytest.fixture
def work_in_tmp(tmp_path, monkeypatch):
    """Run in the test's own folder: MuJoCo appends its warnings to MUJOCO_LOG.TXT in the
    working directory, and relative paths (the default `runs/`) land there, never in the
    repository. A file opts in with `pytestmark = pytest.mark.usefixtures("work_in_tmp")`."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
