"""How a G1 command reaches the joints (`G1Actuation`, a part of `G1Env`): actions become
joint position targets, the robot's PD loop tracks them against its measured (offset)
angles with the (randomized) gains, commands arrive late by a fraction of physics steps,
and the motors' torque is clipped at their limits or, with `motor_envelope`, at their
torque-speed envelope.

The default path (`task.actuation=substeps`) writes each physics step's blended command
and torque range by hand; `task.actuation=native` hands latency and envelope to MuJoCo's
own actuators (`native_actuation.py`)."""

from __future__ import annotations

import numpy as np

from simreal.robots.g1.actuators import VELOCITY_LIMITS, torque_speed_range
from simreal.tasks.g1 import native_actuation


def blend(old: np.ndarray, previous: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The command a motor acts on while a late target arrives: `old` the previous
    target's share (1 before the new one is due, 0 after, the fraction in the physics step
    where it lands)."""
    return old * previous + (1.0 - old) * new


class G1Actuation:
    """Actions, commands and motor torques of a `G1Env` (its gains, scales, limits,
    targets and latency tables)."""

    def apply_action(self, action: np.ndarray) -> None:
        self.last_action[:] = self.action
        self.action[:] = action
        self.apply_command(self.command_from_action(action))

    def command_from_action(self, action: np.ndarray) -> np.ndarray:
        """(N, 29) joint position targets (rad), SDK order: the low-level command's q, within
        the joint limits as the deploy node keeps it."""
        target = self.default_joint_pos + self.action_scale * action + self.reference_offset()
        return np.clip(target, self.joint_lower, self.joint_upper)

    def reference_offset(self) -> np.ndarray | float:
        """Joint-target offsets (N, 29) a task adds under the policy's (g1-pull's stepping
        reference); none here."""
        return 0.0

    def apply_command(self, command: np.ndarray) -> None:
        """The robot's PD loop tracks `command` against its measured (offset) angles."""
        self.prev_ctrl_target[:] = self.ctrl_target
        self.ctrl_target[:] = command - self.joint_offset

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.joint_pos + self.joint_offset, self.joint_vel.copy(), self.joint_torque()

    def actuate(self) -> None:
        """One control period of physics under the current targets: latency blended per
        physics step and, with `motor_envelope`, the torque range rewritten before each."""
        late = self.latency_substeps
        envelope = self.cfg.motor_envelope
        if self.native_motors:
            native_actuation.simulate(self)
        elif late.any() or envelope:
            # Every substep's command at once, so the loop below only copies and steps.
            substep = np.arange(self.decimation, dtype=float)[:, None]
            old = np.clip(late - substep, 0.0, 1.0)[:, :, None]  # (substeps, N, 1)
            ctrl = blend(old, self.prev_ctrl_target, self.ctrl_target)
            limit = self.torque_limit * self.motor_strength if envelope else None
            for sub in range(self.decimation):
                self.engine.ctrl[:] = ctrl[sub]
                if envelope:
                    self._limit_motors(limit)
                self.step_physics(1)
        else:
            self.engine.ctrl[:] = self.ctrl_target
            self.step_physics(self.decimation)

    def joint_torque(self) -> np.ndarray:
        """PD torque (N, 29) the actuators apply, clipped at the (randomized) limits and,
        with `motor_envelope`, at the torque the motors can give at their speed."""
        tau = self.kp * self.kp_scale * (self.acting_command() - self.joint_pos)
        tau -= self.kd * self.kd_scale * self.joint_vel
        lower, upper = self.motor_torque_range()
        return np.clip(tau, lower, upper)

    def acting_command(self) -> np.ndarray:
        """(N, 29) the command the motors act on in the control step's last physics step:
        the new target, or its blend with the previous one while a latency of more than
        decimation - 1 physics steps holds it back (the same blend `actuate` writes)."""
        old = np.clip(self.latency_substeps - (self.decimation - 1), 0.0, 1.0)[:, None]
        return blend(old, self.prev_ctrl_target, self.ctrl_target)

    def motor_torque_range(self) -> tuple[np.ndarray, np.ndarray]:
        """(N, 29) lower and upper torque the motors can give now: the (randomized) torque
        limits, narrowed by the torque-speed envelope (`torque_speed_range`) when
        `cfg.motor_envelope`."""
        limit = self.torque_limit * self.motor_strength
        if not self.cfg.motor_envelope:
            return -limit, limit
        return torque_speed_range(self.joint_vel, limit, VELOCITY_LIMITS)

    def _limit_motors(self, limit: np.ndarray) -> None:
        """Write the motors' torque range at the current joint speeds into every simulation,
        before each physics step (MuJoCo clamps an actuator's force to its forcerange):
        `motor_torque_range` with the control step's torque `limit` (N, 29), computed
        straight into the engine's field. Why in place: this runs before every physics
        step, in the physics thread when groups overlap (tasks/overlap.py), where every
        temporary is time the GIL is held."""
        field = self.engine.model_field("actuator_forcerange")
        torque_speed_range(
            self.joint_vel, limit, VELOCITY_LIMITS, out=(field[:, :29, 0], field[:, :29, 1])
        )
        if not self.engine.live_model_fields:
            self.engine.commit_model()

    def write_actuators(self, ids: np.ndarray) -> None:
        """PD gains and torque limits of simulations `ids` from their scales (uncommitted)."""
        nom, field, n = self.nominal, self.engine.model_field, ids.size
        kp = self.kp * self.kp_scale[ids]
        kd = self.kd * self.kd_scale[ids]
        gain = np.broadcast_to(nom["actuator_gainprm"], (n, 29, 10)).copy()
        bias = np.broadcast_to(nom["actuator_biasprm"], (n, 29, 10)).copy()
        if self.native_motors and self.cfg.motor_envelope:  # dcmotor: its driver's terms
            native_actuation.dcmotor_gains(
                gain, self.torque_limit * self.motor_strength[ids], kp, kd
            )
        else:
            gain[:, :, 0], bias[:, :, 1], bias[:, :, 2] = kp, -kp, -kd
        field("actuator_gainprm")[ids] = gain
        field("actuator_biasprm")[ids] = bias
        field("actuator_forcerange")[ids] = (
            nom["actuator_forcerange"] * self.motor_strength[ids, :, None]
        )
        native_actuation.write_delays(self, ids)
