"""`simreal calibrate extrinsics`: synthetic rosbag2 logs of two rigidly mounted sensors
(written by the real rosbag2/MCAP writer, A at 100 Hz and B at 30 Hz on shifted stamps,
1 mrad / 1 mm noise) with a known random transform, which the hand-eye fit must recover;
degenerate motion and missing topics must be reported, not fitted."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from simreal.calibration import routines
from simreal.calibration.extrinsics import DegenerateMotionError
from simreal.calibration.logdata import CalibrationError
from simreal.calibration.pose_log import SyntheticPair, random_transform, write_synthetic_pair
from simreal.deploy.g1.overlay import OverlayError, load_overlay, parse_overlay

ROTATION_TOL_RAD = 2e-3
TRANSLATION_TOL_M = 5e-3
"""Documented tolerance at 1 mrad / 1 mm pose noise over 20 s (errors seen: <= 4.7e-4 rad,
<= 0.5 mm over seeds 0-5)."""


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_transform_recovered(tmp_path, seed):
    truth = random_transform(np.random.default_rng(1000 + seed))
    write_synthetic_pair(tmp_path / "log", truth, seed)
    out = tmp_path / "overlay.yaml"
    result = routines.extrinsics(
        tmp_path / "log", routines.ExtrinsicsConfig(), out, tmp_path / "report.png"
    )
    fit = load_overlay(out).extrinsics["imu_to_camera"]
    w, x, y, z = fit.rotation_wxyz
    rotation_error = (Rotation.from_quat([x, y, z, w]) * truth[0].inv()).magnitude()
    translation_error = np.abs(np.asarray(fit.translation) - truth[1])
    assert rotation_error < ROTATION_TOL_RAD
    assert translation_error.max() < TRANSLATION_TOL_M
    # The reported standard deviations are honest: errors within 5 sigma per axis.
    std = yaml.safe_load(out.read_text())["extrinsics"]["imu_to_camera"]["translation"]["std"]
    assert np.all(translation_error < 5 * np.asarray(std))
    assert result.metrics["position_rmse_calibrated_m"] < 0.01
    assert result.metrics["position_rmse_identity_m"] > 0.1
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_noise_free_log_exact(tmp_path):
    truth = random_transform(np.random.default_rng(7))
    cfg = SyntheticPair(seconds=8.0, noise_rot_rad=0.0, noise_pos_m=0.0, rate_b_hz=100.0)
    write_synthetic_pair(tmp_path / "log", truth, 7, cfg)
    routines.extrinsics(tmp_path / "log", routines.ExtrinsicsConfig(), tmp_path / "o.yaml", None)
    fit = load_overlay(tmp_path / "o.yaml").extrinsics["imu_to_camera"]
    # Interpolating B (slerp between 10 ms samples) is the only error left.
    assert np.abs(np.asarray(fit.translation) - truth[1]).max() < 1e-3


def test_single_axis_motion_reported_unidentifiable(tmp_path):
    truth = random_transform(np.random.default_rng(3))
    write_synthetic_pair(tmp_path / "log", truth, 3, SyntheticPair(single_axis=True))
    out = tmp_path / "overlay.yaml"
    with pytest.raises(DegenerateMotionError) as err:
        routines.extrinsics(tmp_path / "log", routines.ExtrinsicsConfig(), out, None)
    message = str(err.value)
    # A rotates about its z axis only: the translation along z is unseen.
    assert "translation along [+0.00 +0.00 +1.00]" in message
    assert "rotation about" in message
    assert not out.exists()


def test_missing_topic_named(tmp_path):
    write_synthetic_pair(tmp_path / "log", random_transform(np.random.default_rng(0)), 0)
    cfg = routines.ExtrinsicsConfig(topic_b="/lidar/pose")
    with pytest.raises(CalibrationError, match=r"/lidar/pose \(missing\).*/camera/pose"):
        routines.extrinsics(tmp_path / "log", cfg, tmp_path / "o.yaml", None)
    with pytest.raises(CalibrationError, match=r"nolog: does not exist"):
        routines.extrinsics(tmp_path / "nolog", routines.ExtrinsicsConfig(), tmp_path / "o", None)


@pytest.mark.slow
def test_cli_names_topics_and_frames(tmp_path):
    truth = random_transform(np.random.default_rng(4))
    topics = ("/base/odom_pose", "/lidar/pose")
    write_synthetic_pair(tmp_path / "log", truth, 4, SyntheticPair(seconds=10.0), topics=topics)
    out = tmp_path / "o.yaml"
    (tmp_path / "o.yaml").write_text("robot: g1\nlatency_ms: 3\n")
    cmd = [sys.executable, "-m", "simreal", "calibrate", "extrinsics", str(tmp_path / "log")]
    cmd += ["--robot", "g1", "--overlay", str(out), "--topic-a", topics[0], "--topic-b", topics[1]]
    cmd += ["--parent", "pelvis_imu", "--name", "lidar_mount"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "lidar_mount" in done.stdout and "translation_x_m" in done.stdout
    overlay = load_overlay(out)
    assert overlay.latency_ms == 3  # the rest of the file is kept
    entry = overlay.extrinsics["lidar_mount"]
    assert (entry.parent, entry.child) == ("pelvis_imu", "lidar")
    assert np.abs(np.asarray(entry.translation) - truth[1]).max() < TRANSLATION_TOL_M


def test_overlay_extrinsics_schema():
    assert parse_overlay({"robot": "g1", "latency_ms": 2}).extrinsics == {}
    good = {
        "parent": "imu",
        "child": "cam",
        "translation": [0.1, 0, 0],
        "rotation": {"value": [1, 0, 0, 0], "std": [0.1, 0.1, 0.1]},
    }
    assert parse_overlay({"extrinsics": {"m": good}}).extrinsics["m"].translation == (0.1, 0, 0)
    bad = {**good, "rotation": [1, 1, 0, 0], "extra": 1}
    with pytest.raises(OverlayError, match=r"m.extra: unknown field.*not a unit quaternion"):
        parse_overlay({"extrinsics": {"m": bad}})
    with pytest.raises(OverlayError, match=r"extrinsics.m.child: missing"):
        parse_overlay({"extrinsics": {"m": {k: v for k, v in good.items() if k != "child"}}})
