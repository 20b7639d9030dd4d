"""The check that a G1 task ends an overwhelming disturbance as a fall (g1-force's push,
g1-pull's load): one loop, so that both tasks are held to the same terms."""

from __future__ import annotations

import numpy as np


def assert_every_robot_falls(env, max_steps: int, zero_logs: tuple[str, ...] = ()) -> None:
    """Zero actions until every simulation's episode has ended, at most `max_steps`: every
    step finite and none truncated, every ended episode logged as a fall (fall_rate 1),
    with each of `zero_logs` logged as 0."""
    ended = np.zeros(env.num_envs, dtype=bool)
    for _ in range(max_steps):
        step = env.step(np.zeros((env.num_envs, env.num_actions)))
        assert np.isfinite(step.obs).all() and np.isfinite(step.critic_obs).all()
        assert not step.truncated.any()
        ended |= step.terminated
        if "episode" in step.info:
            np.testing.assert_array_equal(step.info["episode"]["fall_rate"], 1.0)
            for key in zero_logs:
                np.testing.assert_array_equal(step.info["episode"][key], 0.0)
        if ended.all():
            break
    assert ended.all()
