"""`quad-replan`: time allocation of minimum-snap trajectories through waypoints for a
Crazyflie, judged at several fidelities (analytic, mjbatch, PyBullet); see
docs/quad-replan.md."""
