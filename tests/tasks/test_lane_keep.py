"""lane-keep: car dynamics, roads and their rejection, LiDAR, captions, the semantic
channel's providers, the PID baseline, the token-embedding policy and its export."""

from __future__ import annotations

import json
import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from simreal.robots.car import CarParams, build_mjcf, chassis_wrench
from simreal.tasks.lane_keep import LaneKeepConfig, LaneKeepEnv, lidar
from simreal.tasks.lane_keep import captions as cap
from simreal.tasks.lane_keep.config import LidarConfig, PidConfig, SemanticConfig
from simreal.tasks.lane_keep.roads import (
    HELD_OUT_SEED0,
    InvalidRoadError,
    RoadConfig,
    build_bank,
    check_road,
    generate_road,
    held_out_seeds,
    integrate,
    train_seeds,
)

LIMIT = CarParams().max_curvature


def make(n: int, **cfg) -> LaneKeepEnv:
    env = LaneKeepEnv(LaneKeepConfig(**cfg), num_envs=n, seed=0, num_threads=1)
    env.reset()
    return env


def drive(
    steer: float, speed: float, seconds: float, mu: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate one car at constant steering command; returns qpos and qvel at the end."""
    p = CarParams()
    model = mujoco.MjModel.from_xml_string(build_mjcf(p, 0.01))
    data = mujoco.MjData(model)
    data.qvel[0] = speed
    data.ctrl[:] = steer
    for _ in range(round(seconds / 0.01)):
        data.xfrc_applied[1] = chassis_wrench(
            data.qpos[2:3],
            data.qvel[None, 0:2],
            data.qvel[2:3],
            data.qpos[3:4],
            np.array([speed]),
            np.array([mu]),
            p,
        )[0]
        mujoco.mj_step(model, data)
    return data.qpos.copy(), data.qvel.copy()


def test_steering_servo_reaches_the_command_in_radians():
    qpos, _ = drive(0.3, 3.0, 1.0)
    assert qpos[3] == pytest.approx(0.3, abs=0.01) and qpos[4] == pytest.approx(0.3, abs=0.01)


def test_slow_turn_follows_the_kinematic_bicycle_and_fast_turn_understeers():
    p = CarParams()
    steer = 0.05
    _, slow = drive(steer, 3.0, 6.0)
    kinematic = math.tan(steer) / p.wheelbase
    assert slow[2] / 3.0 == pytest.approx(kinematic, rel=0.05)
    _, fast = drive(steer, 12.0, 6.0)
    assert fast[2] / 12.0 < 0.95 * kinematic  # understeer: rear stiffness share > front


def test_low_friction_saturates_the_tyres():
    _, grippy = drive(0.3, 10.0, 3.0, mu=1.0)
    _, icy = drive(0.3, 10.0, 3.0, mu=0.2)
    lateral_accel = abs(icy[2]) * np.linalg.norm(icy[0:2])
    assert lateral_accel < 0.2 * 9.81 * 1.1 < abs(grippy[2]) * np.linalg.norm(grippy[0:2])


def test_road_is_reproducible_from_its_seed_and_within_limits():
    a, b = generate_road(7, RoadConfig(), LIMIT), generate_road(7, RoadConfig(), LIMIT)
    np.testing.assert_array_equal(a.xy, b.xy)
    assert np.abs(a.curvature).max() <= 1 / 25.0 + 1e-9
    step = np.linalg.norm(np.diff(a.xy, axis=0), axis=1)
    np.testing.assert_allclose(step, 0.5, rtol=1e-3)


def test_curvature_beyond_the_turning_limit_is_rejected_with_the_reason():
    cfg = RoadConfig(min_radius_m=4.0, max_radius_m=5.0)
    with pytest.raises(InvalidRoadError, match=r"road seed 3: curvature .* turning limit"):
        generate_road(3, cfg, LIMIT)
    with pytest.raises(ValueError, match=r"task\.road: .* rejected"):
        build_bank(held_out_seeds(), 4, cfg, LIMIT)


def test_self_intersecting_road_is_rejected_with_the_reason():
    kappa = np.full(800, 1 / 30.0)  # 400 m on a 30 m circle: more than two laps
    _, xy = integrate(kappa, 0.5)
    with pytest.raises(InvalidRoadError, match="road seed 9: self-intersecting"):
        check_road(9, xy, kappa, np.full(800, 3.5), 0.5, LIMIT)


def test_training_and_held_out_roads_never_share_a_seed():
    cfg = RoadConfig()
    train = build_bank(train_seeds(np.random.default_rng(0)), 64, cfg, LIMIT)
    held = build_bank(held_out_seeds(), 16, cfg, LIMIT)
    assert train.seeds.max() < HELD_OUT_SEED0 <= held.seeds.min()
    assert held.seeds[0] == HELD_OUT_SEED0 or HELD_OUT_SEED0 in held.rejected


def dense_cast(origin, yaw, start, end, directions, max_range):
    """Every beam against every segment: the reference for the rasterized cast."""
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    rel, e = start - origin[:, None], end - start
    ax, ay = c * rel[..., 0] + s * rel[..., 1], -s * rel[..., 0] + c * rel[..., 1]
    ex, ey = c * e[..., 0] + s * e[..., 1], -s * e[..., 0] + c * e[..., 1]
    dx, dy = directions[:, 0][None, :, None], directions[:, 1][None, :, None]
    ax, ay, ex, ey = (v[:, None, :] for v in (ax, ay, ex, ey))
    den = dx * ey - dy * ex
    with np.errstate(divide="ignore", invalid="ignore"):
        t, u = (ax * ey - ay * ex) / den, (ax * dy - ay * dx) / den
    hit = (t > 0) & (u >= 0) & (u <= 1)
    return np.minimum(np.where(hit, t, np.inf).min(axis=2), max_range)


@pytest.mark.parametrize("fov", [180.0, 270.0, 360.0])
def test_rasterized_lidar_matches_brute_force_ray_casting(fov: float):
    rng = np.random.default_rng(1)
    start = rng.uniform(-15, 15, (40, 30, 2))
    end = start + rng.uniform(-4, 4, (40, 30, 2))
    origin, yaw = rng.uniform(-2, 2, (40, 2)), rng.uniform(-np.pi, np.pi, 40)
    fast = lidar.cast(origin, yaw, start, end, fov, 180, 20.0)
    slow = dense_cast(origin, yaw, start, end, lidar.beam_directions(180, fov), 20.0)
    np.testing.assert_allclose(fast, slow, atol=1e-9)
    assert (fast < 20.0).mean() > 0.3


def test_lidar_sees_the_road_edges_from_the_lane_centre():
    env = make(4, evaluation=True, eval_start_offset_m=0.0, eval_start_heading_rad=0.0)
    env.cfg.lidar.noise_std_m = 0.0
    env.ranges_valid[:] = False
    ranges = env._scan()
    width = env.lane_width
    straight = np.abs(env.bank.curvature[env.road, :80]).max(axis=1) < 1e-9
    assert straight.any()
    np.testing.assert_allclose(ranges[straight, -1], 1.5 * width[straight], atol=0.05)
    np.testing.assert_allclose(ranges[straight, 0], 0.5 * width[straight], atol=0.05)


def test_captions_describe_the_scene_and_round_trip_through_text():
    facts = cap.SceneFacts(
        curvature_ahead=np.array([1 / 30.0, -1 / 60.0, 0.0]),
        obstacle_place=np.array([1, -1, 0]),
        obstacle_dist=np.array([12.0, np.inf, 35.0]),
        narrowing=np.array([False, True, False]),
    )
    tokens = cap.caption_tokens(facts)
    assert cap.decode(tokens[0]) == "road curves left sharply obstacle left-lane near lane normal"
    assert cap.decode(tokens[1]) == "road curves right moderately obstacle none none lane narrows"
    assert cap.decode(tokens[2]).startswith("road straight ahead ahead obstacle ego-lane far")
    assert (tokens[:, 9] == 0).all()  # no word for friction: no sensor measures it
    for row in tokens:
        np.testing.assert_array_equal(cap.tokenize(cap.decode(row)), row)
    speeds = cap.caption_speed(tokens, 8.0)
    assert speeds.tolist() == [5.0, 7.0, 8.0]


def test_a_captioning_models_road_words_map_onto_the_vocabulary():
    """BLIP-style captions: stop words dropped, its words for cars, bends and narrow
    lanes mapped onto the template's; only words the vocabulary cannot hold stay <unk>."""
    text = "a car parked on the side of a winding road with a narrow lane"
    assert cap.decode(cap.tokenize(text)) == "obstacle obstacle shoulder curves road narrows lane"
    tokens = cap.tokenize("a red truck driving down a highway at sunset")
    assert cap.decode(tokens) == "<unk> obstacle road <unk>"
    assert (tokens == cap.WORD_ID["<unk>"]).sum() == 2


def test_captions_refresh_every_ten_control_steps():
    env = make(2, evaluation=True)
    pid = env.baseline_policy("pid")
    obs, _ = env.observe()
    stamps = []
    for _ in range(25):
        obs = env.step(pid(obs)).obs
        stamps.append(env.caption_stamp[0])
    assert sorted(set(stamps)) == [0, 10, 20]


def test_blip_without_weights_names_the_option(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match=r"task\.semantic\.blip_weights"):
        make(1, semantic=SemanticConfig(provider="blip", blip_weights=str(tmp_path)))


def test_observation_parts_follow_the_ablation_switches():
    full = make(2)
    assert full.num_obs == 14 + 1 + 180 + 10 and full.observation_structure["embedding"][0] == 195
    bare = make(
        2,
        semantic=SemanticConfig(provider="none"),
        lidar=LidarConfig(enabled=False),
        pid=PidConfig(feature=False),
    )
    assert bare.num_obs == 14 and bare.observation_structure is None
    obs, critic = full.observe()
    assert np.isfinite(obs).all() and np.isfinite(critic).all()
    assert critic.shape[1] == full.num_obs - 10 + 4


def no_lane_obstacles() -> RoadConfig:
    return RoadConfig(ego_lane_obstacle_prob=0.0, obstacles=(1, 4))


@pytest.mark.parametrize("baseline", ["pid", "stanley", "pure_pursuit"])
def test_classical_baselines_keep_the_lane_from_the_estimate(baseline):
    """On held-out roads without obstacles in the car's lane, each baseline steering from
    the perceived lane state keeps the lane; the pooled error is over every step."""
    from simreal.policies.evaluate import evaluate

    env = make(8, evaluation=True, road=no_lane_obstacles())
    metrics = evaluate(env, env.baseline_policy(baseline))
    assert metrics["lateral_rmse_pooled_m"] < 0.2
    assert metrics["collision_rate"] == 0.0 and metrics["off_road_rate"] == 0.0
    assert metrics["lateral_rmse_std_m"] > 0.0
    pooled = np.concatenate(env.error_samples)
    assert pooled.size == 8 * env.cfg.max_episode_steps
    assert metrics["lateral_rmse_pooled_m"] == pytest.approx(np.sqrt(np.mean(pooled**2)))
    assert metrics["lateral_error_max_m"] == pytest.approx(pooled.max())
    assert metrics["nrmse"] == pytest.approx(metrics["lateral_rmse_m"] / 3.35, rel=0.15)


def test_the_pid_crashes_into_obstacles_in_its_lane():
    """The default roads put an obstacle in the car's own lane on half of them; a
    lane-keeping controller that cannot see it hits it (what the policy must avoid)."""
    from simreal.policies.evaluate import evaluate

    env = make(16, evaluation=True)
    metrics = evaluate(env, env.baseline_policy("pid"))
    assert metrics["collision_rate"] > 0.0
    assert env.evaluation_conditions()["obstacles_in_lane"] is True
    assert env.evaluation_conditions()["lane_state_source"] == "perception"


def test_the_lane_detector_reads_a_straight_road_from_the_lidar():
    """Noise-free LiDAR on a straight road: the detector's offset, heading and width are
    the simulator's to a few millimetres; the policy gets them a delay later."""
    from simreal.tasks.lane_keep.perception import detect_lane

    env = make(
        8,
        evaluation=True,
        eval_start_heading_rad=0.0,
        road=RoadConfig(ego_lane_obstacle_prob=0.0, obstacles=(0, 0)),
        lidar=LidarConfig(noise_std_m=0.0),
    )
    straight = np.abs(env.bank.curvature[env.road, :80]).max(axis=1) < 1e-9
    assert straight.any()
    env.ranges_valid[:] = False
    c = env.cfg.lidar
    found = detect_lane(
        env._scan(), env.directions, c.forward_m, c.max_range_m, env.cfg.perception,
        env._truth_estimate(np.arange(8)),
    )  # fmt: skip
    np.testing.assert_allclose(found.offset[straight], env.lane_offset[straight], atol=0.01)
    np.testing.assert_allclose(found.heading[straight], 0.0, atol=0.003)
    np.testing.assert_allclose(found.width[straight], env.lane_width[straight], atol=0.01)
    assert env.cfg.perception.delay_steps(env.control_dt) == 2


def test_a_detector_without_returns_holds_its_last_estimate():
    from simreal.tasks.lane_keep.perception import LaneEstimate, PerceptionConfig, detect_lane

    previous = LaneEstimate(*(np.array([v, v]) for v in (0.1, 0.02, 3.5, 0.01)))
    ranges = np.full((2, 180), 20.0)  # no beam returned
    found = detect_lane(
        ranges, lidar.beam_directions(180, 180.0), 1.5, 20.0, PerceptionConfig(), previous
    )
    np.testing.assert_array_equal(found.stack(), previous.stack())


def test_the_delay_line_hands_values_out_steps_later():
    from simreal.tasks.lane_keep.perception import DelayLine

    line = DelayLine(num_envs=2, steps=2, width=1)
    line.fill(np.arange(2), np.zeros((2, 1)))
    outs = [line.push(np.full((2, 1), float(k))).ravel().tolist() for k in (1, 2, 3)]
    assert outs == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("delay_s", 0.01, "shorter than one control step"),
        ("lane_state_source", "oracle", "lane_state_source"),
        ("speed_noise_mps", -1.0, "speed_noise_mps"),
        ("yaw_rate_noise_rad_s", float("nan"), "yaw_rate_noise_rad_s"),
    ],
)
def test_bad_perception_settings_are_refused_naming_the_field(field, value, match):
    from simreal.tasks.lane_keep.perception import PerceptionConfig

    with pytest.raises(ValueError, match=match):
        LaneKeepConfig(perception=PerceptionConfig(**{field: value})).validate()


def test_no_steering_leaves_the_road():
    from simreal.policies.evaluate import evaluate

    env = make(8, evaluation=True)
    metrics = evaluate(env, lambda obs: np.zeros((obs.shape[0], 2), dtype=np.float32))
    assert metrics["off_road_rate"] > 0.5


def test_token_embedding_policy_keeps_tokens_raw_and_exports(tmp_path: Path):
    from simreal.deploy import OnnxPolicy
    from simreal.policies.config import ModelConfig
    from simreal.policies.export import export_onnx
    from simreal.policies.models import ActorCritic

    env = make(4)
    torch.manual_seed(0)
    model = ActorCritic(
        env.num_obs, env.num_critic_obs, env.action_groups, ModelConfig(), env.observation_structure
    )
    obs, critic = env.observe()
    model.update_normalizers(torch.from_numpy(obs) * 3 + 1, torch.from_numpy(critic))
    with torch.no_grad():
        for param in model.actor.parameters():
            param.add_(0.3 * torch.randn_like(param))
    x = torch.from_numpy(obs)
    normalized = model.obs_normalizer(x)
    start = env.observation_structure["embedding"][0]
    torch.testing.assert_close(normalized[:, start:], x[:, start:])
    other = x.clone()
    other[:, start + 3] = (
        cap.WORD_ID["sharply"]
        if other[0, start + 3] != cap.WORD_ID["sharply"]
        else cap.WORD_ID["gently"]
    )
    with torch.no_grad():
        assert not torch.allclose(model.act_inference(x), model.act_inference(other))
    path = export_onnx(
        model, tmp_path / "p.onnx", {"task": "lane-keep", **env.deployment_metadata()}
    )
    with torch.no_grad():
        expected = model.act_inference(x).numpy()
    np.testing.assert_allclose(OnnxPolicy(path)(obs), expected, rtol=1e-5, atol=1e-4)


def test_eval_cli_runs_the_pid_baseline(tmp_path: Path):
    from simreal.cli import main

    out = tmp_path / "pid.json"
    code = main(
        ["eval", "baseline:pid", "--task", "lane-keep", "--episodes", "4", "--json", str(out)]
    )
    assert code == 0
    metrics = json.loads(out.read_text())
    for key in (
        "lateral_rmse_m",
        "lateral_rmse_std_m",
        "nrmse",
        "collision_rate",
        "off_road_rate",
        "mean_speed_mps",
    ):
        assert key in metrics


def save_tiny_blip(path: Path) -> None:
    """A randomly initialised BLIP captioner, small enough to build in a test, whose
    tokenizer knows the caption vocabulary: real transformers classes, local files."""
    tf = pytest.importorskip("transformers")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words += [w for w in cap.VOCAB if not w.startswith("<")]
    path.mkdir()
    (path / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = tf.BertTokenizer(str(path / "vocab.txt"), do_lower_case=True)
    images = tf.BlipImageProcessor(size={"height": 64, "width": 64})
    tf.BlipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}
    config = tf.BlipConfig(
        vision_config={**small, "num_attention_heads": 2, "image_size": 64, "patch_size": 16},
        text_config={
            **small,
            "num_attention_heads": 2,
            "vocab_size": len(words),
            "encoder_hidden_size": 32,
            "bos_token_id": 2,
            "eos_token_id": 3,
            "sep_token_id": 3,
            "pad_token_id": 0,
            "max_position_embeddings": 64,
        },
    )
    torch.manual_seed(0)
    tf.BlipForConditionalGeneration(config).save_pretrained(path)


@pytest.mark.slow
def test_blip_captions_the_rendered_camera_image(tmp_path: Path):
    save_tiny_blip(tmp_path / "blip")
    env = make(
        2,
        evaluation=True,
        semantic=SemanticConfig(provider="blip", blip_weights=str(tmp_path / "blip")),
    )
    obs, _ = env.observe()
    assert len(env.encoder.last_text) == 2 and all(env.encoder.last_text)
    tokens = obs[:, -cap.NUM_TOKENS :]
    np.testing.assert_array_equal(tokens, env.tokens)
    known = (tokens > 1).mean()  # the tiny model only knows caption words
    assert known > 0.5 and tokens.max() < len(cap.VOCAB)


@pytest.mark.slow
def test_train_export_and_evaluate_from_the_cli(tmp_path: Path):
    import subprocess
    import sys

    def run(*args: str) -> str:
        cmd = [sys.executable, "-m", "simreal", *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

    out = run("train", "lane-keep", "--steps", "8192", "--envs", "16", "--out", str(tmp_path))
    run_dir = Path(out.strip().splitlines()[-1])
    run("export", str(run_dir))
    metrics = json.loads(run("eval", str(run_dir / "policy.onnx"), "--episodes", "4"))
    episodes = metrics["episodes"]
    assert metrics["task"] == "lane-keep" and episodes == 4
    # the default conditions reach the CLI, and the rates count whole episodes
    assert metrics["lane_state_source"] == "perception" and metrics["obstacles_in_lane"]
    assert metrics["road_set"] == "held_out"
    for rate in ("collision_rate", "off_road_rate"):
        assert metrics[rate] * episodes == pytest.approx(round(metrics[rate] * episodes)), rate
    # a pooled RMSE is never above the largest error it pools, and is positive: a trained
    # car still weaves a little round the centre of its lane
    assert 0.0 < metrics["lateral_rmse_pooled_m"] <= metrics["lateral_error_max_m"]
