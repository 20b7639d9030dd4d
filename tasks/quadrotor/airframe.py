"""Per-drone airframe randomization shared by the single-drone tasks and the swarm: the
ranges of `QuadRandomization` sampled per drone and written into the batched model.

Why per drone, in the model: mass, inertia, the thrust and yaw-torque constants and the
motor time constant of a real Crazyflie differ from the nominal ones (battery, props,
wear), and a controller that only works at the nominal values does not transfer. Thrust
constant errors act where the commanded thrust meets the model (the caller scales its
thrust by kf_scale); the yaw torque per newton, km / kf, lives in the actuator gear.
"""

from __future__ import annotations

import numpy as np

from simreal.tasks.quadrotor.config import QuadRandomization

SCALES = ("mass_scale", "inertia_scale", "kf_scale", "km_scale")
MIN_MOTOR_LAG_S = 1e-6
"""MuJoCo's filter needs a positive time constant; this one is no lag at all."""
MOTORS = 4


def sample(rng: np.random.Generator, r: QuadRandomization, shape: tuple[int, ...]) -> dict:
    """Scales, motor_lag_s and latency_steps (integer control steps) drawn for `shape`
    drones, in a fixed order (reproducible for a given generator state)."""
    drawn = {name: rng.uniform(*getattr(r, name), shape) for name in SCALES}
    drawn["motor_lag_s"] = rng.uniform(*r.motor_lag_s, shape)
    drawn["latency_steps"] = rng.integers(r.latency_steps[0], r.latency_steps[1] + 1, shape)
    return drawn


class Nominal:
    """The drones' nominal mass, inertia and actuator gear, read once from the model."""

    def __init__(self, engine, bodies: np.ndarray):
        self.bodies = np.asarray(bodies)
        self.mass = engine.model_field("body_mass")[0, self.bodies].copy()
        self.inertia = engine.model_field("body_inertia")[0, self.bodies].copy()
        self.gear = engine.model_field("actuator_gear")[0].copy()

    def write(self, engine, sims: np.ndarray, drawn: dict) -> None:
        """Write the draws (arrays (len(sims), len(bodies))) for simulations `sims`; drone
        k's motors are actuators 4k..4k+3."""
        rows = sims[:, None]
        engine.model_field("body_mass")[rows, self.bodies] = self.mass * drawn["mass_scale"]
        engine.model_field("body_inertia")[rows, self.bodies] = (
            self.inertia * drawn["inertia_scale"][..., None]
        )
        gear = engine.model_field("actuator_gear")
        gear[sims] = self.gear
        ratio = np.repeat(drawn["km_scale"] / drawn["kf_scale"], MOTORS, axis=1)
        gear[rows, np.arange(ratio.shape[1]), 5] = self.gear[: ratio.shape[1], 5] * ratio
        lag = np.repeat(np.maximum(drawn["motor_lag_s"], MIN_MOTOR_LAG_S), MOTORS, axis=1)
        engine.model_field("actuator_dynprm")[rows, np.arange(lag.shape[1]), 0] = lag
        engine.commit_model(sims)
