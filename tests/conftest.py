"""Test-wide setup: every DDS participant a test (or a process it starts) creates stays on
loopback, whatever CYCLONEDDS_URI the developer's shell has."""

import os
from pathlib import Path

LOOPBACK_URI = "file://" + str(Path(__file__).resolve().parents[1] / "dds" / "loopback.xml")

# CycloneDDS reads this when a process creates its first participant, so it is set at
# collection, before any test runs; child processes inherit it.
os.environ["CYCLONEDDS_URI"] = LOOPBACK_URI
