"""Config and calibration-overlay values: finite numbers only, `1e-3` is a number, and a
key given twice is refused naming the key and the file."""

import pytest

from simreal.cli import main
from simreal.config import ConfigError, apply_overrides, load_yaml
from simreal.policies import TrainConfig
from simreal.robots.g1.overlay import OverlayError, load_overlay, parse_overlay
from simreal.rundir import read_config


@pytest.mark.parametrize(
    ("text", "value"),
    [("1e-3", 0.001), ("-2E+4", -20000.0), ("1.5e3", 1500.0), ("12", 12), ("'1e-3'", "1e-3")],
)
def test_exponent_floats_are_numbers(text, value):
    got = load_yaml(f"x: {text}", "t")["x"]
    assert got == value and type(got) is type(value)


def test_override_with_an_exponent_float_is_taken():
    cfg = apply_overrides(TrainConfig(), ["ppo.learning_rate=1e-3"], "train.")
    assert cfg.ppo.learning_rate == 0.001


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_non_finite_config_values_are_refused_naming_the_field(value):
    with pytest.raises(ConfigError, match=r"ppo\.learning_rate: .* is not a finite number"):
        apply_overrides(TrainConfig(), [f"ppo.learning_rate={value}"], "train.")


def test_non_finite_override_exits_2_before_training(tmp_path, capsys):
    argv = ["train", "quad-hover", "--envs", "4", "--steps", "128"]
    argv += ["--set", "train.ppo.learning_rate=.nan", "--out", str(tmp_path / "runs")]
    assert main(argv) == 2
    assert "train.ppo.learning_rate: nan is not a finite number" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_duplicated_keys_are_refused_naming_key_and_file(tmp_path):
    with pytest.raises(ConfigError, match=r"f\.yaml: key 'lr' given twice \(lines 2 and 4\)"):
        load_yaml("ppo:\n  lr: 1\n  gamma: 0.9\n  lr: 2\n", "f.yaml")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("train:\n  seed: 1\ntrain:\n  seed: 2\n")
    with pytest.raises(ConfigError, match=r"config\.yaml: key 'train' given twice"):
        read_config(run)


@pytest.mark.parametrize(
    ("yaml_text", "named"),
    [
        ("joints:\n  left_knee_joint:\n    friction_coulomb: .nan\n", "friction_coulomb"),
        ("latency_ms: .inf\n", "latency_ms"),
        ("imu:\n  gyro_bias: [0.0, .nan, 0.0]\n", "imu.gyro_bias"),
        (
            "joints:\n  left_knee_joint:\n    armature: {value: 0.01, std: .nan}\n",
            "left_knee_joint.armature",
        ),
    ],
)
def test_non_finite_overlay_values_are_refused_naming_the_field(tmp_path, yaml_text, named):
    path = tmp_path / "overlay.yaml"
    path.write_text(yaml_text)
    with pytest.raises(OverlayError, match=named):
        load_overlay(path)


def test_overlay_with_a_duplicated_key_is_refused(tmp_path):
    path = tmp_path / "overlay.yaml"
    path.write_text("latency_ms: 2\nlatency_ms: 5\n")
    with pytest.raises(OverlayError, match=r"overlay\.yaml: key 'latency_ms' given twice"):
        load_overlay(path)


def test_overlay_reads_exponent_floats(tmp_path):
    path = tmp_path / "overlay.yaml"
    path.write_text("latency_ms: 2e0\njoints:\n  left_knee_joint:\n    armature: 1.5e-2\n")
    overlay = load_overlay(path)
    assert overlay.latency_ms == 2.0
    assert overlay.joint("left_knee_joint").armature == pytest.approx(0.015)
    assert parse_overlay({"latency_ms": 3}).latency_ms == 3.0
