"""Nominal Crazyflie 2.x parameters (CF2X), from the public gym-pybullet-drones model.

Real Crazyflies differ from these (the same lab later measured 31.9 g and a 32.5 mm
arm); that gap is what the calibration overlay is for, so these stay nominal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GRAVITY = 9.81

MOTOR_NAMES: tuple[str, ...] = ("motor0", "motor1", "motor2", "motor3")
"""Motor order of the CF2X: 0 front-right (+x, -y), 1 back-right, 2 back-left, 3 front-left."""

MOTOR_DIRECTIONS: tuple[float, ...] = (-1.0, 1.0, -1.0, 1.0)
"""Sign of each motor's reaction torque about body z (motors 0 and 2 spin the other way)."""


@dataclass(frozen=True)
class CrazyflieParams:
    """Physical constants of one Crazyflie; SI units, RPM for rotor speed."""

    mass: float = 0.027
    arm: float = 0.0397
    inertia: tuple[float, float, float] = (1.4e-5, 1.4e-5, 2.17e-5)
    kf: float = 3.16e-10
    """Thrust per rotor = kf * rpm**2 (N)."""
    km: float = 7.94e-12
    """Reaction torque per rotor = km * rpm**2 (N m)."""
    thrust_to_weight: float = 2.25
    prop_radius: float = 0.0231348
    ground_effect_coeff: float = 11.36859
    drag_coeff_xy: float = 9.1785e-7
    drag_coeff_z: float = 10.311e-7
    downwash_coeffs: tuple[float, float, float] = (2267.18, 0.16, -0.11)
    collision_radius: float = 0.06
    collision_height: float = 0.025
    max_speed: float = 30.0 / 3.6
    """Largest speed (m/s): the model's `max_speed_kmh` of 30 km/h (gym-pybullet-drones
    cf2x.urdf), which its velocity-control aviaries also use as the speed limit."""
    max_body_rate: float = math.radians(2000.0)
    """Largest body rate (rad/s): the measuring range of the Crazyflie 2.1's gyroscope
    (BMI088 at +-2000 deg/s in the Bitcraze firmware); beyond it the rate loop flies
    blind."""

    @property
    def weight(self) -> float:
        return self.mass * GRAVITY

    @property
    def hover_rpm(self) -> float:
        return math.sqrt(self.weight / (4.0 * self.kf))

    @property
    def max_rpm(self) -> float:
        return math.sqrt(self.thrust_to_weight * self.weight / (4.0 * self.kf))

    @property
    def max_thrust(self) -> float:
        """Largest thrust of one motor (N)."""
        return self.kf * self.max_rpm**2

    @property
    def rotor_offsets(self) -> tuple[tuple[float, float, float], ...]:
        """Rotor positions in the body frame, in MOTOR_NAMES order (X layout, arm at 45 deg)."""
        a = self.arm / math.sqrt(2.0)
        return ((a, -a, 0.0), (-a, -a, 0.0), (-a, a, 0.0), (a, a, 0.0))

    @property
    def ground_effect_clip_height(self) -> float:
        """Height below which ground effect stops growing (it diverges as h -> 0).

        Relative to the thrust of all four motors, as gym-pybullet-drones defines it.
        """
        return (
            0.25
            * self.prop_radius
            * math.sqrt(
                15.0
                * self.max_rpm**2
                * self.kf
                * self.ground_effect_coeff
                / (4.0 * self.max_thrust)
            )
        )
