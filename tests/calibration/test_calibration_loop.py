"""Closing the calibration loop: the overlay lives with the robot, `g1-force` simulates
the calibrated G1 (and randomizes around it), the CLI passes `--calibration` through
train, eval and replay, and a calibration fitted on one excitation log transfers to a
held-out log made with a different excitation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from simreal.robots.g1 import ACTUATORS, JOINT_NAMES
from simreal.tasks import make_env
from simreal.tasks.g1_force import G1ForceConfig

KNEE = "left_knee_joint"
K = JOINT_NAMES.index(KNEE)
OVERLAY = {
    "robot": "g1",
    "latency_ms": 10.0,
    "imu": {"gyro_bias": [0.02, -0.01, 0.03], "accel_bias": [0.0, 0.1, 0.0]},
    "joints": {
        KNEE: {
            "encoder_offset": 0.04,
            "kp_scale": {"value": 1.2, "std": 0.01},
            "kd_scale": 0.8,
            "armature": 0.05,
            "friction_coulomb": 0.4,
            "friction_viscous": 0.1,
            "torque_limit_scale": 0.7,
        }
    },
}


@pytest.fixture
def overlay_file(tmp_path):
    path = tmp_path / "overlay.yaml"
    path.write_text(yaml.safe_dump(OVERLAY))
    return path


def test_overlay_lives_with_the_robot_and_deploy_reexports_it():
    from simreal.deploy.g1 import overlay as deploy_overlay
    from simreal.robots.g1 import overlay as robot_overlay

    for name in ("Overlay", "JointOverlay", "OverlayError", "load_overlay", "parse_overlay"):
        assert getattr(deploy_overlay, name) is getattr(robot_overlay, name)
    parsed = deploy_overlay.parse_overlay(OVERLAY)
    assert isinstance(parsed, robot_overlay.Overlay)
    assert parsed.joint(KNEE).kp_scale == 1.2


def test_g1_force_simulates_the_calibrated_robot(overlay_file):
    cfg = G1ForceConfig(evaluation=True, calibration=str(overlay_file))
    env = make_env("g1-force", cfg, num_envs=3, seed=0)
    field = env.engine.model_field
    dof = env.joint_dof_ids[K]
    np.testing.assert_allclose(field("dof_armature")[:, dof], 0.05)
    np.testing.assert_allclose(field("dof_frictionloss")[:, dof], 0.4)
    np.testing.assert_allclose(field("dof_damping")[:, dof], 0.1)
    other = env.joint_dof_ids[K + 1]
    assert np.allclose(field("dof_armature")[:, other], ACTUATORS[JOINT_NAMES[K + 1]].armature)
    kp, kd = ACTUATORS[KNEE].kp, ACTUATORS[KNEE].kd
    np.testing.assert_allclose(field("actuator_biasprm")[:, K, 1], -1.2 * kp)
    np.testing.assert_allclose(field("actuator_biasprm")[:, K, 2], -0.8 * kd)
    np.testing.assert_allclose(
        field("actuator_forcerange")[:, K, 1], 0.7 * ACTUATORS[KNEE].torque_limit
    )
    np.testing.assert_allclose(env.latency_substeps, 2.0)  # 10 ms at 5 ms physics steps
    env.reset()
    zero = np.zeros((3, 29), dtype=np.float32)
    for _ in range(25):
        step = env.step(zero)
    np.testing.assert_allclose(env.sensors.joint_pos - env.joint_pos, env.joint_offset)
    np.testing.assert_allclose(env.joint_offset[:, K], 0.04)
    np.testing.assert_allclose(
        step.obs[:, 6 + K], env.sensors.joint_pos[:, K] - env.default_joint_pos[K], atol=1e-5
    )
    np.testing.assert_allclose(
        env.sensors.base_ang_vel - env.engine.qvel[:, 3:6], np.tile([0.02, -0.01, 0.03], (3, 1))
    )


def test_a_latency_between_physics_steps_acts_between_its_neighbours(tmp_path):
    """7.5 ms is 1.5 physics steps: the command lands half-way through the second step,
    so the knee's response after one control period lies between 5 and 10 ms's."""
    knee = []
    for latency_ms in (5.0, 7.5, 10.0):
        path = tmp_path / f"latency{latency_ms}.yaml"
        path.write_text(yaml.safe_dump({"robot": "g1", "latency_ms": latency_ms}))
        cfg = G1ForceConfig(evaluation=True, calibration=str(path))
        env = make_env("g1-force", cfg, num_envs=1, seed=0)
        env.reset()
        action = np.zeros((1, 29), dtype=np.float32)
        action[0, K] = 1.0
        env.step(action)
        knee.append(env.joint_vel[0, K])
    assert env.latency_substeps[0] == 2.0
    assert knee[0] > knee[1] > knee[2] > 0.0  # later commands have pushed the knee less


def test_encoder_offset_shifts_the_true_pose(tmp_path):
    """Encoders report q + offset and the PD loop holds the *measured* angle, so the true
    knee of a robot with only an offset sits about one offset below the nominal one's."""
    path = tmp_path / "offset.yaml"
    path.write_text(yaml.safe_dump({"robot": "g1", "joints": {KNEE: {"encoder_offset": 0.04}}}))
    env = make_env("g1-force", G1ForceConfig(evaluation=True, calibration=str(path)), 2)
    nominal = make_env("g1-force", G1ForceConfig(evaluation=True), 2)
    env.reset()
    nominal.reset()
    zero = np.zeros((2, 29), dtype=np.float32)
    for _ in range(10):
        env.step(zero)
        nominal.step(zero)
    shift = env.joint_pos[:, K] - nominal.joint_pos[:, K]
    assert np.all(np.abs(shift + 0.04) < 0.01), shift
    measured = env.sensors.joint_pos[:, K] - nominal.sensors.joint_pos[:, K]
    assert np.all(np.abs(measured) < 0.01), measured


def test_randomization_is_centred_on_the_calibration(overlay_file):
    cfg = G1ForceConfig(calibration=str(overlay_file))
    env = make_env("g1-force", cfg, num_envs=64, seed=1)
    env.reset()
    r = cfg.randomization
    kp = env.kp_scale[:, K]
    assert np.all((kp >= 1.2 * r.kp_scale[0]) & (kp <= 1.2 * r.kp_scale[1]))
    assert kp.mean() > 1.1  # nominal-centred sampling would average 1.0
    off = env.joint_offset[:, K]
    assert np.all(np.abs(off - 0.04) <= r.joint_offset_rad + 1e-12)
    assert np.all(np.abs(env.joint_offset[:, K + 1]) <= r.joint_offset_rad + 1e-12)
    assert env.latency_substeps.min() >= 0 and env.latency_substeps.max() <= 4
    assert np.unique(env.latency_substeps).size > 5  # continuous, centred on 2
    dof = env.joint_dof_ids[K]
    np.testing.assert_allclose(env.engine.model_field("dof_armature")[:, dof], 0.05)
    bias = env.engine.model_field("actuator_biasprm")[:, K, 1]
    np.testing.assert_allclose(bias, -ACTUATORS[KNEE].kp * kp)


@pytest.mark.parametrize(
    ("joints", "named"),
    [
        ({KNEE: {"kp_scale": -1.0}}, f"joints.{KNEE}.kp_scale"),
        ({KNEE: {"armature": "heavy"}}, f"joints.{KNEE}.armature"),
        ({"no_such_joint": {"kp_scale": 1.0}}, "joints.no_such_joint"),
    ],
)
def test_a_bad_calibration_file_is_refused_naming_file_and_field(tmp_path, joints, named):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"robot": "g1", "joints": joints}))
    with pytest.raises(ValueError) as err:
        make_env("g1-force", G1ForceConfig(calibration=str(path)), num_envs=1)
    message = str(err.value)
    assert message.startswith("calibration:") and str(path) in message and named in message


def test_a_missing_calibration_file_is_named(tmp_path):
    path = tmp_path / "absent.yaml"
    with pytest.raises(ValueError, match=f"calibration: {path}: no such overlay file"):
        make_env("g1-force", G1ForceConfig(calibration=str(path)), num_envs=1)


TINY = [
    "--set", "train.ppo.num_steps_per_env=8",
    "--set", "train.ppo.num_minibatches=1",
    "--set", "train.ppo.num_epochs=1",
    "--set", "train.eval_episodes=1",
    "--set", "task.episode_s=0.4",
    "--set", "task.eval_episode_s=0.2",
]  # fmt: skip


def test_cli_train_and_eval_record_and_apply_the_calibration(tmp_path, overlay_file, capsys):
    from simreal.cli import main
    from simreal.rundir import read_config

    out = tmp_path / "runs"
    argv = ["train", "g1-force", "--envs", "2", "--steps", "16", "--out", str(out)]
    assert main([*argv, *TINY, "--calibration", str(overlay_file)]) == 0
    run = next((out / "g1-force").iterdir())
    config = read_config(run)
    assert config["task_config"]["calibration"] == str(overlay_file.resolve())
    capsys.readouterr()

    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"robot": "g1", "latency_ms": 5.0}))
    argv = ["eval", str(run), "--episodes", "1", "--set", "task.eval_episode_s=0.2"]
    assert main([*argv, "--calibration", str(other)]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["calibration"] == str(other.resolve())
    assert main(argv) == 0  # without the flag: the run's own calibration
    assert json.loads(capsys.readouterr().out)["calibration"] == str(overlay_file.resolve())

    log = tmp_path / "log"
    assert main([*argv, "--log", str(log)]) == 0  # logged on the run's calibrated robot
    capsys.readouterr()
    assert main(["replay", str(log), "--resim", "--calibration", str(overlay_file)]) == 0
    gap = json.loads(capsys.readouterr().out)["calibration_gap"]
    for key in ("base_position_rmse_m", "joint_position_rmse_rad"):
        assert gap[key]["calibrated"] < 1e-6 < gap[key]["nominal"], (key, gap[key])

    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"robot": "g1", "latency_ms": -3}))
    assert main([*argv, "--calibration", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "calibration:" in err and str(bad.resolve()) in err and "latency_ms" in err


def test_train_calibration_on_a_task_without_one_is_refused(tmp_path, overlay_file, capsys):
    from simreal.cli import main

    argv = ["train", "quad-hover", "--envs", "2", "--steps", "16", "--out", str(tmp_path)]
    assert main([*argv, "--calibration", str(overlay_file)]) == 2
    assert "takes no calibration" in capsys.readouterr().err


HELD_OUT = {"amplitude": 0.12, "chirp_s": 2.0, "chirp_hz": (0.5, 3.5), "hold_s": 0.3}
"""The held-out excitation: smaller, shorter and faster than the fitting one."""


@pytest.mark.slow
@pytest.mark.parametrize("seed", [7, 11])
def test_held_out_resimulation_gap_drops_by_70_percent(tmp_path, seed, capsys):
    from simreal.calibration import routines
    from simreal.calibration.excite import GROUPS, ExcitationConfig
    from simreal.calibration.perturbation import random_perturbation
    from simreal.cli import main
    from simreal.robots.g1.overlay import parse_overlay

    truth = parse_overlay(random_perturbation(seed, GROUPS["left_leg"]))
    fit_log, held_log, out = tmp_path / "fit", tmp_path / "held", tmp_path / "cal.yaml"
    routines.excite(ExcitationConfig(group="left_leg"), fit_log, truth)
    routines.excite(ExcitationConfig(group="left_leg", **HELD_OUT), held_log, truth)
    routines.joint_offsets(fit_log, "left_leg", out, None)
    routines.actuators(fit_log, "left_leg", out, None)
    capsys.readouterr()
    assert main(["replay", str(held_log), "--resim", "--calibration", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    gap = report["calibration_gap"]["joint_position_rmse_rad"]
    print(f"held-out joint RMSE: nominal {gap['nominal']:.5f} rad, "
          f"calibrated {gap['calibrated']:.5f} rad, reduction {gap['reduction']:.1%}")  # fmt: skip
    assert gap["reduction"] >= 0.7, gap
    assert set(report["resim"]["joint_position_rmse"]) == set(truth.joints)
