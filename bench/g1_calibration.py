"""Calibration accuracy on the virtual G1: recover random hidden perturbations from logs.

For each seed, a random perturbation of the left leg (offsets ±0.05 rad, kp/kd scale
0.8-1.2, armature 0.7-1.3 x nominal, Coulomb friction 0.1-0.5 N m, viscous 0.02-0.2
N m s/rad, latency 0-10 ms, gyro bias ±0.05 rad/s, accelerometer bias ±0.2 m/s²) is the
hidden truth of the virtual robot, hung on its gantry. `excite` logs the excitation;
`joint-offsets`, `actuators` and `imu` fit the overlay from that log alone. Printed: the
largest error per quantity over seeds, and the open-loop re-simulation RMSE of the
nominal and the calibrated model.

    python bench/g1_calibration.py [--seeds 1 2 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from simreal.calibration import routines
from simreal.calibration.excite import GROUPS, ExcitationConfig
from simreal.robots.g1 import ACTUATORS
from simreal.robots.g1.overlay import load_overlay, parse_overlay

LEG = GROUPS["left_leg"]
FIELDS = ("kp_scale", "kd_scale", "armature", "friction_coulomb", "friction_viscous")


def random_truth(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    joints = {
        n: {
            "encoder_offset": float(rng.uniform(-0.05, 0.05)),
            "kp_scale": float(rng.uniform(0.8, 1.2)),
            "kd_scale": float(rng.uniform(0.8, 1.2)),
            "armature": float(ACTUATORS[n].armature * rng.uniform(0.7, 1.3)),
            "friction_coulomb": float(rng.uniform(0.1, 0.5)),
            "friction_viscous": float(rng.uniform(0.02, 0.2)),
        }
        for n in LEG
    }
    imu = {
        "gyro_bias": rng.uniform(-0.05, 0.05, 3).tolist(),
        "accel_bias": rng.uniform(-0.2, 0.2, 3).tolist(),
    }
    return {
        "robot": "g1",
        "latency_ms": float(rng.uniform(0.0, 10.0)),
        "imu": imu,
        "joints": joints,
    }


def calibrate_once(seed: int, folder: Path) -> dict:
    truth = random_truth(seed)
    routines.excite(ExcitationConfig(group="left_leg"), folder / "log", parse_overlay(truth))
    out = folder / "overlay.yaml"
    routines.joint_offsets(folder / "log", "left_leg", out, None)
    actuators = routines.actuators(folder / "log", "left_leg", out, None)
    routines.imu(folder / "log", out, None)
    fit = load_overlay(out)
    rel = {
        key: max(abs(getattr(fit.joint(n), key) / truth["joints"][n][key] - 1) for n in LEG)
        for key in FIELDS
    }
    return {
        "seed": seed,
        "max_offset_error_rad": max(
            abs(fit.joint(n).encoder_offset - truth["joints"][n]["encoder_offset"]) for n in LEG
        ),
        **{f"max_{key}_rel_error": value for key, value in rel.items()},
        "latency_error_ms": abs(fit.latency_ms - truth["latency_ms"]),
        "max_gyro_bias_error": float(
            np.max(np.abs(np.subtract(fit.gyro_bias, truth["imu"]["gyro_bias"])))
        ),
        "max_accel_bias_error": float(
            np.max(np.abs(np.subtract(fit.accel_bias, truth["imu"]["accel_bias"])))
        ),
        "resim_rmse_nominal_rad": actuators.metrics["resim_rmse_nominal_rad"],
        "resim_rmse_calibrated_rad": actuators.metrics["resim_rmse_calibrated_rad"],
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for seed in args.seeds:
            folder = Path(tmp) / str(seed)
            folder.mkdir()
            runs.append(calibrate_once(seed, folder))
    worst = {key: max(r[key] for r in runs) for key in runs[0] if key != "seed"}
    report = {
        "command": "python bench/g1_calibration.py " + " ".join(sys.argv[1:]),
        "worst_over_seeds": worst,
        "runs": runs,
    }
    text = json.dumps(report, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
