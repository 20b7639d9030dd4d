"""The G1's CRC and struct layout, checked against references written here from docs/facts.md."""

import dataclasses
import struct
import time

import _dds_peer
import numpy as np
import pytest

from simreal.deploy.dds import (
    crc32_unitree,
    crc_ok,
    lowcmd_crc,
    lowstate_crc,
    pack_lowcmd,
    pack_lowstate,
    with_crc,
)
from simreal.deploy.dds.crc import LOWSTATE_DTYPE, MOTOR_STATE_DTYPE
from simreal.deploy.dds.unitree_hg import NUM_MOTORS, LowCmd_, LowState_, MotorCmd_

POLY = 0x04C11DB7

# docs/facts.md's layouts as struct formats: '<' means no implicit padding, so every pad byte
# natural alignment inserts is written out as 'x'.
LOWCMD_FORMAT = "<BBxx" + "Bxxx5fI" * NUM_MOTORS + "4I" + "I"
IMU_FORMAT = "4f3f3f3fhxx"
MOTOR_STATE_FORMAT = "Bxxx4f2hf2II4I"
LOWSTATE_FORMAT = "<2IBBxxI" + IMU_FORMAT + MOTOR_STATE_FORMAT * NUM_MOTORS + "40B" + "4I" + "I"


def reference_crc(words) -> int:
    """docs/facts.md, word for word: for each bit of each word, most significant bit first,
    shift the register left one bit, xoring the polynomial in if the bit shifted out was
    1; then, if the data bit is 1, xor the polynomial in as well. No final xor."""
    register = 0xFFFFFFFF
    for word in words:
        word = int(word)
        for bit in range(31, -1, -1):
            shifted_out = register >> 31
            register = (register << 1) & 0xFFFFFFFF
            if shifted_out:
                register ^= POLY
            if (word >> bit) & 1:
                register ^= POLY
    return register


def crc32_mpeg2(data: bytes) -> int:
    """Textbook CRC-32/MPEG-2, byte by byte, each byte most significant bit first."""
    register = 0xFFFFFFFF
    for byte in data:
        register ^= byte << 24
        for _ in range(8):
            register = (register << 1) ^ POLY if register & 0x80000000 else register << 1
            register &= 0xFFFFFFFF
    return register


def lowcmd_sample() -> LowCmd_:
    return LowCmd_(
        mode_pr=1,
        mode_machine=5,
        motor_cmd=[
            MotorCmd_(
                mode=i % 2,
                q=0.1 * i - 1.7,
                dq=-0.01 * i,
                tau=0.5 * i,
                kp=40.2 + i,
                kd=2.6 + 0.1 * i,
                reserve=1000 + i,
            )
            for i in range(NUM_MOTORS)
        ],
        reserve=[7, 8, 9, 0xFFFFFFFF],
    )


def pack_lowcmd_by_hand(msg: LowCmd_) -> bytes:
    values = [msg.mode_pr, msg.mode_machine]
    for m in msg.motor_cmd:
        values += [m.mode, m.q, m.dq, m.tau, m.kp, m.kd, m.reserve]
    return struct.pack(LOWCMD_FORMAT, *values, *msg.reserve, msg.crc)


def pack_lowstate_by_hand(msg: LowState_) -> bytes:
    imu = msg.imu_state
    values = [*msg.version, msg.mode_pr, msg.mode_machine, msg.tick]
    values += [*imu.quaternion, *imu.gyroscope, *imu.accelerometer, *imu.rpy, imu.temperature]
    for m in msg.motor_state:
        values += [m.mode, m.q, m.dq, m.ddq, m.tau_est, *m.temperature, m.vol]
        values += [*m.sensor, m.motorstate, *m.reserve]
    return struct.pack(LOWSTATE_FORMAT, *values, *msg.wireless_remote, *msg.reserve, msg.crc)


@pytest.mark.parametrize("n_words", [0, 1, 2, 7, 250, 522])
def test_fast_crc_matches_bit_by_bit_rule(n_words):
    rng = np.random.default_rng(n_words)
    for _ in range(3):
        words = rng.integers(0, 2**32, n_words, dtype=np.uint32)
        assert crc32_unitree(words) == reference_crc(words)
    for fill in (0, 0xFFFFFFFF, 0x80000001):
        words = np.full(n_words, fill, dtype=np.uint32)
        assert crc32_unitree(words) == reference_crc(words)


def test_crc_is_fast_enough_for_500_hz():
    words = np.random.default_rng(0).integers(0, 2**32, 250, dtype=np.uint32)
    times = []
    for _ in range(50):
        start = time.perf_counter()
        crc32_unitree(words)
        times.append(time.perf_counter() - start)
    assert np.median(times) < 200e-6


def test_lowcmd_packs_as_the_c_struct_in_facts():
    msg = lowcmd_sample()
    by_hand = pack_lowcmd_by_hand(msg)
    assert struct.calcsize(LOWCMD_FORMAT) == 1004
    assert len(pack_lowcmd(msg)) == 1004
    assert pack_lowcmd(msg) == by_hand


def test_lowcmd_crc_is_the_rule_over_the_first_250_words():
    msg = lowcmd_sample()
    words = struct.unpack("<251I", pack_lowcmd_by_hand(msg))
    assert lowcmd_crc(msg) == reference_crc(words[:250])
    signed = with_crc(msg)
    assert signed.crc == reference_crc(words[:250])
    assert struct.unpack("<251I", pack_lowcmd_by_hand(signed))[-1] == signed.crc
    assert crc_ok(signed)
    assert not crc_ok(msg)
    assert msg.crc == 0  # with_crc returned a copy


def test_lowstate_layout_offsets_and_size():
    assert struct.calcsize(LOWSTATE_FORMAT) == 2092
    offsets = {name: LOWSTATE_DTYPE.fields[name][1] for name in LOWSTATE_DTYPE.names}
    assert offsets == {
        "version": 0,
        "mode_pr": 8,
        "mode_machine": 9,
        "tick": 12,
        "imu_state": 16,
        "motor_state": 72,
        "wireless_remote": 2032,
        "reserve": 2072,
        "crc": 2088,
    }
    assert MOTOR_STATE_DTYPE.itemsize == struct.calcsize("<" + MOTOR_STATE_FORMAT) == 56
    assert LOWSTATE_DTYPE.fields["imu_state"][0].itemsize == struct.calcsize("<" + IMU_FORMAT)


def test_lowstate_packs_by_hand_and_crc_covers_522_words():
    msg = _dds_peer.lowstate_sample()
    by_hand = pack_lowstate_by_hand(msg)
    assert pack_lowstate(msg) == by_hand
    words = struct.unpack("<523I", by_hand)
    assert lowstate_crc(msg) == reference_crc(words[:522])
    assert crc_ok(with_crc(msg))


def test_one_bit_changes_the_crc():
    msg = with_crc(lowcmd_sample())
    words = np.frombuffer(pack_lowcmd(msg), dtype="<u4")[:-1].copy()
    rng = np.random.default_rng(1)
    for index, bit in zip(rng.integers(0, 250, 20), rng.integers(0, 32, 20), strict=True):
        flipped = words.copy()
        flipped[index] ^= np.uint32(1 << int(bit))
        assert crc32_unitree(flipped) != msg.crc
    stale = dataclasses.replace(msg, mode_machine=msg.mode_machine ^ 1)
    assert not crc_ok(stale)


def test_differs_from_textbook_crc32_mpeg2():
    assert crc32_mpeg2(b"123456789") == 0x0376E6E7  # the catalogued check value
    msg = lowcmd_sample()
    packed = pack_lowcmd(msg)
    assert crc32_mpeg2(packed[:1000]) != lowcmd_crc(msg)
    # It is MPEG-2 over each word's bytes taken most significant first.
    words = np.frombuffer(packed, dtype="<u4")[:250]
    assert crc32_mpeg2(words.astype(">u4").tobytes()) == lowcmd_crc(msg)


def test_wrong_inputs_are_refused():
    with pytest.raises(ValueError, match="motor_cmd has 34 entries"):
        pack_lowcmd(dataclasses.replace(lowcmd_sample(), motor_cmd=[MotorCmd_()] * 34))
    with pytest.raises(ValueError):
        crc32_unitree(np.array([-1, 2]))
    with pytest.raises(TypeError):
        pack_lowcmd(LowState_())
    with pytest.raises(OverflowError):
        pack_lowcmd(dataclasses.replace(lowcmd_sample(), mode_pr=256))
