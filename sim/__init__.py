"""Batched simulation: N simulations stepped together, state as (num_envs, ...) arrays.

An engine knows models and arrays, never tasks. `make_engine` picks one by name.
"""

from simreal.sim.engine import ENGINES, Engine, EngineError, installed_engines, make_engine

__all__ = ["ENGINES", "Engine", "EngineError", "installed_engines", "make_engine"]
