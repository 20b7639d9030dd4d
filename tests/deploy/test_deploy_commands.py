"""Commands into the deploy node and the virtual robot's ground truth: the command mux
(decay, clipping, non-finite values, priorities), velocity keys, the Unitree remote's
bytes, the Twist type on the wire, the observation of g1-pull built from its own terms
(the same as evaluation's, bit for bit), the gait clock from the metadata, the odometry
log. Commands over real CycloneDDS, end to end, are in test_deploy_cmd_vel.py."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from _g1_policy import sensed_state
from _repo import REPO

from simreal.deploy.commands import MAX_AGE_S, CommandRanges, VelocityCommands
from simreal.deploy.dds import ros2 as msgs
from simreal.deploy.dds import topic_name
from simreal.deploy.dds.unitree_hg import LowState_
from simreal.deploy.g1 import links
from simreal.deploy.g1.messages import decode_lowstate, encode_lowstate
from simreal.deploy.g1.node import DeployConfig, G1Node, load_g1_policy
from simreal.deploy.g1.observation import G1Observation, PolicyInputs
from simreal.deploy.g1.remote import parse_remote, remote_bytes, remote_command
from simreal.deploy.g1.safety import action_to_target
from simreal.deploy.g1.sim_robot import SimG1
from simreal.deploy.logs import LogMeta, RolloutLog
from simreal.deploy.logs.reader import read_rollout
from simreal.deploy.runtime import PolicyMetadataError
from simreal.deploy.velocity_keys import key_command
from simreal.evaluation import load_policy, make_eval_env
from simreal.robots.g1 import JOINT_NAMES, JOINTS

PULL = REPO / "results" / "g1-pull" / "policy.onnx"
FORCE = REPO / "results" / "g1-force" / "policy.onnx"
RANGES = CommandRanges((-0.4, 0.0, -0.5), (0.0, 0.0, 0.5))
"""g1-pull's trained commands pulling backward (its exported task_config)."""


def test_a_command_decays_to_zero_after_half_a_second():
    mux = VelocityCommands(RANGES)
    mux.offer("cmd_vel", [-0.2, 0.0, 0.1], now=10.0)
    np.testing.assert_array_equal(mux.current(10.0 + MAX_AGE_S), [-0.2, 0.0, 0.1])
    np.testing.assert_array_equal(mux.current(10.0 + MAX_AGE_S + 1e-3), [0.0, 0.0, 0.0])
    assert mux.source(10.6) is None


def test_commands_outside_the_trained_ranges_are_clipped_and_counted():
    mux = VelocityCommands(RANGES)
    assert mux.offer("cmd_vel", [0.5, 0.3, -2.0], now=0.0).tolist() == [0.0, 0.0, -0.5]
    mux.offer("cmd_vel", [-0.1, 0.0, 0.2], now=0.1)  # inside: not counted
    assert mux.counters() == {
        "commands_received": 2,
        "commands_clipped": 1,
        "commands_non_finite": 0,
    }


def test_a_non_finite_command_is_dropped_and_counted():
    mux = VelocityCommands(RANGES)
    mux.offer("cmd_vel", [-0.3, 0.0, 0.0], now=0.0)
    assert mux.offer("cmd_vel", [np.nan, 0.0, 0.0], now=0.1) is None
    assert mux.offer("cmd_vel", [0.0, 0.0, np.inf], now=0.2) is None
    assert mux.non_finite == 2 and mux.clipped == 0
    np.testing.assert_array_equal(mux.current(0.3), [-0.3, 0.0, 0.0])  # the last good one


def test_keys_then_remote_then_cmd_vel_and_keys_hold_until_zeroed():
    mux = VelocityCommands(RANGES)
    mux.offer("cmd_vel", [-0.1, 0.0, 0.0], now=0.0)
    mux.offer("remote", [-0.2, 0.0, 0.0], now=0.0)
    assert mux.source(0.1) == "remote"
    mux.offer("keys", [-0.3, 0.0, 0.0], now=0.0)
    assert mux.source(0.1) == "keys" and mux.current(100.0)[0] == -0.3  # held
    mux.offer("keys", [0.0, 0.0, 0.0], now=0.2)  # k: back to the others
    assert mux.source(0.3) == "remote"
    mux.offer("cmd_vel", [-0.1, 0.0, 0.0], now=0.45)
    assert mux.source(0.6) == "cmd_vel"  # the remote aged out, cmd_vel did not
    mux.stop(1.0)
    np.testing.assert_array_equal(mux.current(1.0), [0.0, 0.0, 0.0])


def test_velocity_keys_step_the_setpoint_inside_the_ranges():
    ranges = CommandRanges((-0.4, -0.2, -0.5), (0.4, 0.2, 0.5))
    s = np.zeros(3)
    s = key_command("i", s, ranges)
    s = key_command("i", s, ranges)
    s = key_command("j", s, ranges)
    s = key_command("o", s, ranges)
    np.testing.assert_allclose(s, [0.2, -0.1, 0.1])
    for _ in range(10):
        s = key_command(",", s, ranges)
    assert s[0] == -0.4  # stops at the trained range
    assert key_command("l", s, ranges)[2] == 0.0
    np.testing.assert_array_equal(key_command("k", s, ranges), [0.0, 0.0, 0.0])
    assert key_command("x", s, ranges) is None
    assert key_command("s", s, ranges) is None  # the node's start key, not a velocity key


def unitree_remote(btn: int, lx: float, rx: float, ry: float, l2: float, ly: float) -> bytes:
    """xRockerBtnDataStruct written field by field at its documented offsets."""
    data = bytearray(40)
    data[0:2] = b"\x55\x51"  # head
    struct.pack_into("<H", data, 2, btn)
    for offset, value in zip((4, 8, 12, 16, 20), (lx, rx, ry, l2, ly), strict=True):
        struct.pack_into("<f", data, offset, value)
    return bytes(data)


def test_wireless_remote_bytes_parse_to_sticks_buttons_and_a_command():
    data = unitree_remote(0b1_0000_0001, lx=0.5, rx=-1.0, ry=0.25, l2=0.0, ly=-0.5)
    remote = parse_remote(data)
    assert (remote.lx, remote.rx, remote.ry, remote.ly) == (0.5, -1.0, 0.25, -0.5)
    assert remote.buttons == {"R1", "A"}
    ranges = CommandRanges((-0.4, -0.2, -0.5), (0.6, 0.2, 0.5))
    # ly back half way: half the most negative vx; lx right: vy to the right (negative);
    # rx full left: turn counter-clockwise at the largest yaw rate.
    np.testing.assert_allclose(remote_command(remote, ranges), [-0.2, -0.1, 0.5])
    assert remote_bytes(lx=0.5, rx=-1.0, ry=0.25, ly=-0.5, buttons=("R1", "A"))[2:] == data[2:]
    assert not parse_remote(remote_bytes(lx=0.01, ly=-0.02)).deflected()  # dead zone
    with pytest.raises(ValueError, match="39 bytes"):
        parse_remote(bytes(39))


def test_lowstate_carries_the_remote_bytes_through_its_codec():
    sensors = SimG1(dt=0.002).sensors()
    data = remote_bytes(ly=0.75, buttons=("B",))
    raw = encode_lowstate(sensors, 40, wireless_remote=data)
    assert decode_lowstate(raw).wireless_remote == data
    assert bytes(LowState_.deserialize(raw).wireless_remote) == data  # the IDL type agrees
    assert decode_lowstate(encode_lowstate(sensors, 42)).wireless_remote == bytes(40)


def test_twist_has_ros2_type_naming():
    assert msgs.Twist.__idl_typename__ == "geometry_msgs::msg::dds_::Twist_"
    assert topic_name(links.CMD_VEL_TOPIC) == "rt/cmd_vel"
    twist = msgs.Twist(msgs.Vector3(0.3, -0.1, 9.0), msgs.Vector3(1.0, 2.0, -0.4))
    again = msgs.Twist.deserialize(twist.serialize())
    np.testing.assert_array_equal(
        links.twist_command(again.linear, again.angular), [0.3, -0.1, -0.4]
    )


def test_g1_pull_policy_gets_its_clock_and_ranges_from_its_metadata():
    observe = G1Observation(load_g1_policy(PULL), pull_direction=-1.0)
    assert observe.needs_command and observe.clock is not None
    assert observe.clock.period_s == 0.8 and observe.clock.reference_rad == 0.3
    assert observe.ranges == RANGES
    assert G1Observation(load_g1_policy(PULL), pull_direction=1.0).ranges.high[0] == 0.4
    force = G1Observation(load_g1_policy(FORCE))
    assert not force.needs_command and force.clock is None and force.ranges is None


def test_a_pull_policy_without_its_clock_metadata_is_refused(tmp_path):
    import onnx

    model = onnx.load(PULL)
    kept = [p for p in model.metadata_props if p.key != "gait_period_s"]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    path = tmp_path / "no_clock.onnx"
    onnx.save(model, path)
    with pytest.raises(PolicyMetadataError, match="gait_period_s"):
        G1Node(load_g1_policy(path), DeployConfig())


def test_a_term_the_node_cannot_feed_is_refused_naming_it(tmp_path, monkeypatch):
    """A registered task whose observation reads something the robot does not report
    (here the cart's force) is refused at start, naming the term and what it reads."""
    from _g1_policy import ACTION_GROUPS, g1_metadata

    from simreal.policies.config import ModelConfig
    from simreal.policies.export import export_onnx
    from simreal.policies.models import ActorCritic
    from simreal.tasks import registry
    from simreal.tasks.g1 import POLICY_TERMS
    from simreal.tasks.g1_force import G1ForceConfig, G1ForceEnv
    from simreal.tasks.terms import ObservationTerm, layout

    class CartForceEnv(G1ForceEnv):
        policy_terms = (*POLICY_TERMS, ObservationTerm("cart_force", 1, lambda r: r.cart_force))

    spec = registry.TaskSpec("g1-cart", "test", "g1", G1ForceConfig, CartForceEnv)
    monkeypatch.setitem(registry.TASKS, "g1-cart", spec)
    names = [list(term) for term in layout(CartForceEnv.policy_terms)]
    groups = {name: tuple(idx) for name, idx in ACTION_GROUPS.items()}
    model = ActorCritic(94, 94, groups, ModelConfig(actor_hidden=(8,), critic_hidden=(8,)))
    path = export_onnx(
        model, tmp_path / "cart.onnx", g1_metadata(task="g1-cart", observation_names=names)
    )
    with pytest.raises(PolicyMetadataError, match=r"'cart_force'.*reads 'cart_force'"):
        G1Node(load_g1_policy(path), DeployConfig())


def test_evaluation_and_the_node_build_the_same_observation_and_action():
    """The committed g1-pull policy through `simreal eval`'s environment (evaluation
    mode: no noise), pulling backward: at every step the node's observation of the same
    robot state, command and clock time equals the environment's bit for bit, so the
    actions are the same, and the node's joint targets (with the gait reference) equal
    the environment's command."""
    policy, config = load_policy(PULL)
    env = make_eval_env(config, 1, "mjbatch", seed=0, task=None)
    node_policy = load_g1_policy(PULL)
    observe = G1Observation(node_policy, pull_direction=-1.0)
    mux = VelocityCommands(observe.ranges)
    meta = node_policy.metadata
    assert env.direction[0] == -1.0
    lower = np.array([JOINTS[n].lower for n in JOINT_NAMES])
    upper = np.array([JOINTS[n].upper for n in JOINT_NAMES])
    obs, _ = env.reset()
    last_action, walked = np.zeros(29), 0
    for step in range(90):
        state = sensed_state(env, step)
        command = mux.offer("cmd_vel", env.command[0], now=float(step))
        inputs = PolicyInputs(command, env.episode_step[0] * env.control_dt)
        node_obs = observe(state, last_action, inputs)
        np.testing.assert_array_equal(node_obs, obs[0])
        raw = policy(obs)
        np.testing.assert_array_equal(node_policy(node_obs), raw[0])
        action = np.clip(raw, -meta.action_clip, meta.action_clip)
        target = action_to_target(
            np.asarray(action[0], dtype=float),
            default=np.asarray(meta.default_joint_pos) + observe.reference_offset(inputs),
            scale=np.asarray(meta.action_scale),
            lower=lower,
            upper=upper,
            previous=np.zeros(29),
            max_step=np.inf,
        )
        np.testing.assert_allclose(target, env.command_from_action(action)[0], rtol=0, atol=1e-12)
        walked += bool(node_obs[-2:].any())
        last_action = np.asarray(action[0], dtype=float)
        obs = env.step(action).obs
    assert mux.clipped == 0 and mux.non_finite == 0
    assert walked >= 30  # the clock ran: the comparison covered walking, not only standing


def test_the_odometry_log_reads_back(tmp_path):
    meta = LogMeta(robot="g1", joint_names=JOINT_NAMES, control_dt=0.01, command_fields=("q",))
    with RolloutLog(tmp_path / "truth", meta) as log:
        for k in range(3):
            log.odometry(0.01 * k, [k, 0.0, 0.78], [1.0, 0.0, 0.0, 0.0], [0.5, 0, 0], [0, 0, k])
            log.wrench(0.01 * k, [10.0, 0, 0], [0, 0, 1.0])
    rollout = read_rollout(tmp_path / "truth")
    assert rollout.topics["/sim/odom"] == ("nav_msgs/msg/Odometry", 3)
    np.testing.assert_allclose(rollout.series["odom_position"].values[:, 0], [0, 1, 2])
    np.testing.assert_allclose(rollout.series["odom_angular_velocity"].values[:, 2], [0, 1, 2])
    np.testing.assert_allclose(rollout.series["odom_linear_velocity"].values[:, 0], 0.5)
    np.testing.assert_allclose(rollout.series["wrench"].values[0], [10, 0, 0, 0, 0, 1])
