"""LowState_ and LowCmd_ to and from numpy arrays in SDK motor order (29 G1 motors)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.deploy.dds import crc_ok, with_crc
from simreal.deploy.dds.unitree_hg import (
    NUM_MOTORS,
    IMUState_,
    LowCmd_,
    LowState_,
    MotorCmd_,
    MotorState_,
)
from simreal.deploy.g1.sim_robot import MotorCommand, Sensors
from simreal.robots.g1 import JOINT_NAMES

N_JOINTS = len(JOINT_NAMES)
MODE_MACHINE = 5
"""What the virtual robot reports in mode_machine (the 29-DoF G1 reports a small int)."""


@dataclass
class RobotState:
    """One LowState_ as arrays: joints (29,) in SDK order, the IMU, tick (ms), mode_machine."""

    q: np.ndarray
    dq: np.ndarray
    tau_est: np.ndarray
    quat_wxyz: np.ndarray
    gyro: np.ndarray
    accel: np.ndarray
    tick: int
    mode_machine: int

    def is_finite(self) -> bool:
        return all(
            np.isfinite(a).all()
            for a in (self.q, self.dq, self.tau_est, self.quat_wxyz, self.gyro, self.accel)
        )


def lowstate(sensors: Sensors, tick_ms: int, mode_machine: int = MODE_MACHINE) -> LowState_:
    """The robot's LowState_ for these sensor readings, with its crc."""
    motors = [
        MotorState_(mode=1, q=float(q), dq=float(dq), tau_est=float(tau))
        for q, dq, tau in zip(sensors.q, sensors.dq, sensors.tau_est, strict=True)
    ]
    motors += [MotorState_() for _ in range(NUM_MOTORS - N_JOINTS)]
    imu = IMUState_(
        quaternion=[float(x) for x in sensors.quat_wxyz],
        gyroscope=[float(x) for x in sensors.gyro],
        accelerometer=[float(x) for x in sensors.accel],
        rpy=[float(x) for x in sensors.rpy],
    )
    msg = LowState_(mode_machine=mode_machine, tick=tick_ms % 2**32, imu_state=imu)
    msg.motor_state = motors
    return with_crc(msg)


def robot_state(msg: LowState_) -> RobotState:
    motors = msg.motor_state[:N_JOINTS]
    imu = msg.imu_state
    return RobotState(
        q=np.array([m.q for m in motors]),
        dq=np.array([m.dq for m in motors]),
        tau_est=np.array([m.tau_est for m in motors]),
        quat_wxyz=np.array(imu.quaternion, dtype=float),
        gyro=np.array(imu.gyroscope, dtype=float),
        accel=np.array(imu.accelerometer, dtype=float),
        tick=msg.tick,
        mode_machine=msg.mode_machine,
    )


def lowcmd(cmd: MotorCommand, mode_machine: int) -> LowCmd_:
    """A LowCmd_ (motors enabled, ankles pitch/roll, crc set) for a MotorCommand."""
    motors = [
        MotorCmd_(mode=1, q=float(q), dq=float(dq), tau=float(tau), kp=float(kp), kd=float(kd))
        for q, dq, tau, kp, kd in zip(cmd.q, cmd.dq, cmd.tau, cmd.kp, cmd.kd, strict=True)
    ]
    motors += [MotorCmd_() for _ in range(NUM_MOTORS - N_JOINTS)]
    return with_crc(LowCmd_(mode_pr=0, mode_machine=mode_machine, motor_cmd=motors))


def motor_command(msg: LowCmd_) -> MotorCommand | None:
    """What the motors do with a LowCmd_: None if its crc is wrong (the robot drops it).

    A disabled motor (mode 0) gives no torque.
    """
    if not crc_ok(msg):
        return None
    motors = msg.motor_cmd[:N_JOINTS]
    on = np.array([m.mode != 0 for m in motors], dtype=float)
    fields = {
        name: np.array([getattr(m, name) for m in motors]) * on
        for name in ("q", "dq", "tau", "kp", "kd")
    }
    if not all(np.isfinite(v).all() for v in fields.values()):
        return None
    return MotorCommand(**fields)
