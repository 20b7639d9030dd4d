"""`g1-force`: action groups, observation layout, force schedule and curriculum, falls
under forces beyond the robot, the evaluation push, deployment metadata; the balance
arithmetic (FAT2, centre of pressure) is in test_g1_force_balance.py."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pytest
from _g1_falls import assert_every_robot_falls

from simreal.config import apply_overrides
from simreal.robots.g1 import ACTUATORS, DEFAULT_JOINT_POS, JOINT_NAMES
from simreal.tasks import make_env
from simreal.tasks.g1 import ACTION_GROUPS, POLICY_OBSERVATION, PRIVILEGED_OBSERVATION
from simreal.tasks.g1_force import ForceConfig, ForceSchedule, G1ForceConfig, G1ForceEnv
from simreal.tasks.g1_force.config import EvalPushConfig


def make(num_envs: int = 4, **fields) -> G1ForceEnv:
    return make_env("g1-force", G1ForceConfig(**fields), num_envs=num_envs, seed=0)


def test_action_groups_cover_the_sdk_order_legs_waist_arms():
    assert [len(idx) for idx in ACTION_GROUPS.values()] == [12, 3, 14]
    assert sorted(i for idx in ACTION_GROUPS.values() for i in idx) == list(range(29))
    names = {g: [JOINT_NAMES[i] for i in idx] for g, idx in ACTION_GROUPS.items()}
    assert all(("hip" in n or "knee" in n or "ankle" in n) for n in names["lower"])
    assert names["waist"] == ["waist_yaw_joint", "waist_roll_joint", "waist_pitch_joint"]
    assert all(("shoulder" in n or "elbow" in n or "wrist" in n) for n in names["upper"])


def test_observation_layouts_add_up():
    env = make(2)
    obs, critic = env.reset()
    assert sum(size for _, size in POLICY_OBSERVATION) == env.num_obs == obs.shape[1] == 93
    assert env.num_critic_obs == env.num_obs + sum(s for _, s in PRIVILEGED_OBSERVATION)
    assert critic.shape == (2, env.num_critic_obs)
    assert "external_force" not in dict(POLICY_OBSERVATION)


def test_zero_action_keeps_states_finite():
    env = make(4)
    env.reset()
    for _ in range(200):
        step = env.step(np.zeros((4, 29)))
        assert np.isfinite(step.obs).all() and np.isfinite(step.critic_obs).all()
        assert np.isfinite(step.reward).all()
    assert np.isfinite(env.engine.qpos).all()
    assert env.unstable_resets == 0


def test_a_force_beyond_the_robot_ends_the_episode_as_a_fall():
    push = dataclasses.replace(G1ForceConfig().eval_push, max_n=3000.0, onset_s=0.0)
    env = make(2, evaluation=True, eval_push=push)  # 1500 N and 3000 N at once
    env.reset()
    assert_every_robot_falls(env, 150)


def test_force_schedule_respects_the_shared_curriculum_cap_and_falls_below_its_start():
    cfg = ForceConfig(cap_start_n=50.0, cap_max_n=300.0, cap_step_n=50.0, curriculum="shared")
    schedule = ForceSchedule(cfg, 64, np.random.default_rng(0))
    schedule.reset(np.arange(64))
    caps = np.array([50.0, 30.0, 30.0])
    peak = np.zeros((64, 3))
    for t in np.arange(0.0, 30.0, 0.02):
        forces = schedule.forces(np.full(64, t))
        peak = np.maximum(peak, np.linalg.norm(forces, axis=-1))
    assert (peak <= caps + 1e-9).all() and (peak.max(axis=0) > 0.8 * caps).all()
    sims = np.arange(64)
    schedule.record_outcomes(sims, np.zeros(64, dtype=bool), window=64)  # no falls: harder
    assert schedule.cap_n == 100.0
    schedule.record_outcomes(sims, np.ones(64, dtype=bool), window=64)  # all fall: easier
    assert schedule.cap_n == 50.0
    schedule.record_outcomes(sims, np.ones(64, dtype=bool), window=64)
    assert schedule.cap_n == 0.0  # below the start: the floor is cap_min_n
    for _ in range(10):
        schedule.record_outcomes(sims, np.zeros(64, dtype=bool), window=64)
    assert schedule.cap_n == 300.0


def test_per_simulation_force_caps_move_with_each_simulations_own_falls():
    cfg = ForceConfig(cap_start_n=50.0, cap_max_n=300.0, cap_step_n=25.0)
    assert cfg.curriculum == "per_sim"
    schedule = ForceSchedule(cfg, 4, np.random.default_rng(0))
    schedule.record_outcomes(np.array([0, 1, 2]), np.array([False, True, True]), window=4)
    schedule.record_outcomes(np.array([2]), np.array([True]), window=4)
    np.testing.assert_allclose(schedule.sim_caps_n(), [75.0, 25.0, 0.0, 50.0])
    assert schedule.cap_n == 37.5
    np.testing.assert_allclose(schedule.body_caps_n[0], [75.0, 45.0, 45.0])
    schedule.reset(np.arange(4))
    for t in np.arange(0.0, 30.0, 0.05):
        forces = np.linalg.norm(schedule.forces(np.full(4, t)), axis=-1)
        assert (forces[:, 0] <= schedule.sim_caps_n() + 1e-9).all()
        assert (forces[2] == 0.0).all()  # a simulation back at 0 N trains without forces


def test_a_magnitude_floor_keeps_every_active_event_near_its_cap():
    cfg = ForceConfig(cap_start_n=100.0, magnitude_min_fraction=0.6, active_prob=(1.0, 0.5, 0.5))
    schedule = ForceSchedule(cfg, 256, np.random.default_rng(0))
    schedule.reset(np.arange(256))
    torso = schedule.magnitude_n[:, 0]
    assert torso.min() >= 60.0 and torso.max() <= 100.0
    hands = schedule.magnitude_n[:, 1:]
    active = hands[hands > 0]
    assert active.min() >= 0.6 * 60.0 and 0.3 < active.size / hands.size < 0.7
    with pytest.raises(ValueError, match="magnitude_min_fraction"):
        ForceConfig(magnitude_min_fraction=1.5).validate()


def test_sagittal_forces_come_from_ahead_or_behind_half_each_and_the_default_is_every_azimuth():
    def directions(**fields) -> np.ndarray:
        cfg = ForceConfig(active_prob=(1.0, 1.0, 1.0), max_elevation_rad=0.0, **fields)
        schedule = ForceSchedule(cfg, 2048, np.random.default_rng(3))
        schedule.reset(np.arange(2048))
        return np.arctan2(schedule.direction[..., 1], schedule.direction[..., 0]).ravel()

    every = directions()
    assert np.abs(np.abs(every) - np.pi / 2).min() < 0.01  # sideways pushes are drawn
    narrow = directions(sagittal_halfwidth_rad=0.3)
    off_axis = np.minimum(np.abs(narrow), np.pi - np.abs(narrow))
    assert off_axis.max() <= 0.3 + 1e-9 and off_axis.max() > 0.29
    behind = np.abs(narrow) > np.pi / 2
    assert 0.45 < behind.mean() < 0.55
    assert np.abs(np.sin(every)).mean() > 3 * np.abs(np.sin(narrow)).mean()
    with pytest.raises(ValueError, match="sagittal_halfwidth_rad"):
        ForceConfig(sagittal_halfwidth_rad=2.0).validate()


def test_a_resumed_per_sim_force_curriculum_gets_every_simulations_cap_back():
    env = make(3)
    env.schedule.curriculum.levels[:] = [0.0, 75.0, 150.0]
    state = env.curriculum_checkpoint()
    assert state["force_cap_n"] == 75.0
    again = make(3)
    again.restore_curriculum(state)
    np.testing.assert_allclose(again.schedule.sim_caps_n(), [0.0, 75.0, 150.0])


def test_evaluation_pushes_differ_per_simulation_and_report_the_largest_survived():
    env = make(4, evaluation=True)
    env.reset()
    np.testing.assert_allclose(env.schedule.magnitude_n[:, 0], [100.0, 200.0, 300.0, 400.0])
    np.testing.assert_array_equal(env.schedule.magnitude_n[:, 1:], 0.0)
    env.episode_step[:] = 100
    t = env.episode_step * env.control_dt  # 2 s: the push starts
    forces = env.schedule.forces(t, resample=False)
    np.testing.assert_allclose(forces[:, 0, 0], [-100.0, -200.0, -300.0, -400.0])
    # Two falls, then the other two reach the time limit together.
    env.fell[:] = [False, True, False, True]
    env.episode_step[:] = [env.max_episode_steps, 50, env.max_episode_steps, 80]
    fallen = env.episode_metrics(np.array([1, 3]))
    survivors = env.episode_metrics(np.array([0, 2]))
    resisted = np.concatenate([fallen["max_push_resisted_n"], survivors["max_push_resisted_n"]])
    assert resisted.mean() == pytest.approx(300.0)
    np.testing.assert_array_equal(fallen["fall_rate"], 1.0)
    np.testing.assert_array_equal(survivors["push_n"], [100.0, 300.0])


@pytest.mark.parametrize("frame", ["heading", "world"])
def test_sustained_push_turns_with_the_robot_in_the_heading_frame(frame):
    push = EvalPushConfig(mode="sustained", max_n=100.0, frame=frame)
    env = make(2, evaluation=True, eval_push=push)
    env.reset()
    env.engine.qpos[:, 3:7] = [math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]
    np.testing.assert_allclose(env.yaw(), math.pi / 2)  # facing the world's +y
    env.apply_external_forces(np.full(2, push.onset_s + push.ramp_s + 1.0))  # holding
    torso = env.external_force[:, 0]
    if frame == "heading":  # backward (sim 0) is the robot's -x: the world's -y
        np.testing.assert_allclose(torso, [[0.0, -100.0, 0.0], [0.0, 100.0, 0.0]], atol=1e-9)
    else:
        np.testing.assert_allclose(torso, [[-100.0, 0.0, 0.0], [100.0, 0.0, 0.0]], atol=1e-9)
    assert env.evaluation_conditions()["push_frame"] == frame


def test_training_forces_in_the_heading_frame_are_the_schedules_turned_by_the_yaw():
    env = make(3, forces=ForceConfig(frame="heading"))
    env.reset()
    yaw = np.array([0.0, math.pi / 2, -2.0])
    env.engine.qpos[:, 3:7] = np.stack([np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)], 1)
    schedule = env.schedule  # every body holding a force drawn in the robot's frame
    schedule.onset_s[:], schedule.ramp_s[:], schedule.hold_s[:] = 0.0, 0.0, 10.0
    schedule.magnitude_n[:] = 40.0
    t = np.full(3, 1.0)
    drawn = schedule.forces(t, resample=False)
    assert np.all(np.linalg.norm(drawn, axis=-1) == pytest.approx(40.0))
    env.apply_external_forces(t)
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    x, y = drawn[..., 0], drawn[..., 1]
    turned = np.stack([c * x - s * y, s * x + c * y, drawn[..., 2]], axis=-1)
    np.testing.assert_allclose(env.external_force, turned, atol=1e-9)
    assert not np.allclose(env.external_force[1:], drawn[1:])


def test_a_sustained_push_is_held_in_place_only_while_the_pelvis_stays_near_its_start():
    push = EvalPushConfig(mode="sustained", max_n=100.0, max_hold_drift_m=0.5)
    env = make(2, evaluation=True, eval_push=push)
    env.reset()
    hold = push.onset_s + push.ramp_s
    env.apply_external_forces(np.full(2, hold - 0.1))  # ramping: not tracked yet
    env.engine.qpos[:, 0] += 5.0
    env.apply_external_forces(np.full(2, hold + 0.1))  # the hold begins here
    env.engine.qpos[0, 0] += 0.3
    env.engine.qpos[1, 0] += 0.8
    env.apply_external_forces(np.full(2, hold + 1.0))
    env.engine.qpos[1, 0] -= 0.8  # back where it began: the largest distance counts
    env.apply_external_forces(np.full(2, hold + 2.0))
    env.engine.qpos[:, 0] += 9.0
    env.apply_external_forces(np.full(2, hold + push.hold_s + 0.1))  # released: not tracked
    env.fell[:] = False
    env.episode_step[:] = env.max_episode_steps
    out = env.episode_metrics(np.array([0, 1]))
    np.testing.assert_allclose(out["hold_drift_m"], [0.3, 0.8], atol=1e-9)
    np.testing.assert_array_equal(out["max_sustained_push_backward_n"], [100.0, 0.0])
    np.testing.assert_array_equal(out["max_sustained_push_forward_n"], [0.0, 100.0])
    np.testing.assert_array_equal(out["max_sustained_push_backward_in_place_n"], [100.0, 0.0])
    np.testing.assert_array_equal(out["max_sustained_push_forward_in_place_n"], [0.0, 0.0])
    env.reset()
    assert np.all(env.hold_drift_m == 0.0) and np.all(np.isnan(env.hold_start_xy))


def _torso_event(env: G1ForceEnv, onset_s: float, hold_s: float = 2.0) -> None:
    s = env.schedule
    s.onset_s[:] = np.inf
    s.magnitude_n[:] = 0.0
    s.onset_s[:, 0], s.ramp_s[:, 0], s.hold_s[:, 0] = onset_s, 0.0, hold_s
    s.magnitude_n[:, 0] = 40.0
    s.direction[:, 0] = [1.0, 0.0, 0.0]


def test_training_counts_an_episode_that_walked_away_from_a_torso_hold_as_a_failure():
    forces = ForceConfig(fail_on_hold_drift_m=0.5, hold_drift_ends_episode=True)
    env = make(2, forces=forces)
    env.reset()
    _torso_event(env, onset_s=1.0)
    env.apply_external_forces(np.full(2, 1.5))  # hold 1 begins
    env.engine.qpos[:, 0] += [0.3, 0.1]
    env.apply_external_forces(np.full(2, 2.0))
    env.apply_external_forces(np.full(2, 3.2))  # released (a new event is drawn)
    env.engine.qpos[:, 0] += 5.0  # between holds the robot may walk
    _torso_event(env, onset_s=4.0)
    env.apply_external_forces(np.full(2, 4.5))  # hold 2 measures from here
    env.engine.qpos[:, 0] += [0.4, 0.6]
    env.apply_external_forces(np.full(2, 5.0))
    np.testing.assert_allclose(env.hold_drift_m, [0.4, 0.6], atol=1e-9)
    np.testing.assert_array_equal(env.drifted_from_hold(), [False, True])
    env.check_terminations()  # the termination terms on this state
    np.testing.assert_array_equal(env.terminations["hold_drift"], [False, True])
    env.fell[:] = False
    np.testing.assert_array_equal(env.terminated(), [False, True])
    env.episode_step[:] = [env.max_episode_steps, 100]  # sim 1 ended by its drift
    caps = env.schedule.sim_caps_n().copy()
    out = env.episode_metrics(np.array([0, 1]))
    np.testing.assert_array_equal(out["hold_drift_rate"], [0.0, 1.0])
    np.testing.assert_array_equal(out["fall_rate"], [0.0, 0.0])
    moved = env.schedule.sim_caps_n() - caps
    assert moved[0] > 0 > moved[1]  # survived in place: up; walked away: down
    off = make(1)
    off.reset()
    _torso_event(off, onset_s=0.5)
    off.apply_external_forces(np.full(1, 1.0))
    off.engine.qpos[:, 0] += 3.0
    off.apply_external_forces(np.full(1, 1.5))
    assert not off.drifted_from_hold().any() and "hold_drift_rate" in off.episode_metrics(
        np.array([0])
    )
    with pytest.raises(ValueError, match=r"hold_drift_ends_episode needs .*fail_on_hold_drift_m"):
        G1ForceConfig(forces=ForceConfig(hold_drift_ends_episode=True)).validate()
    with pytest.raises(ValueError, match=r"fail_on_hold_drift_m .*-0\.2"):
        G1ForceConfig(forces=ForceConfig(fail_on_hold_drift_m=-0.2)).validate()


def test_standing_ground_terms_charge_walking_and_turning_not_standing():
    from simreal.tasks.g1_force import rewards
    from simreal.tasks.rotations import quat_from_roll_pitch_yaw

    assert G1ForceConfig().reward_weights["hold_ground"] == 0.0  # named, off by default
    env = make_env(
        "g1-force",
        apply_overrides(
            G1ForceConfig(),
            ["reward_weights.hold_ground=1.0", "reward_weights.base_drift=-0.5"],
        ),
        num_envs=3,
    )
    env.reset()
    env.engine.qvel[:, :6] = 0.0
    env.engine.qvel[1, 0:3] = [0.6, -0.8, 0.3]  # walking at 1 m/s (and bobbing)
    # turning at 0.5 rad/s about the vertical while pitched 90 deg: the pelvis' own z
    # axis then lies horizontal, so the body-frame rate must be turned into the world's
    env.engine.qpos[2, 3:7] = quat_from_roll_pitch_yaw(
        np.array([0.0]), np.array([np.pi / 2]), np.array([0.0])
    )[0]
    env.engine.qvel[2, 3:6] = [-0.5, 0.0, 0.0]
    np.testing.assert_allclose(rewards.base_drift_term(env), [0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(rewards.yaw_rate_term(env), [0.0, 0.0, 0.25], atol=1e-12)
    sigma_v, sigma_w = env.cfg.hold_ground_sigma_m_s, env.cfg.hold_heading_sigma_rad_s
    np.testing.assert_allclose(
        rewards.hold_ground_term(env), [1.0, np.exp(-1.0 / sigma_v**2), 1.0], rtol=1e-12
    )
    np.testing.assert_allclose(
        rewards.hold_heading_term(env), [1.0, 1.0, np.exp(-0.25 / sigma_w**2)], rtol=1e-12
    )
    assert env.reward_weights()["hold_ground"] == pytest.approx(env.cfg.control_dt)
    with pytest.raises(ValueError, match=r"hold_ground_sigma_m_s .* -0\.1"):
        G1ForceConfig(hold_ground_sigma_m_s=-0.1).validate()


def test_an_unknown_push_frame_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"eval_push\.frame .*'robot'"):
        G1ForceConfig(eval_push=EvalPushConfig(frame="robot")).validate()
    with pytest.raises(ValueError, match=r"forces\.frame .*'body'"):
        G1ForceConfig(forces=ForceConfig(frame="body")).validate()
    with pytest.raises(ValueError, match=r"eval_push\.max_hold_drift_m .*-1"):
        G1ForceConfig(eval_push=EvalPushConfig(max_hold_drift_m=-1.0)).validate()


def test_deployment_metadata_comes_from_the_robot_tables():
    meta = make(1).deployment_metadata()
    acts = [ACTUATORS[n] for n in JOINT_NAMES]
    assert meta["robot"] == "g1"
    assert meta["joint_names"] == list(JOINT_NAMES)
    assert meta["default_joint_pos"] == list(DEFAULT_JOINT_POS)
    assert meta["action_scale"] == [a.action_scale for a in acts]
    assert meta["kp"] == [a.kp for a in acts] and meta["kd"] == [a.kd for a in acts]
    assert meta["action_groups"] == {k: list(v) for k, v in ACTION_GROUPS.items()}
    assert meta["control_dt"] == pytest.approx(0.02) and meta["decimation"] == 4


def test_randomization_writes_per_simulation_model_fields():
    env = make(3)
    env.reset()
    kp = env.engine.model_field("actuator_gainprm")[:, :, 0]
    np.testing.assert_allclose(kp, env.kp * env.kp_scale)
    assert np.ptp(env.engine.model_field("geom_friction")[:, env.friction_geom_ids[0], 0]) > 0
    nominal = make(3, evaluation=True)
    nominal.reset()
    np.testing.assert_allclose(
        nominal.engine.model_field("actuator_gainprm")[:, :, 0], env.kp[None].repeat(3, 0)
    )
    np.testing.assert_array_equal(nominal.joint_offset, 0.0)


def test_command_is_default_plus_scaled_action_and_offsets_shift_the_pd_target():
    env = make(2)
    env.reset()
    action = np.full((2, 29), 0.5)
    command = env.command_from_action(action)
    expected = np.tile(env.default_joint_pos + 0.5 * env.action_scale, (2, 1))
    np.testing.assert_allclose(command, expected)
    env.apply_action(action)
    np.testing.assert_allclose(env.ctrl_target, command - env.joint_offset)


def test_actions_beyond_one_reach_the_pd_targets_up_to_the_clip_and_joint_limits():
    """The G1 may command past |a| = 1 (a hip step, an ankle leaning with full torque);
    training clips where the deploy node clips: at action_clip, then at the joint limits."""
    env = make(1, randomize=False)
    env.reset()
    action = np.zeros((1, 29))
    knee = JOINT_NAMES.index("left_knee_joint")
    action[0, knee] = 3.0
    env.step(action)
    scale = ACTUATORS["left_knee_joint"].action_scale
    assert env.ctrl_target[0, knee] == pytest.approx(DEFAULT_JOINT_POS[knee] + 3.0 * scale)
    assert env.deployment_metadata()["action_clip"] == env.action_clip > 3.0
    action[0, knee] = 100.0  # clipped at action_clip, then at the knee's upper limit
    env.step(action)
    target = min(DEFAULT_JOINT_POS[knee] + env.action_clip * scale, env.joint_upper[knee])
    assert env.ctrl_target[0, knee] == pytest.approx(target)


def test_integrator_and_timestep_are_task_options_for_sim_to_sim_checks():
    env = make(2, integrator="RK4", physics_dt=0.004, decimation=5, evaluation=True)
    assert env.engine.model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    assert env.engine.model.opt.timestep == pytest.approx(0.004)
    assert env.control_dt == pytest.approx(0.02)
    env.reset()
    for _ in range(10):
        step = env.step(np.zeros((2, 29)))
    assert np.isfinite(step.obs).all() and not step.terminated.any()
    with pytest.raises(ValueError, match="integrator 'Verlet'"):
        G1ForceConfig(integrator="Verlet").validate()


def test_a_policy_that_observes_the_true_force_is_refused_by_the_deploy_node(tmp_path):
    """`actor_observes_force` is a diagnostic: no G1 measures the force, and the node says
    so by name instead of feeding the policy something else."""
    from _g1_policy import ACTION_GROUPS, g1_metadata

    from simreal.deploy.g1.node import load_g1_policy
    from simreal.deploy.g1.observation import G1Observation
    from simreal.deploy.runtime import PolicyMetadataError
    from simreal.policies.config import ModelConfig
    from simreal.policies.export import export_onnx
    from simreal.policies.models import ActorCritic

    env = make_env("g1-force", G1ForceConfig(actor_observes_force=True), num_envs=1)
    groups = {name: tuple(idx) for name, idx in ACTION_GROUPS.items()}
    small = ModelConfig(actor_hidden=(16,), critic_hidden=(16,))
    model = ActorCritic(env.num_obs, env.num_critic_obs, groups, small)
    names = [list(term) for term in env.observation_layout]
    path = export_onnx(model, tmp_path / "oracle.onnx", g1_metadata(observation_names=names))
    with pytest.raises(PolicyMetadataError, match=r"torso_force_oracle.*differ"):
        G1Observation(load_g1_policy(path))
