"""The per-simulation curriculum settles where its failure share says: a load the robot
fails at that rate, not the symmetric steps' one-in-two."""

from __future__ import annotations

import numpy as np
import pytest

from simreal.tasks.curriculum import PerSimulationCurriculum, make_curriculum
from simreal.tasks.g1_force.config import ForceConfig


def settle(share: float, iterations: int = 3000) -> tuple[float, float]:
    """Failure rate and mean level over the last two thirds of a run where a simulation
    fails with a probability rising smoothly through 50 % at level 100."""
    rng = np.random.default_rng(0)
    sims = np.arange(64)
    c = PerSimulationCurriculum(0.0, 300.0, 2.0, num_sims=sims.size, failure_share=share)
    rates, levels = [], []
    for i in range(iterations):
        p_fail = 1.0 / (1.0 + np.exp(-(c.levels - 100.0) / 10.0))
        failed = rng.random(sims.size) < p_fail
        c.record(sims, failed)
        if i >= iterations // 3:
            rates.append(failed.mean())
            levels.append(c.level)
    return float(np.mean(rates)), float(np.mean(levels))


@pytest.mark.parametrize("share", [0.5, 0.2])
def test_levels_settle_where_the_failure_share_of_episodes_fail(share):
    rate, level = settle(share)
    assert rate == pytest.approx(share, abs=0.02)
    # the level of that failure probability: 100 + 10 ln(share / (1 - share))
    assert level == pytest.approx(100.0 + 10.0 * np.log(share / (1.0 - share)), abs=3.0)


def test_a_failure_steps_down_by_the_share_s_ratio():
    c = make_curriculum("per_sim", 50.0, 300.0, 10.0, 2, 0.15, 0.5, minimum=0.0, failure_share=0.2)
    c.record(np.array([0, 1]), np.array([True, False]))
    np.testing.assert_allclose(c.levels, [10.0, 60.0])  # down 4 steps, up 1


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1])
def test_a_failure_share_outside_0_1_is_refused(share):
    with pytest.raises(ValueError, match="failure_share"):
        PerSimulationCurriculum(0.0, 1.0, 0.1, 2, failure_share=share)
    with pytest.raises(ValueError, match=r"forces\.failure_share"):
        ForceConfig(failure_share=share).validate()
