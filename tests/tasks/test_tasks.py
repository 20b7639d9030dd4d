"""Every registered task, the same checks: it builds with its default config, steps with
random actions, and keeps its observations and rewards finite and its shapes declared."""

from __future__ import annotations

import numpy as np
import pytest

from simreal.tasks import TASKS, make_env

SLOW_TO_BUILD = ("dex-track",)
"""Tasks whose environment takes over ten seconds to build here (dex-track builds its
reference set; 50 steps then take well under a second): checked in the slow tier."""


pytestmark = pytest.mark.usefixtures("work_in_tmp")


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_TO_BUILD else n for n in sorted(TASKS)],
)
def test_every_registered_task_steps_with_random_actions(name):
    spec = TASKS[name]
    env = make_env(name, spec.config_cls(), num_envs=8, seed=0)
    obs, critic = env.reset()
    assert np.isfinite(obs).all() and np.isfinite(critic).all()
    rng = np.random.default_rng(0)
    rows = env.num_envs  # one per simulation, or one per drone of a swarm
    assert rows == 8 * getattr(env, "agents_per_sim", 1)
    for _ in range(50):
        step = env.step(rng.uniform(-1, 1, (rows, env.num_actions)))
        assert step.obs.shape == (rows, env.num_obs)
        assert step.critic_obs.shape == (rows, env.num_critic_obs)
        assert np.isfinite(step.obs).all() and np.isfinite(step.critic_obs).all()
        assert np.isfinite(step.reward).all()
    assert env.unstable_resets == 0
