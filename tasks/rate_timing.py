"""Timing of a task configured by rates (`physics_hz`, `control_hz`, `episode_s`), as the
quadcopters and the lane-keeping car are.

A mixin for such task configs (dataclasses that declare those three fields), so the
derived periods and the episode length are written once.
"""

from __future__ import annotations


class RateTiming:
    """Periods and lengths from `physics_hz`, `control_hz` and `episode_s`."""

    physics_hz: int
    control_hz: int
    episode_s: float

    @property
    def control_dt(self) -> float:
        """The nominal control period (s): reward weights (per second) are multiplied by it."""
        return 1.0 / self.control_hz

    @property
    def decimation(self) -> int:
        return self.physics_hz // self.control_hz

    @property
    def max_episode_steps(self) -> int:
        return round(self.episode_s * self.control_hz)

    def check_rates(self) -> None:
        """Refuse rates that cannot be stepped: both positive, physics a multiple of control."""
        if self.physics_hz <= 0 or self.control_hz <= 0 or self.physics_hz % self.control_hz:
            raise ValueError(
                f"physics_hz ({self.physics_hz}) must be a positive multiple of control_hz "
                f"({self.control_hz})"
            )
