"""`task.actuation=native`: MuJoCo's own actuators carry the G1's command latency (each
actuator's ctrl `delay`, read from its ctrl history) and motor envelope (a `dcmotor` per
joint), so a control step is one engine call. It needs mjbatch's per-simulation model
fields. MuJoCo's delay reads a command only from the physics step after it arrives, so a
latency under one physics step is written by hand: the first step runs on its own with
the blend of the old and new targets (`actuation.blend`).

The default (`task.actuation=substeps`, `actuation.py`) writes each physics step's command
and torque range itself; both give the same robot to rounding."""

from __future__ import annotations

import mujoco
import numpy as np

from simreal.robots.g1.actuators import MOTOR_CONSTANT, VELOCITY_LIMITS, driver_resistance
from simreal.tasks.g1 import actuation


def simulate(env) -> None:
    """A control step with MuJoCo's own actuators: the new target into ctrl, their delays
    and envelope doing the rest in one engine call; where a latency is under one physics
    step, the first step runs on its own with the blend written by hand."""
    late, ctrl, target = env.latency_substeps, env.engine.ctrl, env.ctrl_target
    ctrl[:] = target
    early = np.flatnonzero((late > 0.0) & (late < 1.0))
    if early.size == 0:
        env.step_physics(env.decimation)
        return
    ctrl[early] = actuation.blend(late[early, None], env.prev_ctrl_target[early], target[early])
    env.step_physics(1)
    ctrl[early] = target[early]
    if env.decimation > 1:
        env.step_physics(env.decimation - 1)


def dcmotor_gains(gain: np.ndarray, limit: np.ndarray, kp: np.ndarray, kd: np.ndarray) -> None:
    """Write a dcmotor's driver terms into `gain` (n, 29, 10) in place: the resistance
    that gives torque `limit` (n, 29) at stall, the motor constant, the PD gains and the
    back-EMF at the joints' velocity limits."""
    gain[:, :, 0] = driver_resistance(limit, VELOCITY_LIMITS)
    gain[:, :, 1] = MOTOR_CONSTANT
    gain[:, :, 4], gain[:, :, 6] = kp, kd
    gain[:, :, 7] = MOTOR_CONSTANT * VELOCITY_LIMITS


def write_delays(env, ids: np.ndarray) -> None:
    """Each simulation's command delay (s), its latency except under one physics step,
    which `simulate` blends by hand (delay 0); nothing without native motors."""
    if not env.native_motors:
        return
    late = env.latency_substeps[ids]
    steps = np.where(late >= 1.0, late, 0.0)
    env.engine.model_field("actuator_delay")[ids, :29] = steps[:, None] * env.cfg.physics_dt


def hold_in_history(env, ids: np.ndarray, command: np.ndarray) -> None:
    """Every sample of simulations `ids`' ctrl histories becomes `command` (len(ids), 29),
    so a delayed read returns it until new commands arrive (a delayed command of the last
    episode must not act in the next)."""
    columns = env.history_columns
    env.engine.ctrl_history()[np.ix_(ids, columns.ravel())] = np.repeat(
        command, columns.shape[1], axis=1
    )


def history_value_columns(model: mujoco.MjModel) -> np.ndarray:
    """(29, nsample) columns of `history` with the joint actuators' ctrl samples: MuJoCo
    keeps an actuator's history at `actuator_historyadr` as two header numbers, then
    `nsample` times, then `nsample` values. (29, 0) where there is no history."""
    samples = int(model.actuator_history[0, 0])
    values = model.actuator_historyadr[:29, None] + 2 + samples
    return values + np.arange(samples)
