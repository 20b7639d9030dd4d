"""The virtual robot's hidden truth beyond the overlay: the `noise:` section of a
perturbation file (white noise on what the robot reports) and the robot's own physics
(substeps, integrator), on real MuJoCo."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from simreal.calibration import routines
from simreal.calibration.excite import GROUPS, ExcitationConfig, excitation, run_hung
from simreal.calibration.perturbation import random_perturbation
from simreal.deploy.g1.sim_robot import MotorCommand, SimG1
from simreal.deploy.g1.virtual_robot import VirtualRobotConfig
from simreal.robots.g1.overlay import OverlayError, load_overlay, parse_overlay
from simreal.robots.g1.perturbation import SensorNoise, load_perturbation, parse_perturbation

NOISE = {"encoder_rad": 1e-4, "joint_vel_rad_s": 0.01, "tau_est_nm": 0.05, "gyro_rad_s": 0.002}


def test_noise_section_parsed_beside_the_overlay():
    truth = parse_perturbation({"latency_ms": 3.0, "noise": {**NOISE, "seed": 4}})
    assert truth.overlay.latency_ms == 3.0
    assert truth.noise == SensorNoise(**NOISE, seed=4)
    assert parse_perturbation({"latency_ms": 1.0}).noise == SensorNoise()


@pytest.mark.parametrize(
    "noise, named",
    [
        ({"encoder": 1e-4}, "noise.encoder: unknown field"),
        ({"gyro_rad_s": -0.1}, "noise.gyro_rad_s: -0.1 must be a finite number >= 0"),
        ({"tau_est_nm": float("nan")}, "noise.tau_est_nm: nan must be"),
        ({"accel_m_s2": float("inf")}, "noise.accel_m_s2: inf must be"),
        ({"joint_vel_rad_s": "loud"}, "noise.joint_vel_rad_s: 'loud' is not a number"),
        ({"seed": -1}, "noise.seed: -1 is not an integer"),
    ],
)
def test_bad_noise_refused_naming_the_field(noise, named):
    with pytest.raises(OverlayError, match=named.replace("(", r"\(")):
        parse_perturbation({"noise": noise}, source="truth.yaml")


def test_a_calibration_overlay_has_no_noise(tmp_path):
    path = tmp_path / "truth.yaml"
    path.write_text(yaml.safe_dump({"robot": "g1", "noise": NOISE}))
    assert load_perturbation(path).noise.encoder_rad == 1e-4
    with pytest.raises(OverlayError, match="unknown field 'noise'"):
        load_overlay(path)


def test_reported_samples_carry_the_noise():
    """The noise is per sample, with the given std, and only on what the robot reports."""
    quiet = SimG1(hang=True)
    noisy = SimG1(hang=True, noise=SensorNoise(**NOISE, seed=3))
    reads = [noisy.sensors() for _ in range(2000)]
    clean = quiet.sensors()
    for field, key in (("q", "encoder_rad"), ("dq", "joint_vel_rad_s"), ("tau_est", "tau_est_nm")):
        err = np.array([getattr(r, field) for r in reads]) - getattr(clean, field)
        assert np.std(err) == pytest.approx(NOISE[key], rel=0.05), field
    gyro = np.array([r.gyro for r in reads]) - clean.gyro
    assert np.std(gyro) == pytest.approx(NOISE["gyro_rad_s"], rel=0.05)
    accel = np.array([r.accel for r in reads]) - clean.accel
    assert np.abs(accel).max() == 0.0  # accel_m_s2 absent: no noise
    np.testing.assert_array_equal(noisy.joint_pos, quiet.joint_pos)  # the truth is untouched


def test_substeps_run_the_robots_own_physics():
    one, four = SimG1(hang=True), SimG1(hang=True, substeps=4, integrator="RK4")
    assert four.model.opt.timestep == pytest.approx(0.0005)
    q = one.joint_pos.copy()
    q[3] += 0.3  # left knee
    cmd = MotorCommand(q, np.zeros(29), np.zeros(29), np.full(29, 40.0), np.full(29, 2.0))
    for robot in (one, four):
        robot.apply(cmd)
        for k in range(50):
            robot.tick(lambda now, dt, c=cmd: [(1.0, c)], k * 0.002)
    assert one.data.time == pytest.approx(0.1) and four.data.time == pytest.approx(0.1)
    # Same motion to within the integrators' difference, not identical.
    diff = np.abs(one.joint_pos - four.joint_pos).max()
    assert 0 < diff < 0.01


def test_physics_rate_must_be_a_multiple_of_the_tick_rate():
    assert VirtualRobotConfig(rate_hz=500, physics_hz=2000).substeps() == 4
    with pytest.raises(
        ValueError, match=r"--physics-hz 1200: must be a whole multiple .* --rate 500"
    ):
        VirtualRobotConfig(rate_hz=500, physics_hz=1200)
    with pytest.raises(ValueError, match="--integrator"):
        VirtualRobotConfig(integrator="Verlet")


@pytest.mark.slow
def test_fits_on_the_nominal_model_hold_on_a_robot_with_its_own_physics(tmp_path):
    """The hidden robot steps 4 x 0.5 ms per tick and reports noisy samples; the fits
    model one 2 ms step. Gains, friction and latency still land within their goals, and
    what the fits write is trusted only within its std."""
    leg = GROUPS["left_leg"]
    truth = parse_overlay(random_perturbation(3, leg))
    cfg = ExcitationConfig(group="left_leg")
    noise = SensorNoise(**NOISE, seed=3)
    robot = SimG1(dt=cfg.dt, overlay=truth, hang=True, substeps=4, noise=noise)
    run_hung(excitation(cfg), truth, tmp_path / "log", robot=robot)
    out = tmp_path / "overlay.yaml"
    offsets = routines.joint_offsets(tmp_path / "log", "left_leg", out, None, 20.0)
    act = routines.actuators(tmp_path / "log", "left_leg", out, None, 20.0)
    fit = load_overlay(out)
    for n in leg:
        if f"{n}.encoder_offset" not in offsets.unidentifiable:
            assert abs(fit.joint(n).encoder_offset - truth.joint(n).encoder_offset) < 0.005, n
        for key in ("kp_scale", "kd_scale"):
            assert abs(getattr(fit.joint(n), key) / getattr(truth.joint(n), key) - 1) < 0.15
    assert abs(fit.latency_ms - truth.latency_ms) < 2.0
    assert act.metrics["resim_rmse_calibrated_rad"] < 0.3 * act.metrics["resim_rmse_nominal_rad"]
