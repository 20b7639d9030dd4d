"""Rollout logs are rosbag2 directories that standard readers open: `rosbags` and MCAP's own."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from simreal.deploy.logs import (
    TOPICS,
    BagExistsError,
    LogMeta,
    LogReadError,
    RolloutLog,
    read_rollout,
)
from simreal.deploy.logs.messages import msgdef, parse_labels

JOINTS = ("motor0", "motor1", "motor2", "motor3")
OBS_LAYOUT = (("target_pos_error", 3), ("last_action", 4))
STEPS = 6
DT = 1.0 / 30.0
META = LogMeta(
    robot="crazyflie",
    joint_names=JOINTS,
    control_dt=DT,
    command_fields=("rpm",),
    command_tracks=("velocity", 2 * np.pi / 60),
    observation_names=OBS_LAYOUT,
    action_names=JOINTS,
    signal_names=("position_error_m",),
    task="quad-hover",
    start_time_ns=1_700_000_000_000_000_000,
)
TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)


def rotor_speed(k: int) -> np.ndarray:
    return 1500.0 + np.arange(4) + 0.1 * k


def command(k: int) -> np.ndarray:
    return 14468.429 + np.array([0.1, 0.2, 0.3, 0.4]) * k + 1e-9


def observation(k: int) -> np.ndarray:
    return (np.linspace(-1, 1, 7) * (k + 1) / 3).astype(np.float32)


def write_steps(log: RolloutLog, steps: int) -> None:
    for k in range(steps):
        t = k * DT
        quat = (np.cos(0.01 * k), np.sin(0.01 * k), 0.0, 0.0)
        log.joint_state(t, velocity=rotor_speed(k))
        log.imu(t, quat, (0.1 * k, -0.2, 0.3), None if k == 0 else (0.0, 0.1, 9.81 + k))
        log.base_pose(t, (0.0, 0.01 * k, 0.1 + 0.02 * k), quat)
        log.base_twist(t, (0.0, 0.3, 0.6), (0.3, 0.0, 0.0))
        log.wrench(t, (0.0, 0.0, 0.001 * k), (0.0, 0.0, 0.0))
        log.odometry(t, (0.1 * k, 0.0, 0.78), quat, (0.5, 0.0, 0.0), (0.0, 0.0, 0.2))
        log.observation(t, observation(k))
        log.action(t, np.full(4, 0.01 * k, dtype=np.float32))
        log.command(t, command(k))
        log.task_signals(t, [0.5 - 0.05 * k])
        log.loop_timing(t, DT, 2e-5 + 1e-6 * k)


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    path = tmp_path_factory.mktemp("logs") / "rollout"
    with RolloutLog(path, META) as log:
        write_steps(log, STEPS)
    return path


def test_directory_holds_metadata_and_one_mcap_file(bag):
    assert sorted(p.name for p in bag.iterdir()) == ["metadata.yaml", "rollout_0.mcap"]
    assert not bag.with_name("rollout.partial").exists()
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["version"] == 8
    assert info["storage_identifier"] == "mcap"
    assert info["relative_file_paths"] == ["rollout_0.mcap"]
    assert info["starting_time"]["nanoseconds_since_epoch"] == META.start_time_ns
    assert info["duration"]["nanoseconds"] == round((STEPS - 1) * DT * 1e9)
    counts = {
        t["topic_metadata"]["name"]: t["message_count"] for t in info["topics_with_message_count"]
    }
    assert counts == {topic: 1 if topic == "/simreal/meta" else STEPS for topic in TOPICS}
    assert info["message_count"] == 1 + STEPS * (len(TOPICS) - 1)
    for topic in info["topics_with_message_count"]:
        assert topic["topic_metadata"]["serialization_format"] == "cdr"
        (qos,) = yaml.safe_load(topic["topic_metadata"]["offered_qos_profiles"])
        assert qos["reliability"] == 1 and qos["history"] == 1


def test_rosbags_reads_topics_types_and_counts(bag):
    with Reader(bag) as reader:
        found = {c.topic: (c.msgtype, c.msgcount) for c in reader.connections}
        assert found == {
            topic: (msgtype, 1 if topic == "/simreal/meta" else STEPS)
            for topic, (msgtype, _) in TOPICS.items()
        }
        assert reader.message_count == 1 + STEPS * (len(TOPICS) - 1)
        assert reader.duration == round((STEPS - 1) * DT * 1e9) + 1
        latched = next(c for c in reader.connections if c.topic == "/simreal/meta")
        assert latched.ext.offered_qos_profiles[0].durability.name == "TRANSIENT_LOCAL"
        assert len(list(reader.messages())) == reader.message_count


def test_rosbags_deserializes_joint_state_imu_and_lowcmd(bag):
    decoded: dict[str, list] = {}
    with Reader(bag) as reader:
        for connection, timestamp, raw in reader.messages():
            message = TYPESTORE.deserialize_cdr(raw, connection.msgtype)
            decoded.setdefault(connection.topic, []).append((timestamp, message))
    k = 2
    timestamp, joints = decoded["/joint_states"][k]
    assert timestamp == META.start_time_ns + round(k * DT * 1e9)
    stamp = joints.header.stamp
    assert stamp.sec * 10**9 + stamp.nanosec == timestamp
    assert joints.name == list(JOINTS)
    np.testing.assert_array_equal(joints.velocity, rotor_speed(k))
    assert joints.position.size == 0 and joints.effort.size == 0

    _, imu = decoded["/imu"][k]
    assert imu.header.frame_id == "base"
    assert (imu.orientation.w, imu.orientation.x) == (np.cos(0.01 * k), np.sin(0.01 * k))
    assert (imu.angular_velocity.x, imu.angular_velocity.y) == (0.1 * k, -0.2)
    assert imu.linear_acceleration.z == 9.81 + k
    assert decoded["/imu"][0][1].linear_acceleration_covariance[0] == -1.0  # unknown

    _, lowcmd = decoded["/lowcmd"][k]
    assert [d.label for d in lowcmd.layout.dim] == [",".join(JOINTS), "rpm"]
    np.testing.assert_array_equal(lowcmd.data, command(k))  # float64: exact
    _, obs = decoded["/policy/observation"][k]
    assert parse_labels(obs.layout.dim[0].label) == list(OBS_LAYOUT)
    np.testing.assert_array_equal(obs.data, observation(k))
    _, meta = decoded["/simreal/meta"][0]
    assert LogMeta.from_json(meta.data) == META
    _, odom = decoded["/sim/odom"][k]
    assert (odom.header.frame_id, odom.child_frame_id) == ("world", "pelvis")
    assert (odom.pose.pose.position.x, odom.twist.twist.angular.z) == (0.1 * k, 0.2)
    assert odom.pose.pose.orientation.w == np.cos(0.01 * k)


def test_mcap_reader_with_ros2_decoder(bag):
    with (bag / "rollout_0.mcap").open("rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        header = reader.get_header()
        assert header.profile == "ros2"
        summary = reader.get_summary()
        assert summary.statistics.message_count == 1 + STEPS * (len(TOPICS) - 1)
        for channel in summary.channels.values():
            assert channel.message_encoding == "cdr"
            assert "offered_qos_profiles" in channel.metadata
            assert summary.schemas[channel.schema_id].encoding == "ros2msg"
        decoded = list(reader.iter_decoded_messages(topics=["/joint_states", "/imu"]))
    assert len(decoded) == 2 * STEPS
    schema, channel, message, joints = decoded[0]
    assert (schema.name, channel.topic) == ("sensor_msgs/msg/JointState", "/joint_states")
    assert joints.name == list(JOINTS)
    assert list(joints.velocity) == rotor_speed(0).tolist()
    imu = next(d for s, c, m, d in decoded if c.topic == "/imu" and m.log_time > message.log_time)
    assert imu.angular_velocity.x == pytest.approx(0.1)


@pytest.mark.parametrize("msgtype", sorted({msgtype for msgtype, _ in TOPICS.values()}))
def test_message_definitions_are_ros2s(msgtype):
    """Same text as rosbags generates from its ROS 2 Humble type store."""
    expected, _ = TYPESTORE.generate_msgdef(msgtype, ros_version=2)
    assert msgdef(msgtype).strip() == expected.strip()


def test_read_rollout_round_trip(bag):
    rollout = read_rollout(bag)
    assert rollout.meta == META
    assert rollout.duration_s == pytest.approx((STEPS - 1) * DT)
    s = rollout.series
    np.testing.assert_allclose(s["joint_velocity"].t, np.arange(STEPS) * DT, atol=1e-9)
    np.testing.assert_array_equal(s["joint_velocity"].values[3], rotor_speed(3))
    assert "joint_position" not in s
    np.testing.assert_array_equal(s["command"].values[:, :, 0], [command(k) for k in range(STEPS)])
    np.testing.assert_array_equal(s["observation"].values[4], observation(4))
    assert np.isnan(s["imu_linear_acceleration"].values[0]).all()
    assert s["imu_linear_acceleration"].values[1, 2] == 9.81 + 1
    assert s["base_position"].values[5].tolist() == [0.0, 0.05, 0.1 + 0.1]
    assert s["loop_timing"].values.shape == (STEPS, 2)
    np.testing.assert_allclose(s["task_signals"].values[:, 0], 0.5 - 0.05 * np.arange(STEPS))


def test_a_failing_rollout_still_leaves_a_readable_bag(tmp_path):
    path = tmp_path / "crashed"
    with pytest.raises(RuntimeError, match="controller fault"), RolloutLog(path, META) as log:
        write_steps(log, 3)
        raise RuntimeError("controller fault")
    with Reader(path) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
    assert counts["/joint_states"] == 3
    assert read_rollout(path).series["command"].values.shape == (3, 4, 1)


def test_refuses_a_directory_with_files_and_accepts_an_empty_one(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("keep me")
    with pytest.raises(BagExistsError, match="taken"):
        RolloutLog(taken, META)
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with RolloutLog(empty, META) as log:
        write_steps(log, 1)
    assert (empty / "metadata.yaml").is_file()


def test_refuses_a_partial_bag_left_by_another_run(tmp_path):
    (tmp_path / "run.partial").mkdir()
    with pytest.raises(BagExistsError, match=r"run\.partial"):
        RolloutLog(tmp_path / "run", META)


def test_truncated_mcap_is_read_up_to_its_last_complete_chunk(bag, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "metadata.yaml").write_bytes((bag / "metadata.yaml").read_bytes())
    data = (bag / "rollout_0.mcap").read_bytes()
    (broken / "rollout_0.mcap").write_bytes(data[: len(data) // 2])
    whole, cut = read_rollout(bag), read_rollout(broken)
    (report,) = cut.recovery  # the summary section is gone, the data chunk is whole
    assert report["file"].endswith("broken/rollout_0.mcap") and report["bytes_lost"] > 0
    assert not whole.recovery
    np.testing.assert_array_equal(cut.series["command"].values, whole.series["command"].values)


def test_missing_or_bad_metadata_is_an_error_naming_the_file(tmp_path):
    with pytest.raises(LogReadError, match="nothing-here: does not exist"):
        read_rollout(tmp_path / "nothing-here")
    (tmp_path / "metadata.yaml").write_text("just: text\n")
    with pytest.raises(LogReadError, match=r"metadata\.yaml: not rosbag2 metadata"):
        read_rollout(tmp_path)
