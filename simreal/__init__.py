"""simreal: train in simulation, export to ONNX, deploy over ROS 2 / DDS, calibrate from logs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("simreal")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    """`simreal.make_vec` (simreal/vector.py), imported on first use: the CLI does not
    pay for Gymnasium and the task registry at every start."""
    if name == "make_vec":
        from simreal.vector import make_vec

        return make_vec
    raise AttributeError(f"module 'simreal' has no attribute {name!r}")
