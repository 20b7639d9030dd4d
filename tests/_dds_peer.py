"""The other process in test_dds's round trip: a stand-in for the robot.

Publishes a LowState_ (with crc) on rt/lowstate and a JointState on rt/joint_states at
100 Hz until a LowCmd_ arrives on rt/lowcmd, then prints whether that command is the
expected one with a valid crc and exits 0 (it is), 1 (it is not) or 2 (none came).
The message builders are shared with the test, which checks what it receives against them.

    python tests/_dds_peer.py DOMAIN_ID SECONDS
"""

import sys
import time

from simreal.deploy.dds import DdsParticipant, crc_ok, topic_name, with_crc
from simreal.deploy.dds.ros2 import Header, JointState, Time
from simreal.deploy.dds.unitree_hg import (
    LOWCMD_TOPIC,
    LOWSTATE_TOPIC,
    NUM_MOTORS,
    IMUState_,
    LowCmd_,
    LowState_,
    MotorCmd_,
    MotorState_,
)
from simreal.robots.g1 import JOINT_NAMES

JOINT_STATES_TOPIC = topic_name("/joint_states")


def lowstate_sample() -> LowState_:
    """Every field set to a distinct value that float32 holds exactly."""
    return LowState_(
        version=[1, 2],
        mode_pr=0,
        mode_machine=5,
        tick=123456,
        imu_state=IMUState_(
            quaternion=[0.5, 0.5, -0.5, 0.5],
            gyroscope=[0.125, -0.25, 0.375],
            accelerometer=[0.5, -0.75, 9.75],
            rpy=[0.0625, -0.125, 1.5],
            temperature=41,
        ),
        motor_state=[
            MotorState_(
                mode=1,
                q=0.25 * i - 3.0,
                dq=-0.125 * i,
                ddq=2.0 * i,
                tau_est=0.5 * i,
                temperature=[30 + i, -i],
                vol=24.5,
                sensor=[i, 1000 + i],
                motorstate=i % 3,
                reserve=[i, 0, 0, 4],
            )
            for i in range(NUM_MOTORS)
        ],
        wireless_remote=bytes(range(40)),
        reserve=[9, 8, 7, 6],
    )


def joint_state_sample() -> JointState:
    n = len(JOINT_NAMES)
    return JointState(
        header=Header(stamp=Time(sec=1700000000, nanosec=500), frame_id="pelvis"),
        name=list(JOINT_NAMES),
        position=[0.01 * i for i in range(n)],
        velocity=[-0.1 * i for i in range(n)],
        effort=[1.5 * i for i in range(n)],
    )


def lowcmd_sample(mode_machine: int) -> LowCmd_:
    return LowCmd_(
        mode_pr=0,
        mode_machine=mode_machine,
        motor_cmd=[
            MotorCmd_(mode=1, q=0.25 * i, dq=0.0, tau=-0.5 * i, kp=40.0 + i, kd=2.5, reserve=i)
            for i in range(NUM_MOTORS)
        ],
    )


def main(domain_id: int, seconds: float) -> int:
    state = with_crc(lowstate_sample())
    joints = joint_state_sample()
    with DdsParticipant(domain_id) as dds:
        state_writer = dds.writer(LOWSTATE_TOPIC, LowState_)
        joints_writer = dds.writer(JOINT_STATES_TOPIC, JointState)
        cmd_reader = dds.reader(LOWCMD_TOPIC, LowCmd_)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            state_writer.write(state)
            joints_writer.write(joints)
            for cmd in cmd_reader.take(10):
                if isinstance(cmd, LowCmd_):
                    ok = crc_ok(cmd) and cmd == with_crc(lowcmd_sample(state.mode_machine))
                    print("lowcmd ok" if ok else f"lowcmd bad: {cmd}", flush=True)
                    return 0 if ok else 1
            time.sleep(0.01)
    print("no lowcmd", flush=True)
    return 2


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), float(sys.argv[2])))
