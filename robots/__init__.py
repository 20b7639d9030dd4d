"""Robot descriptions: one sub-package per robot, knowing nothing of tasks.

Each robot owns its facts (masses, joint order, limits, actuator parameters) and
builds its own MuJoCo model from them, so training, export and deploy read one source.
"""

from __future__ import annotations

import importlib
from types import ModuleType

ROBOTS: dict[str, str] = {
    "allegro": "simreal.robots.allegro",
    "car": "simreal.robots.car",
    "crazyflie": "simreal.robots.crazyflie",
    "g1": "simreal.robots.g1",
}
"""Robot name -> package; each offers build_mjcf(), build_urdf() and describe()."""


def get_robot(name: str) -> ModuleType:
    if name not in ROBOTS:
        raise KeyError(f"unknown robot {name!r}; available: {', '.join(sorted(ROBOTS))}")
    return importlib.import_module(ROBOTS[name])
