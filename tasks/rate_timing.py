"""Timing of a task configured by rates (`physics_hz`, `control_hz`, `episode_s`), as the
quadcopters and the lane-keeping car are, with per-second reward weights saved beside it.

A mixin for such task configs (dataclasses that declare those three fields), so the
derived periods, the episode length and the upgrade of configs saved with per-step
weights are written once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from simreal.tasks.terms import upgrade_per_step_config


class RateTiming:
    """Periods and lengths from `physics_hz`, `control_hz` and `episode_s`."""

    physics_hz: int
    control_hz: int
    episode_s: float

    @classmethod
    def upgrade_plain(cls, plain: dict[str, Any]) -> dict[str, Any]:
        """A saved config with per-step weights, upgraded to per-second ones (same returns);
        a config that omits `control_hz` ran at the class's default rate."""
        default_hz = {f.name: f.default for f in dataclasses.fields(cls)}["control_hz"]
        return upgrade_per_step_config(plain, plain.get("control_hz", default_hz))

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
