"""Deploy parts that need no second process: the background log writer, the deadline
clock, the ROS 2 state and command conversions, torso pushes, operator keys."""

import threading

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import Reader

from simreal.deploy.dds import ros2 as msgs
from simreal.deploy.g1 import ros2_state
from simreal.deploy.g1.clock import DeadlineClock
from simreal.deploy.g1.node import operator_word
from simreal.deploy.g1.sim_robot import DEFAULT_Q, MotorCommand, PushSchedule, SimG1
from simreal.deploy.logs import LogMeta, RolloutLog, read_rollout
from simreal.deploy.logs.background import BackgroundLog
from simreal.robots.g1 import JOINT_NAMES

META = LogMeta(
    robot="g1",
    joint_names=JOINT_NAMES,
    control_dt=0.02,
    command_fields=("q", "dq", "kp", "kd", "tau"),
    action_names=JOINT_NAMES,
)


def test_background_log_is_complete(tmp_path):
    log = BackgroundLog(RolloutLog(tmp_path / "bag", META))
    for k in range(300):
        t = 0.002 * k
        log.command(t, np.full((29, 5), float(k)))
        log.joint_state(t, np.full(29, k), np.zeros(29), np.zeros(29))
        log.loop_timing(t, 0.002, 1e-4)
    assert not (tmp_path / "bag").exists()  # published only when closed
    log.close()
    assert log.dropped == 0 and log.written == 900
    rollout = read_rollout(tmp_path / "bag")
    np.testing.assert_array_equal(rollout.series["command"].values[:, 0, 0], np.arange(300))
    np.testing.assert_array_equal(rollout.series["joint_position"].values[:, 0], np.arange(300))
    with Reader(tmp_path / "bag") as reader:
        assert reader.message_count == 901  # and the meta message
    info = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())
    assert info["rosbag2_bagfile_information"]["custom_data"]["dropped_messages"] == "0"
    with pytest.raises(AttributeError):
        log.not_a_topic  # noqa: B018


class StalledLog(RolloutLog):
    """A real log whose joint_state write waits for `release`: a writer that fell behind."""

    def __init__(self, *args):
        super().__init__(*args)
        self.release = threading.Event()

    def joint_state(self, *args):
        self.release.wait(timeout=30)
        super().joint_state(*args)


def test_background_log_drops_and_counts_instead_of_blocking(tmp_path):
    stalled = StalledLog(tmp_path / "bag", META)
    log = BackgroundLog(stalled, queue_size=2)
    submitted = 10
    for k in range(submitted):
        log.joint_state(0.01 * k, np.zeros(29))  # returns at once, even with the queue full
    assert log.dropped >= submitted - 3  # at most 1 being written and 2 queued
    stalled.release.set()
    log.close()
    with Reader(tmp_path / "bag") as reader:
        assert reader.message_count == 1 + submitted - log.dropped
    info = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())
    assert info["rosbag2_bagfile_information"]["custom_data"]["dropped_messages"] == str(
        log.dropped
    )


def test_deadline_clock_never_wakes_before_its_deadline():
    clock = DeadlineClock(0.002)
    first = clock.wait()
    for k in range(1, 30):
        deadline = clock.deadline
        woke = clock.wait()
        assert woke >= deadline  # late is possible on a busy machine; early never
        if clock.overruns == 0:
            assert deadline == pytest.approx(first + 0.002 * k)


def test_joint_states_by_name_and_commands_round_trip():
    names = list(reversed(JOINT_NAMES))
    q = np.arange(29.0)
    arrays = ros2_state.joint_arrays(names, q, -q, [], JOINT_NAMES)
    np.testing.assert_array_equal(arrays[0], q[::-1])
    np.testing.assert_array_equal(arrays[2], np.zeros(29))
    assert ros2_state.joint_arrays(names[1:], q[1:], q[1:], [], JOINT_NAMES) is None
    assert ros2_state.joint_arrays(names, q, q[:3], [], JOINT_NAMES) is None

    joints = msgs.JointState(name=names, position=q.tolist(), velocity=q.tolist())
    imu = msgs.Imu(orientation=msgs.Quaternion(x=0.0, y=0.6, z=0.0, w=0.8))
    assert ros2_state.newest_state([joints], None, JOINT_NAMES) == (None, 0)
    state, bad = ros2_state.newest_state([joints, msgs.JointState()], imu, JOINT_NAMES)
    assert bad == 1
    np.testing.assert_array_equal(state.quat_wxyz, [0.8, 0.0, 0.6, 0.0])
    np.testing.assert_array_equal(state.q, q[::-1])

    cmd = MotorCommand(*(np.arange(29.0) * (i + 1) for i in range(5)))
    layout = ros2_state.command_layout(JOINT_NAMES)
    back = ros2_state.motor_command(layout, ros2_state.command_data(cmd), JOINT_NAMES)
    for name in ("q", "dq", "tau", "kp", "kd"):
        np.testing.assert_array_equal(getattr(back, name), getattr(cmd, name))
    data = ros2_state.command_data(cmd)
    assert ros2_state.motor_command(layout[::-1], data, JOINT_NAMES) is None
    assert ros2_state.motor_command(layout, data[:-1], JOINT_NAMES) is None
    assert ros2_state.motor_command(layout, [np.nan, *data[1:]], JOINT_NAMES) is None


def test_push_schedule_and_torso_push():
    pushes = PushSchedule(force_n=30.0, every_s=2.0, duration_s=0.25, first_s=1.0)
    assert not pushes.force(0.99).any()
    np.testing.assert_array_equal(pushes.force(1.1), [-30.0, 0.0, 0.0])  # backward
    assert not pushes.force(1.3).any()
    np.testing.assert_array_equal(pushes.force(3.2), [30.0, 0.0, 0.0])  # then forward
    assert not PushSchedule().force(5.0).any()
    with pytest.raises(ValueError, match="duration"):
        PushSchedule(force_n=10.0, every_s=1.0, duration_s=2.0)

    sim = SimG1(band=True)  # the band holds the pelvis: 30 N moves it about 6 mm
    sim.apply(MotorCommand(DEFAULT_Q, np.zeros(29), np.zeros(29), np.zeros(29), np.zeros(29)))
    wrench = sim.push_torso(np.array([-30.0, 0.0, 0.0]))
    np.testing.assert_array_equal(wrench[:3], [-30.0, 0.0, 0.0])
    assert wrench[4] < 0  # a backward push above the pelvis pitches it backward (-y torque)
    x0 = sim.data.qpos[0]
    for _ in range(250):
        sim.step()
    assert sim.data.qpos[0] < x0 - 0.002


@pytest.mark.parametrize(
    ("text", "word"),
    [
        (" ", "estop"),
        ("e", "estop"),
        ("E", "estop"),
        ("s", "start"),
        ("p", "stop"),
        ("activate\n", "start"),
        ("deactivate", "stop"),
        ("estop", "estop"),
        ("x", None),
    ],
)
def test_operator_keys_and_words(text, word):
    assert operator_word(text) == word


def test_policy_runs_every_tenth_tick_on_the_tick_grid(tmp_path):
    """At 500 Hz a 50 Hz policy runs on exactly every 10th tick, whatever the rounding of
    the tick times; after an overrun (ticks skipped) its schedule restarts."""
    from _g1_policy import export_g1_policy

    from simreal.deploy.g1.node import DeployConfig, G1Node, load_g1_policy

    node = G1Node(load_g1_policy(export_g1_policy(tmp_path / "g1.onnx")), DeployConfig())
    clock = DeadlineClock(0.002)
    rng = np.random.default_rng(0)
    due = []
    for k in range(200):
        clock.tick_s = 5000.0 + 0.002 * k + rng.normal(scale=1e-12)
        due.append(node._policy_due(clock))
    assert np.flatnonzero(due).tolist() == list(range(0, 200, 10))
    clock.tick_s = 5000.0 + 0.002 * 205  # ticks 200-204 were lost
    assert node._policy_due(clock)
    clock.tick_s += 0.002
    assert not node._policy_due(clock)
