"""The realistic G1 in its tasks: self-collision on, evaluation friction, the evaluation
conditions in every G1 eval JSON, and the self-penetration check of a committed policy."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from simreal import evaluation
from simreal.tasks import make_env
from simreal.tasks.g1_force import G1ForceConfig
from simreal.tasks.g1_pull import G1PullConfig

REPO = Path(__file__).resolve().parent.parent
PULL = REPO / "results/g1-pull/policy.onnx"


@pytest.mark.parametrize("mu", [0.0, -0.3, 2.5, float("nan")])
def test_eval_friction_outside_0_2_is_refused_naming_it(mu):
    with pytest.raises(ValueError, match="eval_friction"):
        G1ForceConfig(eval_friction=mu).validate()


def test_evaluation_sets_the_friction_and_states_its_conditions():
    cfg = dataclasses.replace(G1PullConfig(), evaluation=True, eval_friction=0.5)
    env = make_env("g1-pull", cfg, 2)
    friction = env.engine.model_field("geom_friction")[:, env.friction_geom_ids, 0]
    np.testing.assert_allclose(friction, 0.5)
    conditions = env.evaluation_conditions()
    assert conditions == {
        "engine": "mjbatch",
        "physics_dt": 0.005,
        "seed": 0,
        "integrator": "implicitfast",
        "foot_friction": 0.5,
        "self_collision": True,
        "terrain": "flat",
    }
    ideal = make_env("g1-force", dataclasses.replace(G1ForceConfig(), self_collision=False), 1)
    assert ideal.evaluation_conditions()["self_collision"] is False
    assert env.engine.model.nexclude > 0 and ideal.engine.model.nexclude == 0


@pytest.mark.slow
def test_committed_pull_policy_never_sinks_into_itself_and_the_json_says_so():
    out = evaluation.evaluate_policy(PULL, episodes=8, overrides=["task.eval_friction=0.7"])
    assert out["self_collision"] is True and out["foot_friction"] == 0.7
    assert 0.0 < out["self_penetration_m"] < 0.01


@pytest.mark.slow
def test_without_self_collision_the_idealized_numbers_come_back():
    """The committed policy's 8-episode numbers on the body it was trained on (limbs
    passing through the body), as measured before self-collision was switched on."""
    out = evaluation.evaluate_policy(PULL, episodes=8, overrides=["task.self_collision=false"])
    assert out["self_collision"] is False
    assert out["peak_pull_force_backward_n"] == pytest.approx(136.2989845052175)
    assert out["peak_pull_force_forward_n"] == pytest.approx(145.2888398426865)


def test_sustained_push_ladder_alternates_direction_and_climbs_per_direction():
    from simreal.tasks.g1_force.forces import sustained_directions, sustained_magnitudes

    np.testing.assert_array_equal(sustained_directions(4), [-1, 1, -1, 1])
    np.testing.assert_allclose(sustained_magnitudes(4, 100.0), [50, 50, 100, 100])
    np.testing.assert_allclose(sustained_magnitudes(5, 90.0), [30, 45, 60, 90, 90])


def test_sustained_push_metrics_per_direction():
    from simreal.tasks.g1_force.config import EvalPushConfig

    push = EvalPushConfig(mode="sustained", max_n=100.0)
    cfg = dataclasses.replace(G1ForceConfig(), evaluation=True, eval_push=push)
    env = make_env("g1-force", cfg, 4)
    env.reset()
    t = np.full(4, push.onset_s + push.ramp_s + 1.0)
    forces = env.schedule.forces(t, resample=False)[:, 0]
    np.testing.assert_allclose(forces[:, 0], [-50, 50, -100, 100])
    np.testing.assert_allclose(forces[:, 1:], 0.0)
    half_ramp = env.schedule.forces(np.full(4, push.onset_s + 1.0), resample=False)[:, 0]
    np.testing.assert_allclose(half_ramp[:, 0], [-25, 25, -50, 50])
    env.fell[:] = [False, False, True, False]
    env.episode_step[:] = env.max_episode_steps
    out = env.episode_metrics(np.arange(4))
    np.testing.assert_allclose(out["max_sustained_push_backward_n"], [50, 0, 0, 0])
    np.testing.assert_allclose(out["max_sustained_push_forward_n"], [0, 50, 0, 100])
    assert env.metric_reductions["max_sustained_push_forward_n"] == "max"


def test_a_sustained_push_longer_than_the_episode_is_refused():
    from simreal.tasks.g1_force.config import EvalPushConfig

    cfg = G1ForceConfig(eval_push=EvalPushConfig(mode="sustained", hold_s=10.0))
    with pytest.raises(ValueError, match="sustained push"):
        cfg.validate()
    with pytest.raises(ValueError, match=r"eval_push\.mode"):
        G1ForceConfig(eval_push=EvalPushConfig(mode="shove")).validate()
