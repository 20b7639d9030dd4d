"""Calibration routines: estimate how one robot differs from its model, from its logs.

Each routine reads (or, for `excite`, writes) a rosbag2 rollout log and writes its
findings into the calibration overlay (`simreal.robots.g1.overlay`), every value with
its fit uncertainty:

- `excite`: safe excitation trajectories for a joint group, run on the hung robot.
- `joint-offsets`: encoder zero offsets, from the gravity loads they shift.
- `actuators`: PD gain scales, armature, friction and actuation latency.
- `imu`: gyroscope and accelerometer biases from a static log.
- `extrinsics`: the rigid transform between two sensors from their logged pose streams
  (hand-eye AX = XB, `extrinsics` and `pose_log`).
"""

from simreal.calibration.excite import GROUPS, ExcitationConfig, ExcitationError, excitation
from simreal.calibration.logdata import CalibrationError, HungLog, load_hung_log

__all__ = [
    "GROUPS",
    "CalibrationError",
    "ExcitationConfig",
    "ExcitationError",
    "HungLog",
    "excitation",
    "load_hung_log",
]
