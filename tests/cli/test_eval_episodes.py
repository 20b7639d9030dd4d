"""`simreal eval` episode counts: per-task defaults, warnings below what a headline metric
needs, and `episodes` counted as asked (simulations, not a swarm's drones)."""

from __future__ import annotations

import pytest
from _repo import REPO

from simreal import evaluation
from simreal.tasks import TASKS
from simreal.tasks.episodes import BUDGETS, episode_budget, shortfall_warning
from simreal.tasks.g1_pull import G1PullConfig
from simreal.tasks.lane_keep import LaneKeepConfig


def test_every_registered_task_has_an_episode_budget():
    assert set(BUDGETS) == set(TASKS)
    for name, spec in TASKS.items():
        budget = episode_budget(name, spec.config_cls())
        assert budget.default >= budget.needed >= 1, name


def test_g1_pull_needs_its_whole_cart_ladder_and_says_so():
    budget = episode_budget("g1-pull", G1PullConfig())
    assert budget.needed == 40  # 300 N in 15 N rungs, per direction
    warning = shortfall_warning("g1-pull", 2, budget)
    assert "2 episodes are fewer than the 40" in warning
    assert shortfall_warning("g1-pull", 40, budget) is None


def test_lane_keep_needs_its_road_set():
    cfg = LaneKeepConfig(eval_roads=7)
    assert episode_budget("lane-keep", cfg).needed == 7


def test_short_g1_pull_evaluation_warns_in_the_report(capsys):
    metrics = evaluation.evaluate_policy(
        REPO / "results/g1-pull/policy.onnx",
        episodes=2,
        overrides=["task.eval_episode_s=3.2"],
    )
    assert metrics["episodes"] == 2
    assert "fewer than the 40" in metrics["warning"]
    assert "warning: g1-pull: 2 episodes" in capsys.readouterr().err


def test_swarm_episodes_count_simulations_and_agent_episodes_drones():
    metrics = evaluation.evaluate_policy(
        REPO / "results/quad-swarm/policy.onnx",
        episodes=2,
        overrides=["task.num_drones=3", "task.episode_s=0.5"],
    )
    assert metrics["episodes"] == 2
    assert metrics["agent_episodes"] == 6


@pytest.mark.parametrize("name", ["quad-hover", "quad-track"])
def test_deterministic_quadrotor_evaluations_run_one_episode_by_default(name):
    config = {"task": name, "gym": False, "task_config": None}
    assert evaluation.episode_budget(config, None).default == 1


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("quad-track", ["task.eval_kind=random"]),
        ("quad-hover", ["task.eval_randomize=true", "task.randomization.wind_gust_std_n=0.02"]),
    ],
)
def test_randomized_quadrotor_evaluations_need_many_episodes(name, overrides):
    config = evaluation.with_task_overrides(
        {"task": name, "gym": False, "task_config": None}, overrides, None
    )
    budget = evaluation.episode_budget(config, None)
    assert budget.default == budget.needed == 64


@pytest.mark.parametrize(
    ("policy", "overrides"),
    [
        ("quad-track", ["task.eval_kind=random"]),
        (
            "quad-hover",
            [
                "task.eval_randomize=true",
                "task.randomization.mass_scale=[0.8, 1.2]",
                "task.randomization.wind_gust_std_n=0.02",
            ],
        ),
        ("quad-swarm", ["task.num_drones=3", "task.goal_assignment=random"]),
    ],
)
def test_eval_seed_changes_the_quadrotor_draws_and_is_recorded(policy, overrides):
    """`simreal eval --seed S`: another seed, other references, airframes, wind or rooms
    (other numbers); the same seed, the same numbers; the JSON says which seed."""
    path = REPO / f"results/{policy}/policy.onnx"
    overrides = [*overrides, "task.episode_s=0.5"]

    def run(seed: int) -> dict:
        return evaluation.evaluate_policy(path, episodes=4, seed=seed, overrides=overrides)

    first, again, other = run(1), run(1), run(2)
    assert (first["seed"], other["seed"]) == (1, 2)
    assert first["return_mean"] == again["return_mean"]
    assert first["return_mean"] != other["return_mean"]
