"""`quad-replan`: time allocation of minimum-snap trajectories through waypoints for a
Crazyflie, judged at several fidelities (analytic, mjbatch, PyBullet); see
docs/quad-replan.md."""

from simreal.tasks.quad_replan.config import QuadReplanConfig
from simreal.tasks.quad_replan.env import QuadReplanEnv

__all__ = ["QuadReplanConfig", "QuadReplanEnv"]
