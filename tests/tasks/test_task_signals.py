"""Each task's key quantities (tasks/signals.py): read from every task, logged by
`simreal eval --log`, plotted by `simreal replay --plot`."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _repo import REPO

from simreal import evaluation
from simreal.deploy.logs import read_rollout
from simreal.deploy.replay import plot_rollout, signal_units
from simreal.tasks import TASKS, make_env
from simreal.tasks.signals import SIGNALS

SMALL = {"dex-track": {"heldout_references": 1}, "lane-keep": {"eval_roads": 1}}


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_signals_read_one_finite_value_per_simulation(name):
    assert name in TASKS
    cfg = dataclasses.replace(TASKS[name].config_cls(), evaluation=True, **SMALL.get(name, {}))
    env = make_env(name, cfg, 2)
    obs, _ = env.reset()
    env.step(env.zero_action_policy()(obs))
    for signal in SIGNALS[name]:
        values = np.asarray(signal.read(env))
        assert values.shape == (2,), signal.name
        assert np.isfinite(values).all(), signal.name


def test_g1_pull_log_carries_handle_force_and_cart_travel_and_the_plot_draws_them(tmp_path):
    log = tmp_path / "pull"
    evaluation.evaluate_policy(
        REPO / "results/g1-pull/policy.onnx",
        episodes=2,
        log=log,
        overrides=["task.eval_episode_s=3.2"],
    )
    rollout = read_rollout(log)
    names = rollout.meta.signal_names
    assert {"handle_force_n", "cart_travel_m"} <= set(names)
    values = rollout.series["task_signals"].values
    # one row per control step of the logged episode (up to 160 in 3.2 s; fewer if it fell)
    steps = len(rollout.series["joint_position"].values)
    assert values.shape == (steps, len(names)) and 50 <= steps <= 160
    force = values[:, names.index("handle_force_n")]
    travel = values[:, names.index("cart_travel_m")]
    assert force.max() > 50.0, "the robot never pulled on the rope"
    assert abs(travel[-1]) > 0.01, "the cart never moved"
    assert signal_units(names) == ["n", "m", "mps"]
    plot = plot_rollout(rollout, tmp_path / "pull.png")
    assert plot.stat().st_size > 10_000
