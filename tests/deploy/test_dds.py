"""DDS for real over CycloneDDS on loopback (tests/conftest.py sets CYCLONEDDS_URI):
wire names, ROS 2 message layouts, and round trips within a process and across two."""

import dataclasses
import os
import re
import subprocess
import sys
import time

import _dds_peer
import numpy as np
import pytest
from _repo import REPO
from cyclonedds.idl import IdlStruct

from simreal.deploy.dds import (
    DdsConfigError,
    DdsParticipant,
    check_dds_config,
    crc_ok,
    ros2,
    topic_name,
    type_name,
    unitree_hg,
    with_crc,
)
from simreal.deploy.dds.unitree_hg import LOWCMD_TOPIC, LOWSTATE_TOPIC, LowCmd_, LowState_

PEER = REPO / "tests" / "_dds_peer.py"
# One domain per test run, so concurrent runs on the machine never see each other's samples.
DOMAIN_ID = 1 + os.getpid() % 200

ROS_TYPES = {
    ros2.Time: "builtin_interfaces::msg::dds_::Time_",
    ros2.Header: "std_msgs::msg::dds_::Header_",
    ros2.JointState: "sensor_msgs::msg::dds_::JointState_",
    ros2.Quaternion: "geometry_msgs::msg::dds_::Quaternion_",
    ros2.Vector3: "geometry_msgs::msg::dds_::Vector3_",
    ros2.Imu: "sensor_msgs::msg::dds_::Imu_",
    ros2.MultiArrayDimension: "std_msgs::msg::dds_::MultiArrayDimension_",
    ros2.MultiArrayLayout: "std_msgs::msg::dds_::MultiArrayLayout_",
    ros2.Float32MultiArray: "std_msgs::msg::dds_::Float32MultiArray_",
    ros2.String: "std_msgs::msg::dds_::String_",
}
UNITREE_TYPES = {
    unitree_hg.MotorCmd_: "unitree_hg::msg::dds_::MotorCmd_",
    unitree_hg.LowCmd_: "unitree_hg::msg::dds_::LowCmd_",
    unitree_hg.MotorState_: "unitree_hg::msg::dds_::MotorState_",
    unitree_hg.IMUState_: "unitree_hg::msg::dds_::IMUState_",
    unitree_hg.LowState_: "unitree_hg::msg::dds_::LowState_",
}
ALL_TYPES = {**ROS_TYPES, **UNITREE_TYPES}


def take_first(reader, data_type: type, timeout_s: float):
    """The first valid sample of `data_type` within the timeout, else None."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        for sample in reader.take(10):
            if isinstance(sample, data_type):  # skips InvalidSample (writer gone, etc.)
                return sample
        time.sleep(0.005)
    return None


def test_ros2_wire_conventions():
    assert topic_name("/joint_states") == "rt/joint_states"
    assert topic_name("/robot/imu") == "rt/robot/imu"
    assert type_name("sensor_msgs", "JointState") == "sensor_msgs::msg::dds_::JointState_"
    with pytest.raises(ValueError):
        topic_name("joint_states")
    assert (LOWCMD_TOPIC, LOWSTATE_TOPIC) == ("rt/lowcmd", "rt/lowstate")


@pytest.mark.parametrize("data_type", list(ALL_TYPES), ids=lambda t: t.__name__)
def test_type_names_final_and_plain_cdr(data_type):
    assert data_type.__idl_typename__ == ALL_TYPES[data_type]
    assert data_type.__idl_annotations__["extensibility"] == "final"
    # Encapsulation 0x0001: plain CDR, little endian, what rmw_cyclonedds and the robot send.
    assert data_type().serialize()[:4] == b"\x00\x01\x00\x00"


@pytest.mark.slow
def test_registered_type_names():
    with DdsParticipant(DOMAIN_ID) as dds:
        for data_type, name in ALL_TYPES.items():
            topic = dds.topic(f"rt/simreal_test/{data_type.__name__}", data_type)
            assert topic.get_type_name() == name
        assert dds.topic(LOWCMD_TOPIC, LowCmd_).get_name() == "rt/lowcmd"
        with pytest.raises(TypeError, match="carries LowCmd_"):
            dds.topic(LOWCMD_TOPIC, LowState_)


def _ros_sample(typestore, ours: IdlStruct, ros_type: str):
    """`ours` rebuilt as the typestore's message of `ros_type`, field by field."""
    fields, cls = typestore.fielddefs[ros_type][1], typestore.types[ros_type]
    assert [f.name for f in dataclasses.fields(ours)] == [name for name, _ in fields]
    values = {}
    for name, (kind, detail) in fields:
        value = getattr(ours, name)
        if kind.name == "NAME":
            values[name] = _ros_sample(typestore, value, detail)
        elif kind.name in ("SEQUENCE", "ARRAY") and detail[0][0].name == "NAME":
            values[name] = [_ros_sample(typestore, v, detail[0][1]) for v in value]
        elif kind.name in ("SEQUENCE", "ARRAY") and detail[0][1][0] != "string":
            values[name] = np.array(value, dtype=detail[0][1][0])
        else:
            values[name] = value
    return cls(**values)


ROS_SAMPLES = {
    "sensor_msgs/msg/JointState": _dds_peer.joint_state_sample(),
    "sensor_msgs/msg/Imu": ros2.Imu(
        header=ros2.Header(stamp=ros2.Time(sec=-3, nanosec=7), frame_id="imu_link"),
        orientation=ros2.Quaternion(x=0.1, y=-0.2, z=0.3, w=0.9),
        orientation_covariance=[0.01 * i for i in range(9)],
        angular_velocity=ros2.Vector3(x=1.0, y=2.0, z=3.0),
        angular_velocity_covariance=[-1.0, *[0.0] * 8],
        linear_acceleration=ros2.Vector3(x=0.0, y=0.5, z=9.81),
        linear_acceleration_covariance=[0.5 * i for i in range(9)],
    ),
    "std_msgs/msg/Float32MultiArray": ros2.Float32MultiArray(
        layout=ros2.MultiArrayLayout(
            dim=[
                ros2.MultiArrayDimension(label="env", size=2, stride=6),
                ros2.MultiArrayDimension(label="obs", size=3, stride=3),
            ],
            data_offset=1,
        ),
        data=[0.5, -1.25, 3.0, 4.5, 5.0, -6.0, 7.0],
    ),
    "std_msgs/msg/String": ros2.String(data="hello, ROS 2"),
}


@pytest.mark.parametrize("store", ["ROS2_HUMBLE", "ROS2_JAZZY"])
@pytest.mark.parametrize("ros_type", list(ROS_SAMPLES))
def test_ros2_messages_match_ros2_definitions_and_cdr(store, ros_type):
    """rosbags carries ROS 2's own message definitions and CDR encoder: same field names
    in the same order, and byte-identical CDR."""
    from rosbags import typesys

    typestore = typesys.get_typestore(getattr(typesys.Stores, store))
    ours = ROS_SAMPLES[ros_type]
    theirs = _ros_sample(typestore, ours, ros_type)
    assert bytes(typestore.serialize_cdr(theirs, ros_type)) == ours.serialize()
    assert type(ours).deserialize(ours.serialize()) == ours


def test_refuses_to_start_without_cyclonedds_uri(monkeypatch):
    monkeypatch.delenv("CYCLONEDDS_URI")
    with pytest.raises(DdsConfigError, match=r"loopback\.xml"):
        DdsParticipant(DOMAIN_ID)
    assert check_dds_config(allow_default_config=True) is None
    monkeypatch.setenv("CYCLONEDDS_URI", "file:///nonexistent/loopback.xml")
    with pytest.raises(DdsConfigError, match="not a file"):
        DdsParticipant(DOMAIN_ID)


@pytest.mark.slow
def test_round_trip_in_one_process():
    state = with_crc(_dds_peer.lowstate_sample())
    joints = _dds_peer.joint_state_sample()
    with DdsParticipant(DOMAIN_ID) as robot, DdsParticipant(DOMAIN_ID) as node:
        state_reader = node.reader(LOWSTATE_TOPIC, LowState_)
        joints_reader = node.reader(_dds_peer.JOINT_STATES_TOPIC, ros2.JointState)
        state_writer = robot.writer(LOWSTATE_TOPIC, LowState_)
        joints_writer = robot.writer(_dds_peer.JOINT_STATES_TOPIC, ros2.JointState)
        got_state = got_joints = None
        end = time.monotonic() + 5.0
        while (got_state is None or got_joints is None) and time.monotonic() < end:
            state_writer.write(state)
            joints_writer.write(joints)
            got_state = got_state or take_first(state_reader, LowState_, 0.02)
            got_joints = got_joints or take_first(joints_reader, ros2.JointState, 0.02)
    assert got_state == state
    assert crc_ok(got_state)
    assert got_joints == joints


@pytest.mark.slow
def test_round_trip_across_processes(tmp_path):
    """A peer process publishes state (as the robot would); this one checks it and
    answers with a command that the peer checks. The peer also traces CycloneDDS's
    network setup, which must name loopback only."""
    trace = tmp_path / "cyclonedds.log"
    tracing = (
        "<CycloneDDS><Domain><Tracing><Verbosity>config</Verbosity>"
        f"<OutputFile>{trace}</OutputFile></Tracing></Domain></CycloneDDS>"
    )
    env = {**os.environ, "CYCLONEDDS_URI": os.environ["CYCLONEDDS_URI"] + "," + tracing}
    start = time.monotonic()
    peer = subprocess.Popen(
        [sys.executable, str(PEER), str(DOMAIN_ID), "8"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        with DdsParticipant(DOMAIN_ID) as dds:
            state_reader = dds.reader(LOWSTATE_TOPIC, LowState_)
            joints_reader = dds.reader(_dds_peer.JOINT_STATES_TOPIC, ros2.JointState)
            cmd_writer = dds.writer(LOWCMD_TOPIC, LowCmd_)
            state = take_first(state_reader, LowState_, 8.0)
            joints = take_first(joints_reader, ros2.JointState, 2.0)
            assert state is not None, "no LowState_ from the peer process"
            assert crc_ok(state)
            assert state == with_crc(_dds_peer.lowstate_sample())
            assert joints == _dds_peer.joint_state_sample()
            cmd = with_crc(_dds_peer.lowcmd_sample(state.mode_machine))
            end = time.monotonic() + 5.0
            while peer.poll() is None and time.monotonic() < end:
                cmd_writer.write(cmd)
                time.sleep(0.01)
        output, _ = peer.communicate(timeout=5)
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()
    assert peer.returncode == 0, output
    assert "lowcmd ok" in output
    assert time.monotonic() - start < 10.0
    log = trace.read_text()
    assert re.search(r"selected interfaces: lo \([^)]*\)\s*$", log, re.MULTILINE), log
    assert "ownip: udp/127.0.0.1\n" in log
    assert re.search(r"AllowMulticast/#text: false", log)
