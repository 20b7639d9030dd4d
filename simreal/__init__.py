"""simreal: train in simulation, export to ONNX, deploy over ROS 2 / DDS, calibrate from logs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("simreal")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
