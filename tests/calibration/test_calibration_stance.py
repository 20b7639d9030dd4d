"""The ankles' encoder offsets from the G1 standing flat-footed (`calibration.stance`):
the virtual robot stands on its band with a hidden perturbation of both legs; the hip
and knee offsets are given as a hung fit would leave them; the closure from the IMU
through the legs to the level soles recovers the ankle offsets."""

from __future__ import annotations

import pytest
import yaml

from simreal.calibration import routines
from simreal.calibration.excite import GROUPS, ExcitationConfig
from simreal.calibration.logdata import CalibrationError
from simreal.calibration.perturbation import random_perturbation
from simreal.calibration.stance import CHAIN, SIDES, StanceConfig, leg_joints
from simreal.robots.g1.overlay import parse_overlay

LEGS = GROUPS["left_leg"] + GROUPS["right_leg"]
ANKLES = [leg_joints(s)[a] for s in SIDES for a in ("ankle_pitch", "ankle_roll")]


@pytest.fixture(scope="module")
def stance(tmp_path_factory):
    """A hidden robot with both legs perturbed (offsets up to 0.05 rad), and its stance log."""
    tmp = tmp_path_factory.mktemp("stance")
    truth = random_perturbation(3, LEGS)
    routines.excite(StanceConfig(), tmp / "log", parse_overlay(truth))
    return truth, tmp / "log"


def chain_overlay(path, truth, std=0.001, shift=0.0):
    """An overlay holding the chain's true offsets (+ `shift` on the knees), as fitted."""
    joints = {
        leg_joints(s)[c]: {
            "encoder_offset": {
                "value": truth["joints"][leg_joints(s)[c]]["encoder_offset"]
                + (shift if c == "knee" else 0.0),
                "std": std,
            }
        }
        for s in SIDES
        for c in CHAIN
    }
    path.write_text(yaml.safe_dump({"robot": "g1", "joints": joints}))
    return path


def written(path):
    return yaml.safe_load(path.read_text())["joints"]


def test_standing_recovers_both_ankles_offsets(stance, tmp_path):
    truth, log = stance
    out = chain_overlay(tmp_path / "o.yaml", truth)
    result = routines.stance_offsets(log, "legs", out)
    joints = written(out)
    assert {n for n, *_ in result.rows} == set(ANKLES)
    for name in ANKLES:
        fit = joints[name]["encoder_offset"]
        error = fit["value"] - truth["joints"][name]["encoder_offset"]
        assert abs(error) < 0.003, (name, error)
        assert abs(error) <= 2 * fit["std"] <= 0.01, (name, error, fit["std"])
    assert result.metrics["samples"] == 1500


def test_the_chain_offsets_carry_into_the_ankles(stance, tmp_path):
    """A knee offset 0.02 rad wrong moves the ankle pitch by about as much (the sole's
    pitch is the sum of hip, knee and ankle pitch); with the chain's std at 0.01 rad the
    ankles come out unidentifiable and nothing is written."""
    truth, log = stance
    out = chain_overlay(tmp_path / "o.yaml", truth, shift=0.02)
    routines.stance_offsets(log, "left_leg", out)
    name = "left_ankle_pitch_joint"
    error = written(out)[name]["encoder_offset"]["value"] - truth["joints"][name]["encoder_offset"]
    assert 0.015 < abs(error) < 0.025
    loose = chain_overlay(tmp_path / "loose.yaml", truth, std=0.01)
    result = routines.stance_offsets(log, "right_leg", loose)
    assert not result.rows
    assert set(result.unidentifiable) == {
        "right_ankle_pitch_joint.encoder_offset",
        "right_ankle_roll_joint.encoder_offset",
    }
    assert not set(ANKLES) & set(written(loose))


def test_a_more_certain_offset_in_the_overlay_is_kept(stance, tmp_path):
    truth, log = stance
    out = chain_overlay(tmp_path / "o.yaml", truth)
    data = yaml.safe_load(out.read_text())
    data["joints"]["left_ankle_roll_joint"] = {"encoder_offset": {"value": 0.0123, "std": 1e-4}}
    out.write_text(yaml.safe_dump(data))
    result = routines.stance_offsets(log, "left_leg", out)
    assert written(out)["left_ankle_roll_joint"]["encoder_offset"]["value"] == 0.0123
    assert any("kept the overlay's encoder offset 0.01230" in n for n in result.notes)
    assert [n for n, *_ in result.rows] == ["left_ankle_pitch_joint"]


def test_unknown_chain_offsets_are_named(stance, tmp_path):
    _, log = stance
    with pytest.raises(CalibrationError, match="left_hip_pitch_joint, left_hip_roll_joint"):
        routines.stance_offsets(log, "left_leg", tmp_path / "empty.yaml")
    with pytest.raises(ValueError, match="group 'waist'"):
        routines.stance_offsets(log, "waist", tmp_path / "empty.yaml")


def test_hung_and_stance_logs_are_not_mixed_up(stance, tmp_path):
    truth, log = stance
    with pytest.raises(CalibrationError, match="'stance' excitation log; `joint-offsets`"):
        routines.joint_offsets(log, "left_leg", tmp_path / "o.yaml", None)
    hung = tmp_path / "hung"
    cfg = ExcitationConfig(group="left_leg", chirp_s=0.5, hold_s=0.1)
    routines.excite(cfg, hung, parse_overlay(truth))
    out = chain_overlay(tmp_path / "o.yaml", truth)
    with pytest.raises(CalibrationError, match="'hung' excitation log; the stance fit"):
        routines.stance_offsets(hung, "left_leg", out)


def test_a_robot_that_does_not_stand_still_is_refused(tmp_path):
    """Without its band the PD stand falls within about 1.5 s: the soles did not lie flat."""
    from simreal.calibration.excite import run_hung
    from simreal.calibration.stance import stance_excitation
    from simreal.deploy.g1.sim_robot import SimG1

    truth = random_perturbation(3, LEGS)
    exc = stance_excitation(StanceConfig(hold_s=3.0))
    run_hung(exc, parse_overlay(truth), tmp_path / "log", robot=SimG1(dt=0.002))
    out = chain_overlay(tmp_path / "o.yaml", truth)
    with pytest.raises(CalibrationError, match="pelvis turns by"):
        routines.stance_offsets(tmp_path / "log", "legs", out)


def test_cli_excites_the_standing_robot_and_fits(tmp_path, capsys):
    from simreal.cli import main

    truth = random_perturbation(5, LEGS)
    (tmp_path / "truth.yaml").write_text(yaml.safe_dump(truth))
    log = str(tmp_path / "log")
    excite = ["calibrate", "excite", log, "--robot", "g1", "--group", "stance"]
    assert main([*excite, "--perturb", str(tmp_path / "truth.yaml")]) == 0
    assert "standing in the default pose" in capsys.readouterr().out
    out = chain_overlay(tmp_path / "o.yaml", truth)
    fit = ["calibrate", "stance-offsets", log, "--robot", "g1", "--group", "legs"]
    assert main([*fit, "--overlay", str(out)]) == 0
    assert "right_ankle_roll_joint" in capsys.readouterr().out
    assert set(ANKLES) <= set(written(out))
