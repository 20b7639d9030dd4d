"""Random hidden perturbations of a G1, to judge calibration routines against a known truth.

The virtual robot runs with such a perturbation (`simreal sim-robot g1 --perturb FILE`
or in process); a routine sees only the logs and must recover it. Ranges, per joint:
encoder offset ±0.05 rad, kp and kd scale 0.8-1.2, armature 0.7-1.3 x nominal, Coulomb
friction 0.1-0.5 N m, viscous friction 0.02-0.2 N m s/rad; latency 0-10 ms; gyroscope
bias ±0.05 rad/s and accelerometer bias ±0.2 m/s² per axis.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simreal.robots.g1 import ACTUATORS


def random_perturbation(seed: int, joints: Sequence[str]) -> dict:
    """An overlay dict (the YAML schema) perturbing `joints`, drawn with `seed`."""
    rng = np.random.default_rng(seed)
    perturbed = {
        n: {
            "encoder_offset": float(rng.uniform(-0.05, 0.05)),
            "kp_scale": float(rng.uniform(0.8, 1.2)),
            "kd_scale": float(rng.uniform(0.8, 1.2)),
            "armature": float(ACTUATORS[n].armature * rng.uniform(0.7, 1.3)),
            "friction_coulomb": float(rng.uniform(0.1, 0.5)),
            "friction_viscous": float(rng.uniform(0.02, 0.2)),
        }
        for n in joints
    }
    return {
        "robot": "g1",
        "latency_ms": float(rng.uniform(0.0, 10.0)),
        "imu": {
            "gyro_bias": rng.uniform(-0.05, 0.05, 3).tolist(),
            "accel_bias": rng.uniform(-0.2, 0.2, 3).tolist(),
        },
        "joints": perturbed,
    }
