"""Random hidden perturbations of a G1, to judge calibration routines against a known truth.

The virtual robot runs with such a perturbation (`simreal sim-robot g1 --perturb FILE`
or in process); a routine sees only the logs and must recover it. Ranges, per joint:
encoder offset ±0.05 rad, kp and kd scale 0.8-1.2, armature 0.7-1.3 x nominal, Coulomb
friction 0.1-0.5 N m, viscous friction 0.02-0.2 N m s/rad; latency 0-10 ms; gyroscope
bias ±0.05 rad/s and accelerometer bias ±0.2 m/s² per axis.

`scale` widens every range about its nominal end or centre (offsets ±0.05·s, scales
1 ± 0.2·s floored at 0.3, armature 1 ± 0.3·s floored at 0.3, Coulomb 0.1-(0.1 + 0.4·s),
viscous 0.02-(0.02 + 0.18·s), latency 0-10·s ms, biases ×s). At 1 the robot is inside the
training randomization of `g1-force`/`g1-pull` for gains and latency (so a randomized
policy barely notices it); at 2 it is well outside, the case calibration exists for.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simreal.robots.g1 import ACTUATORS


def random_perturbation(
    seed: int, joints: Sequence[str], scale: float = 1.0, noise: dict | None = None
) -> dict:
    """An overlay dict (the YAML schema) perturbing `joints`, drawn with `seed`; `scale`
    widens the ranges (module docstring). The draws are the same for every scale, so a
    wider perturbation is the same robot pushed further. `noise`: a `noise:` section
    (`robots.g1.perturbation`) for the virtual robot, its generator seeded with `seed`."""
    if not scale > 0:
        raise ValueError(f"perturbation scale: {scale} (must be > 0)")
    rng = np.random.default_rng(seed)

    def spread(u: float, width: float) -> float:
        return max(0.3, 1.0 + u * width * scale)

    perturbed = {
        n: {
            "encoder_offset": float(0.05 * scale * rng.uniform(-1, 1)),
            "kp_scale": spread(rng.uniform(-1, 1), 0.2),
            "kd_scale": spread(rng.uniform(-1, 1), 0.2),
            "armature": float(ACTUATORS[n].armature * spread(rng.uniform(-1, 1), 0.3)),
            "friction_coulomb": float(0.1 + 0.4 * scale * rng.uniform(0, 1)),
            "friction_viscous": float(0.02 + 0.18 * scale * rng.uniform(0, 1)),
        }
        for n in joints
    }
    out = {
        "robot": "g1",
        "latency_ms": float(10.0 * scale * rng.uniform(0, 1)),
        "imu": {
            "gyro_bias": (0.05 * scale * rng.uniform(-1, 1, 3)).tolist(),
            "accel_bias": (0.2 * scale * rng.uniform(-1, 1, 3)).tolist(),
        },
        "joints": perturbed,
    }
    if noise is not None:
        out["noise"] = {**noise, "seed": seed}
    return out
