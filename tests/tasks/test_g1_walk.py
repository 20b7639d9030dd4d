"""g1-walk: the rough ground (bounded slopes and steps, periodic, MuJoCo's own heights),
robots placed on it and carried back onto the same ground, commands (ranges, standing
share), the tracking window, the push test, the deployment metadata, and the deploy
node's observation of a trained g1-walk policy equal to evaluation's bit for bit."""

from __future__ import annotations

import json

import mujoco
import numpy as np
import pytest
import torch
from _g1_policy import sensed_state
from _repo import load_script

from simreal.deploy.commands import VelocityCommands
from simreal.deploy.g1.gait_clock import GaitClock
from simreal.deploy.g1.node import load_g1_policy
from simreal.deploy.g1.observation import G1Observation, PolicyInputs
from simreal.evaluation import load_policy, make_eval_env
from simreal.robots.g1 import DEFAULT_JOINT_POS, JOINT_NAMES
from simreal.robots.g1.kinematics import link_poses
from simreal.tasks.g1.gait import (
    HIP_YAW_JOINTS,
    SIDE_REFERENCE_JOINTS,
    reference_offset,
    walking,
)
from simreal.tasks.g1_walk import G1WalkConfig, G1WalkEnv, HeightField, TerrainConfig
from simreal.tasks.g1_walk.config import EvalWalkConfig, WalkCommandConfig
from simreal.tasks.g1_walk.env import draw_commands
from simreal.tasks.g1_walk.terrain import periodic_tile


def test_the_ground_keeps_its_slopes_and_steps_and_repeats_itself():
    cfg = TerrainConfig()
    tile = periodic_tile(cfg)
    n = tile.shape[0]
    assert n == 80 and abs(tile.mean()) < 1e-12
    # Between neighbouring grid points: at most the steepest slope over one cell plus
    # one step (a plate edge); across the tile's seam the same (it wraps around).
    limit = cfg.resolution_m * np.tan(np.radians(cfg.slope_max_deg)) + cfg.step_max_m + 1e-9
    for axis in (0, 1):
        rise = np.abs(np.diff(tile, axis=axis, append=np.take(tile, [0], axis=axis)))
        assert rise.max() <= limit
    smooth = periodic_tile(TerrainConfig(step_max_m=0.0))
    steepest = np.abs(np.diff(smooth, axis=1)).max() / cfg.resolution_m
    assert np.tan(np.radians(8.0)) < steepest <= np.tan(np.radians(10.0)) + 1e-9
    steps_only = periodic_tile(TerrainConfig(slope_max_deg=0.0))
    assert 0.03 < steps_only.max() - steps_only.min() <= 0.05
    field = HeightField(cfg)
    xy = np.random.default_rng(0).uniform(-12.0, 12.0, (500, 2))
    np.testing.assert_allclose(field.height_at(xy), field.height_at(xy + np.array([8.0, -8.0])))
    assert periodic_tile(TerrainConfig(seed=1)).tolist() != tile.tolist()


def test_heights_are_the_ones_mujoco_collides_with():
    """The lookup the task uses (rewards, falls, contacts, spawning) against MuJoCo's ray
    casts onto the environment's own height field."""
    env = G1WalkEnv(G1WalkConfig(), num_envs=1)
    model = mujoco.MjModel.from_xml_string(env.scene_mjcf(env.cfg))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    floor = model.geom("floor").id
    assert model.geom_type[floor] == mujoco.mjtGeom.mjGEOM_HFIELD
    points = np.random.default_rng(1).uniform(-11.9, 11.9, (300, 2))
    ray = []
    for x, y in points:
        geom = np.zeros(1, dtype=np.int32)
        dist = mujoco.mj_ray(model, data, np.array([x, y, 3.0]), np.array([0, 0, -1.0]),
                             np.array([1, 0, 0, 0, 0, 0], dtype=np.uint8), 1, -1, geom)  # fmt: skip
        assert geom[0] == floor
        ray.append(3.0 - dist)
    np.testing.assert_allclose(env.ground_height(points), ray, atol=1e-5)


def test_robots_start_on_the_ground_facing_any_way_and_stay_on_the_same_ground():
    env = G1WalkEnv(G1WalkConfig(), num_envs=16, seed=3)
    env.reset()
    clearance = env.foot_clearance()
    assert clearance.min() > -0.005 and clearance.max() < 0.08
    assert env.base_height().min() > 0.6 and env.base_height().max() < 0.9
    half = env.cfg.terrain.period_m / 2
    assert np.all(np.abs(env.engine.qpos[:, :2]) <= half)
    assert np.ptp(env.yaw()) > 2.0  # headings spread around the circle
    # Carried back by one period: same ground under the same relative feet.
    env.engine.qpos[0, 0] += half + 0.5
    env.foot_pos[0, :, 0] += half + 0.5
    before = env.ground_height(env.foot_pos[..., :2])
    env._wrap_to_middle_tile()
    assert -half <= env.engine.qpos[0, 0] < half
    np.testing.assert_allclose(env.ground_height(env.foot_pos[..., :2]), before, atol=1e-12)


def test_commands_cover_the_ranges_and_a_share_stand_still():
    cfg = WalkCommandConfig()
    command = draw_commands(np.random.default_rng(0), 20_000, cfg)
    standing = np.all(command == 0.0, axis=1)
    assert abs(standing.mean() - cfg.standing_prob) < 0.01
    moving = command[~standing]
    for k, (low, high) in enumerate((cfg.vx_m_s, cfg.vy_m_s, cfg.yaw_rate_rad_s)):
        assert low <= moving[:, k].min() < low + 0.01 and high - 0.01 < moving[:, k].max() <= high
    # Turning on the spot steps under g1-walk's rule, not under g1-pull's.
    turn = np.array([[0.0, 0.0, 0.5]])
    assert walking(turn, "planar")[0] and not walking(turn, "forward")[0]
    assert not walking(np.zeros((1, 3)), "planar")[0]
    with pytest.raises(ValueError, match="vx_m_s"):
        WalkCommandConfig(vx_m_s=(0.2, 1.0)).validate()


def test_single_axis_commands_walk_straight_step_sideways_or_turn_in_place():
    """A `single_axis_prob` share keeps one component, each axis about as often; at 0 the
    draw is the one every earlier run trained and evaluated with."""
    cfg = WalkCommandConfig(standing_prob=0.0, single_axis_prob=0.5)
    command = draw_commands(np.random.default_rng(0), 30_000, cfg)
    moving_axes = (command != 0.0).sum(axis=1)
    assert abs((moving_axes == 1).mean() - 0.5) < 0.01 and set(moving_axes) == {1, 3}
    single = command[moving_axes == 1]
    assert np.allclose(
        np.bincount(np.argmax(single != 0.0, axis=1)) / len(single), 1 / 3, atol=0.02
    )
    turning = single[single[:, 2] != 0.0, 2]
    assert turning.min() < -0.99 and turning.max() > 0.99  # the whole yaw range, in place
    before = WalkCommandConfig()
    rng = np.random.default_rng(3)
    ranges = np.array([before.vx_m_s, before.vy_m_s, before.yaw_rate_rad_s])
    expected = rng.uniform(ranges[:, 0], ranges[:, 1], (100, 3))
    expected[rng.random(100) < before.standing_prob] = 0.0
    np.testing.assert_array_equal(draw_commands(np.random.default_rng(3), 100, before), expected)
    with pytest.raises(ValueError, match="single_axis_prob"):
        WalkCommandConfig(single_axis_prob=1.5).validate()


def test_tracking_errors_skip_the_settling_time_after_a_new_command():
    cfg = G1WalkConfig(evaluation=True, eval_walk=EvalWalkConfig(settle_s=0.2))
    env = G1WalkEnv(cfg, num_envs=2, seed=0)
    env.reset()
    env.command[:] = [[0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
    env.next_command_s[:] = np.inf
    settle_steps = round(env.cfg.eval_walk.settle_s / env.control_dt)
    counted = []
    for _ in range(settle_steps + 5):
        env.step(np.zeros((2, 29)))
        counted.append(env.tracked_steps.copy())
    assert counted[settle_steps - 2].max() == 0.0  # inside the window: nothing counted
    alive = ~env.fell
    assert alive.all() and np.all(counted[-1] == 6)  # episode steps 10..15 (t >= 0.2 s)
    metrics = env.episode_metrics(np.arange(2))
    expected = np.sqrt(env.lin_vel_sq_error / np.maximum(env.tracked_steps, 1))
    np.testing.assert_allclose(metrics["lin_vel_tracking_rmse_m_s"][alive], expected[alive])
    assert metrics["lin_vel_tracking_rmse_m_s"][0] > 0.1  # standing still under a 0.5 m/s command


def test_the_self_contact_penalty_counts_what_the_engine_finds_and_needs_self_collision():
    """Weighted, `self_contact` is 1 exactly where MuJoCo's contact sensor counts robot
    geoms touching (flailing actions make some); at its default weight 0 the sensor is
    never read; on the idealized body (self-collision off) nothing touches: 0."""
    weights = {**G1WalkConfig().reward_weights, "self_contact": -1.0}
    env = G1WalkEnv(G1WalkConfig(reward_weights=weights), num_envs=16, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    touched = []
    for _ in range(40):
        env.step(rng.normal(size=(16, 29)) * 1.5)
        touched.append(env.self_contacts() > 0)
        penalty = env.episode_terms["self_contact"]
    touched = np.array(touched)
    assert touched.any() and not touched.all()
    whole = env.episode_step == 40  # never reset: their sum covers every step
    assert whole.sum() >= 4
    np.testing.assert_allclose(
        penalty[whole], touched.sum(0)[whole] * env.reward_weights()["self_contact"]
    )
    quiet = G1WalkEnv(G1WalkConfig(), num_envs=2, seed=0)
    quiet.reset()
    quiet.step(np.zeros((2, 29)))
    assert not quiet._sensor_views  # unweighted: never looked up
    ideal = G1WalkEnv(G1WalkConfig(self_collision=False, reward_weights=weights), 2, seed=0)
    ideal.reset()
    ideal.step(rng.normal(size=(2, 29)) * 1.5)
    assert not ideal.self_contacts().any() and not ideal.episode_terms["self_contact"].any()


def test_the_push_test_kicks_each_episode_once_by_its_ladder_magnitude():
    cfg = G1WalkConfig(
        evaluation=True, eval_walk=EvalWalkConfig(push_test=True, push_at_s=0.1, max_push_m_s=1.5)
    )
    env = G1WalkEnv(cfg, num_envs=4, seed=0)
    env.reset()
    np.testing.assert_allclose(env.push_m_s, [0.0, 0.5, 1.0, 1.5])
    jumps = []
    for _ in range(6):
        before = env.engine.qvel[:, :2].copy()
        pushed = env.pushed.copy()
        env.step(np.zeros((4, 29)))
        newly = env.pushed & ~pushed
        jumps.append((newly, np.linalg.norm(env.engine.qvel[:, :2] - before, axis=1)))
    newly, jump = next((n, j) for n, j in jumps if n.any())
    assert newly.all()
    assert np.all(jump[1:] > 0.6 * env.push_m_s[1:])  # the kick, less what one step absorbs
    metrics = env.episode_metrics(np.arange(4))
    assert set(metrics) >= {"push_m_s", "max_push_recovered_m_s"}
    assert G1WalkEnv.metric_reductions["max_push_recovered_m_s"] == "max"


def test_deployment_metadata_and_trained_ranges():
    env = G1WalkEnv(G1WalkConfig(), num_envs=1)
    meta = env.deployment_metadata()
    assert meta["gait_walking_rule"] == "planar" and meta["gait_start_s"] == 0.0
    low, high = G1WalkEnv.command_ranges({"command": {"vx_m_s": [-0.3, 0.8]}})
    assert low == (-0.3, -0.4, -1.0) and high == (0.8, 0.4, 1.0)
    conditions = env.evaluation_conditions()
    assert conditions["terrain"]["slope_max_deg"] == 10.0
    flat = G1WalkEnv(G1WalkConfig(terrain=TerrainConfig(kind="flat")), num_envs=1)
    assert flat.evaluation_conditions()["terrain"] == "flat" and flat.heightfield is None


def test_the_turning_reference_keeps_the_stance_foot_still_as_the_pelvis_turns():
    """gait_turn_gain = s T / 2: through one stance the stance hip's yaw runs down by the
    pelvis's turn at the commanded rate, which is what a foot fixed on the ground needs
    (the G1's hip yaw turns the foot about the pelvis's up axis, checked on the robot's
    own kinematics); nothing while standing."""
    s, period, rate = 0.55, 0.8, 0.7
    gain = s * period / 2
    phase = np.array([0.0, s - 1e-9, 0.0])
    command = np.array([[0.0, 0.0, rate], [0.0, 0.0, rate], [0.0, 0.0, 0.05]])
    offset = reference_offset(phase, command, s, 0.3, 0.0, "planar", turn_gain=gain)
    left, right = HIP_YAW_JOINTS
    turned = offset[1, left] - offset[0, left]
    np.testing.assert_allclose(turned, -rate * s * period, rtol=1e-6)
    # the right leg, half a period behind, is late in its own stance, turned the other way
    assert offset[0, right] == pytest.approx(-gain * rate * (0.5 / s * 2 - 1))
    assert not offset[2].any()  # 0.05 rad/s is standing: no clock, no reference
    q = np.zeros(len(JOINT_NAMES))
    q[left] = turned
    foot, _ = link_poses(q)["left_ankle_roll_link"]
    assert np.arctan2(foot[1, 0], foot[0, 0]) == pytest.approx(turned, rel=0.05)
    np.testing.assert_array_equal(
        reference_offset(phase, command, s, 0.3, 0.0, "planar")[:, HIP_YAW_JOINTS], 0.0
    )


def test_the_sideways_stride_carries_the_stance_foot_under_the_pelvis_at_the_speed():
    """gait_side_gain = s T / (2 * 0.52 m): through one stance the stance foot travels
    sideways against the commanded sideways speed by speed * s T, measured on the robot's
    own kinematics, with its sole kept level; nothing without a sideways command."""
    s, period, speed = 0.55, 0.8, 0.3
    gain = s * period / (2 * 0.52)
    phase = np.array([0.0, s - 1e-9])
    command = np.array([[0.0, speed, 0.0]] * 2)
    offset = reference_offset(phase, command, s, 0.3, 0.0, "planar", side_gain=gain)
    hip, ankle = SIDE_REFERENCE_JOINTS[0]
    np.testing.assert_allclose(offset[:, ankle], -offset[:, hip])
    default = np.array(DEFAULT_JOINT_POS)
    feet = []
    for row in offset:
        q = default.copy()
        q[[hip, ankle]] += row[[hip, ankle]]
        rot, foot = link_poses(q)["left_ankle_roll_link"]
        assert abs(np.arctan2(rot[2, 1], rot[2, 2])) < 0.02  # the sole stays level
        feet.append(foot[1])
    # a foot fixed on the ground under a pelvis moving left at `speed`: -speed * s T
    assert feet[1] - feet[0] == pytest.approx(-speed * s * period, rel=0.1)
    still = reference_offset(phase, command * [1, 0, 1], s, 0.3, 0.0, "planar", side_gain=gain)
    assert not still[:, SIDE_REFERENCE_JOINTS].any()


def test_the_deploy_clock_turns_as_training_does_and_old_policies_do_not():
    env = G1WalkEnv(
        G1WalkConfig(gait_reference_rad=0.3, gait_turn_gain=0.22, gait_side_gain=0.42),
        num_envs=1,
    )
    meta = {key: str(value) for key, value in env.deployment_metadata().items()}
    clock = GaitClock.from_metadata(meta, "policy.onnx")
    command = np.array([0.2, -0.3, -0.8])
    env.command[:] = command
    env.episode_step[:] = 7
    np.testing.assert_array_equal(
        clock.reference_offset(7 * env.control_dt, command), env.reference_offset()[0]
    )
    assert clock.reference_offset(7 * env.control_dt, command)[HIP_YAW_JOINTS].any()
    assert clock.reference_offset(7 * env.control_dt, command)[SIDE_REFERENCE_JOINTS].any()
    del meta["gait_turn_gain"], meta["gait_side_gain"]  # exported before either existed
    old = GaitClock.from_metadata(meta, "old.onnx")
    assert old.turn_gain == 0.0 and old.side_gain == 0.0
    with pytest.raises(Exception, match="gait_turn_gain"):
        GaitClock.from_metadata({**meta, "gait_turn_gain": "fast"}, "bad.onnx")
    with pytest.raises(ValueError, match="gait_turn_gain"):
        G1WalkConfig(gait_turn_gain=-0.1).validate()
    with pytest.raises(ValueError, match="gait_side_gain"):
        G1WalkConfig(gait_side_gain=-0.1).validate()


@pytest.fixture(scope="module")
def walk_run(tmp_path_factory):
    """A g1-walk run of one tiny training update."""
    from simreal.cli import main

    out = tmp_path_factory.mktemp("walk")
    argv = ["train", "g1-walk", "--envs", "4", "--steps", "96", "--out", str(out / "runs")]
    assert main([*argv, "--set", "train.eval_interval=1000"]) == 0
    return next((out / "runs" / "g1-walk").iterdir())


@pytest.fixture(scope="module")
def walk_policy(walk_run):
    """That run's policy, exported."""
    from simreal.cli import main

    onnx = walk_run.parent.parent.parent / "policy.onnx"
    assert main(["export", str(walk_run), "--onnx", str(onnx)]) == 0
    return onnx


def test_a_warm_start_lines_observations_up_by_name(walk_run, tmp_path, capsys):
    """g1-pull observes a pull direction between the command and the clock, g1-walk does
    not: warm-starting one from the other matches the terms by name (the clock's weights
    land on the clock, the direction starts at zero weight). A bare checkpoint of another
    size (no run config to read the layout from) is refused rather than lined up by
    position."""
    from simreal.cli import main
    from simreal.policies.checkpoint import MODEL_KEYS, load_checkpoint, resolve_checkpoint
    from simreal.tasks.g1_pull import G1PullConfig, G1PullEnv
    from simreal.training import warm_start_weights

    ckpt = resolve_checkpoint(walk_run)
    source = load_checkpoint(ckpt, MODEL_KEYS)
    pull = G1PullEnv(G1PullConfig(), num_envs=1)
    _, weights = warm_start_weights(walk_run, pull, source["model_cfg"], "g1-pull")
    key = "actor.nets.lower.0.weight"
    w0, w = source["model"][key], weights[key]
    # walk: 93 G1 values, command (93-95), clock (96-97); pull: ..., direction 96, clock 97-98
    assert torch.equal(w[:, 97:99], w0[:, 96:98]) and torch.equal(w[:, :96], w0[:, :96])
    assert not w[:, 96].any()  # the new term starts at zero weight
    mean0, mean = source["model"]["obs_normalizer.mean"], weights["obs_normalizer.mean"]
    assert torch.equal(mean[97:99], mean0[96:98]) and mean[96] == 0.0
    out = tmp_path / "r"
    argv = ["train", "g1-pull", "--envs", "2", "--steps", "16", "--out", str(out)]
    bare = tmp_path / "bare" / "checkpoints"
    bare.mkdir(parents=True)
    (bare / ckpt.name).write_bytes(ckpt.read_bytes())
    assert main([*argv, "--init-from", str(bare / ckpt.name)]) == 2
    err = capsys.readouterr().err
    assert "config.yaml" in err and "sizes differ (actor 98 vs 99" in err


def test_the_node_builds_g1_walks_observation_as_evaluation_does(walk_policy):
    """The node's observation of the same robot state, command and clock time equals the
    evaluation environment's bit for bit, through command changes, standing and turning
    (the planar rule runs the clock from the metadata)."""
    policy, config = load_policy(walk_policy)
    env = make_eval_env(config, 1, "mjbatch", seed=2, task=None)
    node_policy = load_g1_policy(walk_policy)
    observe = G1Observation(node_policy)
    assert observe.needs_command and observe.clock.walking_rule == "planar"
    assert json.loads(node_policy.raw_metadata["task_config"])["terrain"]["kind"] == "rough"
    mux = VelocityCommands(observe.ranges)
    obs, _ = env.reset()
    last_action, commands = np.zeros(29), set()
    for step in range(60):
        if step % 20 == 0:  # new commands: walking, turning on the spot, standing
            env.command[0] = [[0.6, -0.2, 0.3], [0.0, 0.0, -0.8], [0.0, 0.0, 0.0]][step // 20]
            env.command_start_s[0] = env.episode_step[0] * env.control_dt
            env.next_command_s[0] = np.inf
            obs, _ = env.observe()
        state = sensed_state(env, step)
        command = mux.offer("cmd_vel", env.command[0], now=float(step))
        inputs = PolicyInputs(command, env.episode_step[0] * env.control_dt)
        node_obs = observe(state, last_action, inputs)
        np.testing.assert_array_equal(node_obs, obs[0])
        commands.add(tuple(command))
        clip = node_policy.metadata.action_clip
        action = np.clip(policy(obs), -clip, clip)
        last_action = np.asarray(action[0], dtype=float)
        obs = env.step(action).obs
        if env.episode_step[0] == 0:
            break  # a fall ended the episode: the comparison stops with it
    assert mux.clipped == 0 and len(commands) >= 2


def test_tracking_error_splits_into_going_the_wrong_speed_and_swaying():
    """Two held commands; the velocity reaches half of each on average and oscillates
    by +-0.2 around that: bias, sway and slope come out as built, and their squares add
    up to the mean squared error."""
    split = load_script("experiments/g1_walk_tracking.py").split_errors
    t = np.arange(200)
    cmd = np.where(t < 100, 0.8, -0.4)[:, None]
    sway = 0.2 * np.where(t % 2 == 0, 1.0, -1.0)[:, None]
    vel = 0.5 * cmd + sway
    out = split(cmd, vel, (t >= 100).astype(int))
    assert out["slope"] == pytest.approx([0.5])
    assert out["sway_rms"] == pytest.approx(0.2)
    assert out["bias_rms"] == pytest.approx(np.sqrt((0.4**2 + 0.2**2) / 2))
    assert out["rmse"] ** 2 == pytest.approx(out["bias_rms"] ** 2 + out["sway_rms"] ** 2)
    assert out["segments"] == 2


def test_the_yaw_sway_spectrum_finds_a_twist_at_the_gait_frequency_and_a_jitter_above():
    """A yaw rate made of a 1.25 Hz twist (the 0.8 s gait's stride) and a 10 Hz jitter of
    equal power lands half in each band; windows with a standing step are left out."""
    spectrum = load_script("experiments/g1_walk_tracking.py").sway_spectrum
    dt = 0.02
    t = np.arange(1000)[:, None] * dt
    yaw = 0.3 * np.sin(2 * np.pi * 1.25 * t) + 0.3 * np.sin(2 * np.pi * 10.0 * t) + 0.5
    walking = np.ones((1000, 1), dtype=bool)
    bands = spectrum(yaw, walking, dt)
    assert bands["0.9-1.7_hz"] == pytest.approx(0.5, abs=0.02)
    assert bands["6-12_hz"] == pytest.approx(0.5, abs=0.02)
    assert sum(bands.values()) == pytest.approx(1.0)
    walking[::200] = False  # a stop in every window: nothing to measure
    assert spectrum(yaw, walking, dt) is None
