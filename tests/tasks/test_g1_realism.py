"""The realistic G1 in its tasks: self-collision on, evaluation friction, the evaluation
conditions in every G1 eval JSON, and the self-penetration check of a committed policy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _repo import REPO

from simreal import evaluation
from simreal.robots.g1 import JOINT_NAMES
from simreal.robots.g1.actuators import (
    JOINT_FRICTION_COULOMB_N_M,
    JOINT_FRICTION_VISCOUS_N_M_S,
    VELOCITY_LIMITS,
    torque_speed_range,
)
from simreal.tasks import make_env
from simreal.tasks.g1_force import G1ForceConfig
from simreal.tasks.g1_pull import G1PullConfig

PULL = REPO / "results/experiments/g1-pull-idealized/policy.onnx"
IDEALIZED = [
    "task.self_collision=false",
    "task.motor_envelope=false",
    "task.randomization.joint_frictionloss_n_m=[0,0]",
    "task.randomization.joint_damping_n_m_s=[0,0]",
]
"""The body earlier results were measured on: limbs through the body, a constant torque
limit at any speed, frictionless joints."""


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
        "motor_envelope": True,
        "actuation": "substeps",
        "joint_frictionloss_n_m": {"min": 0.3, "mean": 0.3, "max": 0.3},
        "joint_damping_n_m_s": {"min": 0.11, "mean": 0.11, "max": 0.11},
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
    out = evaluation.evaluate_policy(PULL, episodes=8, overrides=IDEALIZED)
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


# -- motors: torque-speed envelope, velocity limits, joint friction ----------------------


def test_torque_speed_envelope_falls_with_speed_along_the_motion_and_keeps_braking():
    limit, vmax = np.array([10.0]), np.array([20.0])
    for v, lower, upper in [
        (0.0, -10.0, 10.0),
        (10.0, -10.0, 5.0),  # half speed: half the driving torque, full braking
        (-10.0, -5.0, 10.0),
        (20.0, -10.0, 0.0),  # at the velocity limit the motor cannot drive on
        (30.0, -10.0, -5.0),  # beyond it, only braking
        (100.0, -10.0, -10.0),
    ]:
        lo, hi = torque_speed_range(np.array([v]), limit, vmax)
        assert (lo[0], hi[0]) == pytest.approx((lower, upper)), v


def spun_knee(envelope: bool) -> float:
    """The actuator force MuJoCo applies in one physics step to a G1's left knee spinning
    at 1.2 x its velocity limit while its PD target lies far ahead (the PD law alone asks
    for about +70 N m)."""
    cfg = G1ForceConfig(evaluation=True, motor_envelope=envelope, decimation=1)
    env = make_env("g1-force", cfg, 1)
    env.reset()
    j = JOINT_NAMES.index("left_knee_joint")
    env.engine.qvel[0, env.joint_dof_ids[j]] = 1.2 * VELOCITY_LIMITS[j]
    env.ctrl_target[0, j] = env.prev_ctrl_target[0, j] = env.joint_upper[j]
    force = env.engine.batch.bind("actuator_force")
    env.simulate()
    return float(force[0, j])


def test_a_motor_past_its_velocity_limit_brakes_instead_of_driving_on():
    assert spun_knee(envelope=True) == pytest.approx(-0.2 * 139.0, rel=0.05)
    assert spun_knee(envelope=False) > 50.0


def test_joint_friction_is_drawn_per_joint_in_training_and_mid_range_in_evaluation():
    env = make_env("g1-force", G1ForceConfig(), 64)
    env.reset()
    dofs = env.joint_dof_ids
    coulomb = env.engine.model_field("dof_frictionloss")[:, dofs]
    viscous = env.engine.model_field("dof_damping")[:, dofs]
    assert coulomb.min() >= 0.1 and coulomb.max() <= 0.5 and coulomb.std() > 0.05
    assert viscous.min() >= 0.02 and viscous.max() <= 0.2 and viscous.std() > 0.02
    evaluation_env = make_env("g1-force", dataclasses.replace(G1ForceConfig(), evaluation=True), 2)
    np.testing.assert_allclose(evaluation_env.engine.model_field("dof_frictionloss")[:, dofs], 0.3)


@pytest.mark.parametrize("field", ["joint_frictionloss_n_m", "joint_damping_n_m_s"])
def test_a_negative_joint_friction_range_is_refused_naming_it(field):
    cfg = G1ForceConfig()
    setattr(cfg.randomization, field, (-0.1, 0.2))
    with pytest.raises(ValueError, match=field):
        cfg.validate()


def test_the_nominal_joint_friction_is_the_middle_of_the_randomized_range():
    r = G1ForceConfig().randomization
    assert np.mean(r.joint_frictionloss_n_m) == pytest.approx(JOINT_FRICTION_COULOMB_N_M)
    assert np.mean(r.joint_damping_n_m_s) == pytest.approx(JOINT_FRICTION_VISCOUS_N_M_S)
