"""The fast G1 message path: CDR bytes made and read with numpy (`cdr.CdrLayout`) must be
byte for byte what cyclonedds' own serializer makes, and raw reads/writes must meet
ordinary cyclonedds readers and writers over DDS (loopback, tests/conftest.py)."""

import os
import time

import _dds_peer
import numpy as np
import pytest

from simreal.deploy.dds import DdsParticipant, crc_ok, take_raw, with_crc, write_raw
from simreal.deploy.dds.cdr import CdrLayout
from simreal.deploy.dds.crc import (
    LOWCMD_CDR,
    LOWCMD_DTYPE,
    LOWSTATE_CDR,
    LOWSTATE_DTYPE,
    pack_lowcmd,
    pack_lowstate,
)
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
from simreal.deploy.g1.messages import (
    decode_lowcmd,
    decode_lowstate,
    encode_lowcmd,
    encode_lowstate,
    lowcmd,
)
from simreal.deploy.g1.sim_robot import MotorCommand, Sensors

DOMAIN_ID = 1 + (os.getpid() * 7 + 3) % 200


def f32(rng, n=None):
    """Random float32-exact values (the messages carry float32)."""
    values = rng.normal(scale=10.0, size=1 if n is None else n).astype(np.float32)
    return float(values[0]) if n is None else [float(v) for v in values]


def random_lowstate(rng) -> LowState_:
    def u32(n):
        return [int(v) for v in rng.integers(0, 2**32, n)]

    return LowState_(
        version=u32(2),
        mode_pr=int(rng.integers(256)),
        mode_machine=int(rng.integers(256)),
        tick=u32(1)[0],
        imu_state=IMUState_(
            quaternion=f32(rng, 4),
            gyroscope=f32(rng, 3),
            accelerometer=f32(rng, 3),
            rpy=f32(rng, 3),
            temperature=int(rng.integers(-(2**15), 2**15)),
        ),
        motor_state=[
            MotorState_(
                mode=int(rng.integers(256)),
                q=f32(rng),
                dq=f32(rng),
                ddq=f32(rng),
                tau_est=f32(rng),
                temperature=[int(v) for v in rng.integers(-(2**15), 2**15, 2)],
                vol=f32(rng),
                sensor=u32(2),
                motorstate=u32(1)[0],
                reserve=u32(4),
            )
            for _ in range(NUM_MOTORS)
        ],
        wireless_remote=bytes(rng.integers(0, 256, 40, dtype=np.uint8)),
        reserve=u32(4),
        crc=u32(1)[0],
    )


def random_lowcmd(rng) -> LowCmd_:
    return LowCmd_(
        mode_pr=int(rng.integers(256)),
        mode_machine=int(rng.integers(256)),
        motor_cmd=[
            MotorCmd_(
                mode=int(rng.integers(256)),
                q=f32(rng),
                dq=f32(rng),
                tau=f32(rng),
                kp=f32(rng),
                kd=f32(rng),
                reserve=int(rng.integers(0, 2**32)),
            )
            for _ in range(NUM_MOTORS)
        ],
        reserve=[int(v) for v in rng.integers(0, 2**32, 4)],
        crc=int(rng.integers(0, 2**32)),
    )


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(
    ("make", "layout", "dtype", "pack"),
    [
        (random_lowstate, LOWSTATE_CDR, LOWSTATE_DTYPE, pack_lowstate),
        (random_lowcmd, LOWCMD_CDR, LOWCMD_DTYPE, pack_lowcmd),
    ],
    ids=["LowState_", "LowCmd_"],
)
def test_cdr_layout_matches_cyclonedds_byte_for_byte(seed, make, layout, dtype, pack):
    msg = make(np.random.default_rng(seed))
    record = np.frombuffer(pack(msg), dtype=dtype).reshape(())
    wire = msg.serialize()
    assert layout.size == len(wire)
    assert layout.to_cdr(record) == wire
    assert layout.from_cdr(wire).tobytes() == record.tobytes()
    assert type(msg).deserialize(layout.to_cdr(record)) == msg


def test_cdr_layout_sizes_and_bad_input():
    # CDR drops C's padding before the first motor: 2 bytes (LowCmd_), 4 (LowState_).
    assert (LOWCMD_CDR.size, LOWSTATE_CDR.size) == (4 + 1000, 4 + 2088)
    wire = with_crc(_dds_peer.lowstate_sample()).serialize()
    with pytest.raises(ValueError, match="2091 bytes"):
        LOWSTATE_CDR.from_cdr(wire[:-1])
    with pytest.raises(ValueError, match="little-endian"):
        LOWSTATE_CDR.from_cdr(b"\x00\x00" + wire[2:])
    with pytest.raises(TypeError):
        LOWSTATE_CDR.to_cdr(np.zeros((), LOWCMD_DTYPE))
    with pytest.raises(TypeError, match="not a CDR primitive"):
        CdrLayout(np.dtype([("name", "U4")]))


def sensors(rng) -> Sensors:
    quat = rng.normal(size=4)
    return Sensors(
        q=rng.normal(size=29),
        dq=rng.normal(size=29),
        tau_est=rng.normal(size=29),
        quat_wxyz=quat / np.linalg.norm(quat),
        gyro=rng.normal(size=3),
        accel=rng.normal(size=3),
        rpy=rng.normal(size=3),
    )


def test_encoded_messages_are_what_cyclonedds_reads():
    rng = np.random.default_rng(7)
    s = sensors(rng)
    msg = LowState_.deserialize(encode_lowstate(s, 123456, mode_machine=9))
    assert crc_ok(msg) and msg.tick == 123456 and msg.mode_machine == 9
    np.testing.assert_allclose([m.q for m in msg.motor_state[:29]], s.q, rtol=1e-6)
    np.testing.assert_allclose(msg.imu_state.quaternion, s.quat_wxyz, rtol=1e-6)
    state = decode_lowstate(msg.serialize())
    np.testing.assert_allclose(state.tau_est, s.tau_est, rtol=1e-6)
    assert state.tick == 123456 and state.mode_machine == 9

    cmd = MotorCommand(*(rng.normal(size=29) for _ in range(5)))
    sample = LowCmd_.deserialize(encode_lowcmd(cmd, 9))
    assert crc_ok(sample) and sample.mode_machine == 9
    assert [m.mode for m in sample.motor_cmd] == [1] * 29 + [0] * 6
    np.testing.assert_allclose([m.kd for m in sample.motor_cmd[:29]], cmd.kd, rtol=1e-6)
    back = decode_lowcmd(lowcmd(cmd, 9).serialize())
    np.testing.assert_allclose(back.tau, cmd.tau, rtol=1e-6)


def test_bad_messages_are_dropped():
    s = sensors(np.random.default_rng(1))
    data = bytearray(encode_lowstate(s, 1))
    data[100] ^= 1  # one bit of a motor's q: the crc no longer matches
    assert decode_lowstate(bytes(data)) is None
    assert decode_lowstate(b"\x00\x01\x00\x00" + bytes(100)) is None
    cmd = MotorCommand(*(np.ones(29) for _ in range(5)))
    data = bytearray(encode_lowcmd(cmd, 5))
    data[-1] ^= 1  # the crc itself
    assert decode_lowcmd(bytes(data)) is None
    cmd.q[3] = np.nan
    assert decode_lowcmd(encode_lowcmd(cmd, 5)) is None


def _take(reader, raw: bool, timeout_s: float = 5.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = take_raw(reader, 4) if raw else [s for s in reader.take(4) if hasattr(s, "crc")]
        if got:
            return got[-1]
        time.sleep(0.01)
    return None


@pytest.mark.slow
def test_raw_reads_and_writes_meet_ordinary_endpoints():
    state = with_crc(_dds_peer.lowstate_sample())
    cmd = with_crc(_dds_peer.lowcmd_sample(5))
    with DdsParticipant(DOMAIN_ID) as robot, DdsParticipant(DOMAIN_ID) as node:
        state_reader = node.reader(LOWSTATE_TOPIC, LowState_)
        cmd_reader = robot.reader(LOWCMD_TOPIC, LowCmd_)
        state_writer = robot.writer(LOWSTATE_TOPIC, LowState_)
        cmd_writer = node.writer(LOWCMD_TOPIC, LowCmd_)
        got_state = got_cmd = None
        end = time.monotonic() + 10.0
        while (got_state is None or got_cmd is None) and time.monotonic() < end:
            state_writer.write(state)  # ordinary write, raw take
            write_raw(cmd_writer, cmd.serialize())  # raw write, ordinary take
            got_state = got_state or _take(state_reader, raw=True, timeout_s=0.05)
            got_cmd = got_cmd or _take(cmd_reader, raw=False, timeout_s=0.05)
    assert got_state == state.serialize()
    assert got_cmd == cmd
    with pytest.raises(ValueError, match="whole 4-byte words"):
        write_raw(cmd_writer, b"\x00\x01\x00\x00\x01")
