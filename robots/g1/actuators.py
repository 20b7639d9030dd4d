"""The G1's joint PD actuation: gains, rotor armature, torque limits, action scale.

The gains are the ones Unitree's own deployment uses with MuJoCo-trained policies,
derived from each motor's reflected rotor inertia (its armature) as a second-order
system with a 10 Hz natural frequency and damping ratio 2:
kp = armature * w^2 and kd = 2 * zeta * armature * w, with w = 2 pi 10 rad/s.
Armature is therefore recovered from kp alone, armature = kp / w^2, which gives
0.0102 (hip pitch, hip yaw, waist yaw), 0.0251 (hip roll, knee), 0.0072 (ankles, waist
roll and pitch: two small motors through a linkage), 0.0036 (shoulders, elbow, wrist
roll) and 0.0043 kg m^2 (wrist pitch and yaw); kd = 4 * armature * w then reproduces
the listed kd within its rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simreal.robots.g1.joints import JOINT_NAMES, JOINTS

NATURAL_FREQ_HZ = 10.0
DAMPING_RATIO = 2.0
ACTION_SCALE_TORQUE_FRACTION = 0.25
"""A unit action moves the PD target by this fraction of the torque limit over kp."""
MAX_GAIN_FACTOR = 4.0
"""The largest kp and kd a policy may send, as a multiple of the listed gains.

Unitree documents no maximum kp or kd for the G1's motors (the SDK takes any float).
This is the project's own bound, not the firmware's: unitree_rl_gym's G1 walking policy
sends up to 2.5 times the listed kp (hip pitch and yaw 100 N m/rad) and less than the
listed kd, so 4 times admits every G1 policy gain seen, while a unit error or another
robot's gains (kp 1e6 was once sent) are refused. For kd it is also about where a
damper on the reflected rotor inertia alone stops being stable when updated at the
500 Hz command rate (kd < 2 armature / 2 ms = 4 times the listed kd)."""

_GAINS: dict[str, tuple[float, float]] = {
    "hip_pitch": (40.2, 2.6),
    "hip_roll": (99.1, 6.3),
    "hip_yaw": (40.2, 2.6),
    "knee": (99.1, 6.3),
    "ankle_pitch": (28.5, 1.8),
    "ankle_roll": (28.5, 1.8),
    "waist_yaw": (40.2, 2.6),
    "waist_roll": (28.5, 1.8),
    "waist_pitch": (28.5, 1.8),
    "shoulder_pitch": (14.3, 0.9),
    "shoulder_roll": (14.3, 0.9),
    "shoulder_yaw": (14.3, 0.9),
    "elbow": (14.3, 0.9),
    "wrist_roll": (14.3, 0.9),
    "wrist_pitch": (16.8, 1.1),
    "wrist_yaw": (16.8, 1.1),
}
"""Joint kind -> (kp in N m/rad, kd in N m s/rad)."""


@dataclass(frozen=True)
class ActuatorSpec:
    """The PD motor of one joint: torque = kp (q_target - q) - kd qdot, clipped at the limit."""

    joint: str
    kp: float
    kd: float
    torque_limit: float

    @property
    def armature(self) -> float:
        """Reflected rotor inertia (kg m^2) that makes kp a 10 Hz spring."""
        return self.kp / (2.0 * math.pi * NATURAL_FREQ_HZ) ** 2

    @property
    def kp_max(self) -> float:
        """The largest kp a policy may command (`MAX_GAIN_FACTOR`)."""
        return MAX_GAIN_FACTOR * self.kp

    @property
    def kd_max(self) -> float:
        """The largest kd a policy may command (`MAX_GAIN_FACTOR`)."""
        return MAX_GAIN_FACTOR * self.kd

    @property
    def action_scale(self) -> float:
        """Radians of PD target per unit of policy action."""
        return ACTION_SCALE_TORQUE_FRACTION * self.torque_limit / self.kp


ACTUATORS: dict[str, ActuatorSpec] = {
    name: ActuatorSpec(name, *_GAINS[JOINTS[name].kind], JOINTS[name].torque_limit)
    for name in JOINT_NAMES
}
"""Joint name -> its actuator; iterate JOINT_NAMES for hardware order."""


def torque_speed_range(
    velocity: np.ndarray,
    torque_limit: np.ndarray,
    velocity_limit: np.ndarray,
    out: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) torque a G1 joint motor can give at joint speed `velocity` (rad/s).

    A DC motor at its supply voltage: the back-EMF grows with speed, so the torque it can
    drive along the motion falls linearly from `torque_limit` at rest to zero at
    `velocity_limit` (FACTS' maximum joint speed, taken as the no-load speed), while a
    braking torque (against the motion) keeps the full limit. Past the velocity limit the
    motor can only brake: this is how the joint velocity limits are enforced in the
    simulation (the motor cannot drive a joint faster; an outside force can, and is
    braked). The same curve as Isaac Lab's DC motor model with saturation = rated torque.

    `out` (lower, upper): arrays (or views, such as an engine's expanded `forcerange`) the
    range is written into, so a caller that rewrites it before every physics step makes
    no temporaries for it; the numbers are the same either way.
    """
    lower, upper = (None, None) if out is None else out
    ratio = velocity / velocity_limit
    brake = -torque_limit
    upper = np.clip(torque_limit * (1.0 - ratio), brake, torque_limit, out=upper)
    lower = np.clip(torque_limit * (-1.0 - ratio), brake, torque_limit, out=lower)
    return lower, upper


CTRL_HISTORY_SAMPLES = 10
"""ctrl samples each motor keeps in MuJoCo's native actuation (`build_mjcf(native_motors=
True)`): the largest command latency a G1 task accepts (8 physics steps) plus the two the
linear interpolation reads between."""

MOTOR_CONSTANT = 1.0
"""K of a native motor's driver (V s/rad, equal to N m/A): free, since only K/R and the
no-load speed Vmax/K enter its torque; 1 makes the supply voltage the no-load speed in
rad/s."""


def driver_resistance(torque_limit: np.ndarray, no_load_speed: np.ndarray) -> np.ndarray:
    """R (Ohm) of a native motor (MuJoCo's `dcmotor`) whose torque is `torque_speed_range`'s
    envelope: stall torque `torque_limit` at supply voltage Vmax = K * `no_load_speed`.

    The motor's current-controlled driver commands the PD torque tau as the voltage
    R/K tau + K qdot, clipped at Vmax, and its current is clipped at the torque limit L, so
    its torque is clip(clip(tau + L qdot / v0, -L, L) - L qdot / v0, -L, L) with
    L = K Vmax / R and v0 = Vmax / K: the envelope's driving side falls to zero at v0, its
    braking side stays L (bench/native_motor.py: equal to 3e-14 N m)."""
    return MOTOR_CONSTANT * MOTOR_CONSTANT * no_load_speed / torque_limit


JOINT_FRICTION_COULOMB_N_M = 0.3
JOINT_FRICTION_VISCOUS_N_M_S = 0.11
"""Nominal joint friction of every G1 joint: Coulomb (MuJoCo's frictionloss, N m) and
viscous (damping, N m s/rad). No public measurement exists; these are the middle of the
ranges the G1 tasks randomize over (tasks/g1/config.py, 0.1-0.5 and 0.02-0.2), the ranges
the calibration checks' perturbed robots are drawn from. A calibration overlay replaces
them per joint."""

VELOCITY_LIMITS = np.array([JOINTS[name].velocity_limit for name in JOINT_NAMES])
"""(29,) maximum joint speeds (rad/s), SDK order, from FACTS.md."""
