"""Faults the deploy path must survive: the checks in-process first (state machine, tick,
loop stalls, settings, policy limits, one commander), then as separate processes over
DDS on loopback (slow): a frozen state stream, a stalled node, a second commander, a
robot in another mode, bad arguments. `bench/faults.py` runs the same faults and times
them; no test here asserts a wall time, every wait is bounded."""

import os
import signal
import subprocess
import sys
import time

import pytest
from _g1_policy import export_g1_policy
from _procs import domain, g1_node, virtual_g1

from simreal.deploy.dds import DdsParticipant, stream_qos, take_raw, write_raw
from simreal.deploy.dds.unitree_hg import LOWCMD_TOPIC, LOWSTATE_TOPIC, LowCmd_, LowState_
from simreal.deploy.g1.messages import decode_lowcmd, decode_lowstate, encode_lowcmd
from simreal.deploy.g1.node import DeployConfig, load_g1_policy
from simreal.deploy.g1.safety import (
    Mode,
    SafetyConfig,
    StateMachine,
    TickWatch,
    check_domain,
    check_rate,
    check_state_timeout,
)
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.deploy.g1.virtual_robot import Commander, VirtualRobotConfig
from simreal.deploy.runtime import PolicyMetadataError
from simreal.deploy_refusals import BAD_DEPLOY_ARGUMENTS
from simreal.robots.g1 import ACTUATORS, DEFAULT_JOINT_POS, JOINT_NAMES, JOINTS

KNEE = JOINT_NAMES.index("left_knee_joint")
KNEE_BEYOND = JOINTS["left_knee_joint"].upper + 0.62


def running(sm: StateMachine, t: float = 0.0) -> StateMachine:
    sm.update(t, state_age_s=0.0, new_state=True)
    return sm


@pytest.mark.parametrize(
    ("inputs", "reason"),
    [
        ({"state_age_s": 0.0, "tick_age_s": 0.051}, "tick frozen"),
        ({"state_age_s": 0.0, "loop_gap_s": 0.2}, "loop stalled: 200 ms"),
    ],
)
def test_frozen_tick_and_own_stall_latch_damping(inputs, reason):
    sm = running(StateMachine(SafetyConfig(settle_ticks=1, settle_s=0.0)))
    assert sm.update(0.01, **inputs) is Mode.DAMPING
    assert reason in sm.transitions[-1].reason
    # fresh states, an advancing tick and a start do not undo it
    for t in (0.02, 0.03):
        assert sm.update(t, state_age_s=0.0, tick_age_s=0.0, loop_gap_s=0.002, command="start")
    assert sm.mode is Mode.DAMPING


def test_within_timeout_nothing_trips():
    sm = running(StateMachine(SafetyConfig(settle_ticks=1, settle_s=0.0)))
    mode = sm.update(0.01, state_age_s=0.049, tick_age_s=0.049, loop_gap_s=0.049)
    assert mode is Mode.MOVE_TO_DEFAULT


def test_settle_time_holds_zero_torque_for_discovery():
    sm = StateMachine(SafetyConfig(settle_ticks=1, settle_s=0.2))
    for t in (0.0, 0.1, 0.19):
        assert sm.update(t, state_age_s=0.0, new_state=True) is Mode.ZERO_TORQUE
    assert sm.update(0.2, state_age_s=0.0, new_state=True) is Mode.MOVE_TO_DEFAULT


def test_tick_watch_ages_a_frozen_tick_and_flags_a_mode_change():
    watch = TickWatch()
    assert watch.age(0.0) is None
    assert watch.observe(100, 5, now=0.0) is None
    assert watch.observe(100, 5, now=0.03) is None  # same tick again: a replay
    assert watch.age(0.06) == pytest.approx(0.06)
    assert watch.observe(102, 5, now=0.07) is None
    assert watch.age(0.08) == pytest.approx(0.01)
    assert watch.observe(104, 6, now=0.09) == "mode_machine changed from 5 to 6"


@pytest.mark.parametrize("ms", [0.0, -5.0, 201.0, float("inf"), float("nan")])
def test_state_timeout_refused_outside_0_200_ms(ms):
    with pytest.raises(ValueError, match="state timeout"):
        check_state_timeout(ms / 1e3)
    with pytest.raises(ValueError, match="state timeout"):
        SafetyConfig(state_timeout_s=ms / 1e3)


@pytest.mark.parametrize("hz", [0.0, -500.0, 2001.0, float("inf"), float("nan")])
def test_rate_refused_outside_0_2000_hz(hz):
    with pytest.raises(ValueError, match="--rate"):
        DeployConfig(rate_hz=hz)
    assert check_rate(2000.0) == 2000.0


@pytest.mark.parametrize("dom", [-1, 233, 999])
def test_domain_refused_outside_0_232(dom):
    with pytest.raises(ValueError, match="--domain"):
        DeployConfig(domain_id=dom)
    assert check_domain(232) == 232


def test_virtual_robot_refuses_a_bad_rate_or_domain():
    with pytest.raises(ValueError, match="--rate 0 Hz"):
        VirtualRobotConfig(rate_hz=0.0)
    with pytest.raises(ValueError, match="--domain 233"):
        VirtualRobotConfig(domain_id=233)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"kp": [1e6] + [ACTUATORS[n].kp for n in JOINT_NAMES[1:]]}, "left_hip_pitch_joint: kp"),
        (
            {"kd": [ACTUATORS[n].kd for n in JOINT_NAMES[:-1]] + [float("nan")]},
            "right_wrist_yaw_joint: kd",
        ),
        ({"default_joint_pos": [*DEFAULT_JOINT_POS[:KNEE], KNEE_BEYOND,
                                *DEFAULT_JOINT_POS[KNEE + 1:]]},
         "left_knee_joint: default_joint_pos 3.4998 outside the joint limits"),
        ({"action_scale": [-0.1] * len(JOINT_NAMES)}, "left_hip_pitch_joint: action_scale"),
    ],
)  # fmt: skip
def test_policy_beyond_the_robots_limits_is_refused(tmp_path, overrides, named):
    path = export_g1_policy(tmp_path / "bad.onnx", **overrides)
    with pytest.raises(PolicyMetadataError, match=named):
        load_g1_policy(path)


def test_nominal_policy_is_within_limits(tmp_path):
    load_g1_policy(export_g1_policy(tmp_path / "ok.onnx"))


def test_commander_obeys_the_first_writer_until_it_is_gone():
    c = Commander()
    assert c.accept(7, gone=False)
    assert not c.accept(9, gone=False) and c.foreign_commands == 1
    assert c.accept(7, gone=False)
    assert c.accept(9, gone=True) and c.handle == 9
    assert not c.accept(7, gone=False)


# ---- processes over DDS on loopback ----------------------------------------------


def newest(reader, decode, n: int = 64):
    out = [decode(d) for d in take_raw(reader, n)]
    return [x for x in out if x is not None]


@pytest.mark.slow
def test_replayed_state_with_a_frozen_tick_trips_the_node(g1_policy):
    """The robot stops; its last LowState is resent at 500 Hz: fresh, valid, tick frozen."""
    dom = domain()
    robot = virtual_g1(dom, "--hang")
    node = None
    try:
        with DdsParticipant(dom) as dds:
            states = dds.reader(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False, depth=4))
            replay = dds.writer(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False))
            node = g1_node(g1_policy, dom)
            node.wait_for("MOVE_TO_DEFAULT -> HOLD", 30)
            last = None
            while last is None:
                raw = take_raw(states, 4)
                last = raw[-1] if raw else None
                time.sleep(0.001)
            os.kill(robot.popen.pid, signal.SIGSTOP)
            end = time.monotonic() + 15
            line = None
            while line is None and time.monotonic() < end:
                write_raw(replay, last)
                time.sleep(0.002)
                line = node.poll_for("-> DAMPING")
            os.kill(robot.popen.pid, signal.SIGCONT)
    finally:
        robot.stop()
        summary = node.stop() if node else None
    assert line is not None, node.seen
    assert "tick frozen" in line
    assert summary["mode"] == "DAMPING"


@pytest.mark.slow
def test_node_stalled_by_sigstop_damps_on_waking_and_stays_damped(g1_policy):
    dom = domain()
    robot = virtual_g1(dom, "--hang")
    node = None
    try:
        with DdsParticipant(dom) as dds:
            cmds = dds.reader(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False, depth=64))
            node = g1_node(g1_policy, dom, "--auto-start")
            node.wait_for("HOLD -> ACTIVE", 30)
            time.sleep(0.3)
            os.kill(node.popen.pid, signal.SIGSTOP)
            time.sleep(0.5)  # longer than the 200 ms timeout even on a slow machine
            newest(cmds, decode_lowcmd)  # drop what came before the stall
            os.kill(node.popen.pid, signal.SIGCONT)
            line = node.wait_for("-> DAMPING", 15)
            time.sleep(0.3)
            after = newest(cmds, decode_lowcmd)
    finally:
        robot.stop()
        summary = node.stop() if node else None
    assert "ACTIVE -> DAMPING (loop stalled" in line
    assert after, "no commands after the stall"
    assert max(float(c.kp.max()) for c in after) == 0.0  # never kp > 0 again
    assert summary["mode"] == "DAMPING"


@pytest.mark.slow
def test_second_commander_refused_by_node_and_ignored_by_robot(g1_policy):
    dom = domain()
    robot = virtual_g1(dom, "--hang")
    node = None
    try:
        with DdsParticipant(dom) as dds:
            states = dds.reader(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False))
            other = dds.writer(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False))
            state = None
            while state is None:
                got = newest(states, decode_lowstate)
                state = got[-1] if got else None
                time.sleep(0.002)
            zero = encode_lowcmd(MotorCommand.zero_torque(), state.mode_machine)
            write_raw(other, zero)  # the robot now obeys this writer
            node = g1_node(g1_policy, dom)
            end = time.monotonic() + 30
            while node.popen.poll() is None and time.monotonic() < end:
                write_raw(other, zero)
                time.sleep(0.01)
            guid = str(other.guid)
            with DdsParticipant(dom) as dds2:  # a third party commands too: ignored
                third = dds2.writer(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False))
                damping = encode_lowcmd(MotorCommand.damping(8.0), state.mode_machine)
                for _ in range(100):
                    write_raw(other, zero)
                    write_raw(third, damping)
                    time.sleep(0.005)
                third_guid = str(third.guid)
                robot.wait_for("second writer on rt/lowcmd ignored", 15)
    finally:
        code = node.popen.wait(30) if node else None
        node.stop() if node else None  # collects its output
        summary = robot.stop()
    text = "\n".join(node.seen)
    assert code == 2
    assert f"another writer commands the robot ({guid})" in text
    assert "-> MOVE_TO_DEFAULT" not in text
    assert summary["foreign_writers"] == [third_guid], summary
    assert summary["foreign_commands"] > 0


@pytest.mark.slow
def test_second_commander_while_running_damps_the_node_naming_it(g1_policy):
    dom = domain()
    robot = virtual_g1(dom, "--hang")
    node = None
    try:
        node = g1_node(g1_policy, dom)
        node.wait_for("MOVE_TO_DEFAULT -> HOLD", 30)
        with DdsParticipant(dom) as dds:
            rogue = dds.writer(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False))
            hold = encode_lowcmd(MotorCommand.damping(8.0), 5)
            end, line = time.monotonic() + 15, None
            while line is None and time.monotonic() < end:
                write_raw(rogue, hold)
                time.sleep(0.01)
                line = node.poll_for("-> DAMPING")
            guid = str(rogue.guid)
            # Best-effort samples: keep commanding until the robot has seen one and said so
            # (the node may damp after the first, before the robot received any).
            end, ignored = time.monotonic() + 15, None
            while ignored is None and time.monotonic() < end:
                write_raw(rogue, hold)
                ignored = robot.next_match("second writer on rt/lowcmd ignored", 0.05)
            assert ignored is not None, robot.seen
    finally:
        summary = robot.stop()
        node.stop() if node else None
    assert line is not None and f"second writer on the command topic: {guid}" in line
    assert summary["foreign_writers"] == [guid]


@pytest.mark.slow
def test_robot_in_another_mode_trips_the_node(g1_policy):
    """States with another mode_machine (valid crc, advancing tick) reach the node."""
    dom = domain()
    robot = virtual_g1(dom, "--hang")
    node = None
    try:
        with DdsParticipant(dom) as dds:
            states = dds.reader(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False, depth=4))
            forged = dds.writer(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False))
            node = g1_node(g1_policy, dom)
            node.wait_for("MOVE_TO_DEFAULT -> HOLD", 30)
            from simreal.deploy.dds.crc import LOWSTATE_CDR, record_crc

            end, line = time.monotonic() + 15, None
            while line is None and time.monotonic() < end:
                for raw in take_raw(states, 4):
                    rec = LOWSTATE_CDR.from_cdr(raw)
                    rec["mode_machine"] = 6
                    rec["crc"] = record_crc(rec)
                    write_raw(forged, LOWSTATE_CDR.to_cdr(rec))
                time.sleep(0.002)
                line = node.poll_for("-> DAMPING")
    finally:
        robot.stop()
        node.stop() if node else None
    assert line is not None and "mode_machine changed from 5 to 6" in line


@pytest.mark.slow
def test_robot_drops_a_command_for_another_mode_machine():
    dom = domain()
    robot = virtual_g1(dom, "--hang")
    try:
        with DdsParticipant(dom) as dds:
            cmds = dds.writer(LOWCMD_TOPIC, LowCmd_, stream_qos(reliable=False))
            damping = encode_lowcmd(MotorCommand.damping(8.0), 6)
            for _ in range(200):
                write_raw(cmds, damping)
                time.sleep(0.002)
            robot.wait_for("mode_machine 6 dropped", 15)
    finally:
        summary = robot.stop()
    assert summary["wrong_mode_machine_commands"] > 0
    assert summary["valid_commands"] == 0 and summary["command_state"] == "waiting"


@pytest.mark.slow
@pytest.mark.parametrize(("args", "message"), BAD_DEPLOY_ARGUMENTS)
def test_bad_deploy_arguments_are_refused_before_dds(g1_policy, args, message):
    run = subprocess.run(
        [sys.executable, "-m", "simreal", "deploy", str(g1_policy), "--robot", "g1", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CYCLONEDDS_URI": ""},  # DDS would refuse to start without it
    )
    assert run.returncode == 2
    assert message in run.stderr and "Traceback" not in run.stderr
    assert "CYCLONEDDS_URI" not in run.stderr  # refused before any DDS was made
