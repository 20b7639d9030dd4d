"""The training progress bar: its total follows whichever budget ends first, and it shows
no evaluation before there has been one."""

from __future__ import annotations

import pytest

from simreal.policies import OnPolicyRunner, TrainConfig
from simreal.policies.runner import budget_end_steps
from simreal.tasks import make_env
from simreal.tasks.quad_hover import QuadHoverConfig


def test_without_a_time_budget_the_total_is_the_step_budget():
    assert budget_end_steps(50_000, 30.0, 20_000_000, None) == 20_000_000
    assert budget_end_steps(50_000, 30.0, 20_000_000, 0.0) == 20_000_000


def test_a_time_budget_that_ends_first_sets_the_total_at_the_rate_so_far():
    # 1000 steps/s; 60 s of a 1.5-minute budget left after 30 s: 90k steps, not 20 M.
    assert budget_end_steps(30_000, 30.0, 20_000_000, 1.5) == 90_000


def test_a_step_budget_that_ends_first_stays_the_total():
    assert budget_end_steps(30_000, 30.0, 100_000, 60.0) == 100_000


def test_past_a_budget_the_total_is_where_training_stands():
    assert budget_end_steps(200_000, 200.0, 20_000_000, 1.5) == 200_000
    # the last iteration's batch overshoots the step budget: the bar still ends full
    assert budget_end_steps(49_152, 4.0, 40_000, None) == 49_152


@pytest.mark.parametrize(("minutes", "evaluated"), [(0.0, False), (60.0, True)])
def test_the_bar_ends_at_the_budget_and_shows_eval_only_once_evaluated(
    tmp_path, capsys, minutes, evaluated
):
    steps = 2 * 16 * 32
    cfg = TrainConfig(
        num_envs=16, max_env_steps=steps, max_minutes=minutes, seed=0, eval_interval=2
    )
    cfg.ppo.num_steps_per_env = 32
    env = make_env("quad-hover", QuadHoverConfig(), num_envs=16, seed=0)
    eval_env = make_env("quad-hover", QuadHoverConfig(evaluation=True), num_envs=2, seed=1)
    runner = OnPolicyRunner(
        env, cfg, tmp_path, eval_env=eval_env if evaluated else None, reward_terms=["hover"]
    )
    runner.learn()
    bar = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert "1.02k/1.02k" in bar  # the step budget ended first, with or without --minutes
    assert ("eval=" in bar) == evaluated
    assert "eval=0.0" not in bar
