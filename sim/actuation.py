"""MuJoCo's actuator model in numpy, for engines that have no actuators of their own.

An engine that simulates a MuJoCo model's bodies but not its actuators (PyBullet, and
Genesis for site actuators) computes each physics step's actuator forces here, the
way mj_step does: control clamped to ctrlrange, activation advanced by the dynamics
(none, filter, filterexact; actearly honoured), force = gainprm[0] * (act or ctrl)
clamped to forcerange. Only fixed gains without bias, which is what rotor thrust is.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

MIN_TIME_CONSTANT = 1e-15
"""MuJoCo's mjMINVAL: the smallest actuator time constant."""

SUPPORTED_DYNAMICS = {
    int(mujoco.mjtDyn.mjDYN_NONE),
    int(mujoco.mjtDyn.mjDYN_FILTER),
    int(mujoco.mjtDyn.mjDYN_FILTEREXACT),
}

Bounds = tuple[np.ndarray, np.ndarray] | None


def limits(limited: np.ndarray, ranges: np.ndarray) -> Bounds:
    """Lower and upper bounds (inf where unlimited), or None when nothing is limited."""
    if not np.any(limited):
        return None
    on = np.asarray(limited, dtype=bool)
    return np.where(on, ranges[:, 0], -np.inf), np.where(on, ranges[:, 1], np.inf)


def clip(values: np.ndarray, bounds: Bounds) -> np.ndarray:
    return values if bounds is None else np.clip(values, bounds[0], bounds[1])


@dataclass
class ActuatorDynamics:
    """The constant part of a model's actuators (all of them, in model order)."""

    ctrl_range: Bounds
    force_range: Bounds
    stateful: np.ndarray
    """Actuators with an activation state."""
    act_adr: np.ndarray
    act_range: Bounds
    exact: np.ndarray
    early: np.ndarray

    @classmethod
    def of(cls, model: mujoco.MjModel) -> ActuatorDynamics:
        stateful = np.flatnonzero(model.actuator_actadr >= 0)
        return cls(
            ctrl_range=limits(model.actuator_ctrllimited, model.actuator_ctrlrange),
            force_range=limits(model.actuator_forcelimited, model.actuator_forcerange),
            stateful=stateful,
            act_adr=model.actuator_actadr[stateful],
            act_range=limits(
                model.actuator_actlimited[stateful], model.actuator_actrange[stateful]
            ),
            exact=model.actuator_dyntype[stateful] == mujoco.mjtDyn.mjDYN_FILTEREXACT,
            early=model.actuator_actearly[stateful].astype(bool),
        )

    def forces(
        self,
        ctrl: np.ndarray,
        act: np.ndarray,
        dynprm: np.ndarray,
        gainprm: np.ndarray,
        dt: float,
    ) -> np.ndarray:
        """(N, nu) actuator forces of one physics step; advances `act` (N, na) in place."""
        ctrl = clip(ctrl, self.ctrl_range)
        drive = ctrl
        if self.stateful.size:
            old = act[:, self.act_adr]
            tau = np.maximum(dynprm[:, self.stateful, 0], MIN_TIME_CONSTANT)
            rate = np.where(self.exact, -np.expm1(-dt / tau), dt / tau)
            new = clip(old + (ctrl[:, self.stateful] - old) * rate, self.act_range)
            act[:, self.act_adr] = new
            drive = ctrl.copy()
            drive[:, self.stateful] = np.where(self.early, new, old)
        return clip(gainprm[..., 0] * drive, self.force_range)
