"""Parameters of the lane-keeping car: a compact passenger car as a dynamic bicycle model.

Values are those of a generic compact car (about 1.3 t, 2.6 m wheelbase), not of one
production model: the task needs plausible dynamics, not a particular vehicle.
"""

from __future__ import annotations

from dataclasses import dataclass

GRAVITY = 9.81


@dataclass(frozen=True)
class CarParams:
    mass: float = 1300.0
    """Total mass (kg), carried by the chassis body."""
    yaw_inertia: float = 1800.0
    """Yaw moment of inertia about the centre of mass (kg m^2)."""
    cg_to_front: float = 1.1
    """Centre of mass to front axle (m)."""
    cg_to_rear: float = 1.5
    """Centre of mass to rear axle (m)."""
    track: float = 1.5
    length: float = 4.2
    width: float = 1.8
    wheel_radius: float = 0.31
    cornering_stiffness_front: float = 80_000.0
    """Lateral force per rad of slip of the front axle (N/rad), linear region."""
    cornering_stiffness_rear: float = 90_000.0
    max_steer: float = 0.5
    """Front wheel angle limit (rad)."""
    steer_kp: float = 400.0
    """Steering servo: position gain (N m/rad) on a unit-inertia steering joint."""
    steer_damping: float = 40.0
    """Steering servo damping (N m s/rad): critically damped with steer_kp."""
    max_speed: float = 12.0
    """Highest target speed the speed action can ask for (m/s)."""
    max_accel: float = 3.0
    """Drive force limit as an acceleration (m/s^2)."""
    max_decel: float = 6.0
    """Brake force limit as a deceleration (m/s^2)."""
    speed_gain: float = 2.0
    """Speed controller: commanded acceleration per m/s of speed error (1/s)."""
    rolling_resistance: float = 0.015
    drag_area: float = 0.7
    """Drag coefficient times frontal area (m^2)."""
    min_slip_speed: float = 1.0
    """Slip angles use at least this forward speed (m/s): the bicycle model is singular
    at standstill, and the task never drives slower than a walk."""

    @property
    def wheelbase(self) -> float:
        return self.cg_to_front + self.cg_to_rear

    @property
    def max_curvature(self) -> float:
        """Tightest path curvature the steering allows (1/m), kinematic limit."""
        import math

        return math.tan(self.max_steer) / self.wheelbase

    @property
    def axle_loads(self) -> tuple[float, float]:
        """Static normal load on the front and rear axles (N)."""
        w = self.mass * GRAVITY
        return w * self.cg_to_rear / self.wheelbase, w * self.cg_to_front / self.wheelbase
