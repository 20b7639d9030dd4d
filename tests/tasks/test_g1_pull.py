"""`g1-pull`: the scene builds and steps, the rope-tension sensor reads the load's force
(static spring, rolling cart), the pulling-force metric on synthetic traces, the
evaluation protocol and reductions; its training (curricula, warm starts) is in
test_g1_pull_training.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _g1_falls import assert_every_robot_falls

from simreal.policies.evaluate import evaluate
from simreal.tasks import get_task, make_env
from simreal.tasks.g1 import POLICY_OBSERVATION, PRIVILEGED_OBSERVATION, policy_observation
from simreal.tasks.g1.gait import (
    LEG_REFERENCE_JOINTS,
    clock_observation,
    gait_phase,
    leg_reference,
    stance,
    stride_reference,
    stride_sweep,
    swing_lift,
)
from simreal.tasks.g1.walking_terms import (
    GAIT_OBSERVATION,
    feet_air_time,
    track_lin_vel,
    track_yaw_rate,
)
from simreal.tasks.g1_force import G1ForceEnv
from simreal.tasks.g1_pull import (
    COMMAND_OBSERVATION,
    EvalPullConfig,
    G1PullConfig,
    G1PullEnv,
    held_force,
)
from simreal.tasks.g1_pull.observations import walking_command
from simreal.tasks.g1_pull.rewards import heading, tow, tow_steady

ROBOT_Q, ROBOT_V = 36, 35


def make(num_envs: int = 4, **fields) -> G1PullEnv:
    return make_env("g1-pull", G1PullConfig(**fields), num_envs=num_envs, seed=0)


def hold_robot(env: G1PullEnv, steps: int, speed: np.ndarray | float = 0.0) -> None:
    """Physics steps with the robot held kinematically in its pose, its pelvis carried
    along x at `speed` (m/s, per simulation): only the bar, rope and cart move freely."""
    q = env.engine.qpos[:, :ROBOT_Q].copy()
    dx = np.broadcast_to(np.asarray(speed, dtype=float), (env.num_sims,)) * env.engine.physics_dt
    for _ in range(steps):
        q[:, 0] += dx
        env.engine.qpos[:, :ROBOT_Q] = q
        env.engine.qvel[:, :ROBOT_V] = 0.0
        env.engine.qvel[:, 0] = dx / env.engine.physics_dt
        env.engine.step(1)


def test_observation_layouts_extend_g1_force_by_appended_terms():
    env = make(2, evaluation=True)
    obs, critic = env.reset()
    assert env.observation_layout[: len(POLICY_OBSERVATION)] == POLICY_OBSERVATION
    assert env.observation_layout[len(POLICY_OBSERVATION) :] == (
        COMMAND_OBSERVATION + GAIT_OBSERVATION
    )
    force_critic = G1ForceEnv.critic_observation_layout
    assert env.critic_observation_layout[: len(force_critic)] == force_critic
    assert obs.shape == (2, 93 + 6) and critic.shape == (2, env.num_critic_obs)
    np.testing.assert_array_equal(
        obs[:, :93], policy_observation(env.sensors, env.default_joint_pos, env.action)
    )
    # standing start: no velocity command, the gait clock reads (0, 0)
    np.testing.assert_array_equal(obs[:, 93:], [[0, 0, 0, -1, 0, 0], [0, 0, 0, 1, 0, 0]])
    assert env.num_critic_obs == 93 + sum(s for _, s in PRIVILEGED_OBSERVATION) + 4 + 5 + 2


def test_gait_clock_alternates_the_legs_and_stands_when_not_walking():
    t = np.array([1.0, 1.25, 1.5, 1.75, 1.0])
    phase = gait_phase(t, start_s=1.0, period_s=1.0)
    np.testing.assert_allclose(phase, [0.0, 0.25, 0.5, 0.75, 0.0])
    walking = np.array([True, True, True, True, False])
    expected = stance(phase, walking, stance_fraction=0.55)
    # left stance for phase < 0.55, right half a period behind; both down when standing
    np.testing.assert_array_equal(
        expected, [[True, True], [True, False], [True, True], [False, True], [True, True]]
    )
    clock = clock_observation(phase, walking)
    np.testing.assert_allclose(clock[:4], [[0, 1], [1, 0], [0, -1], [-1, 0]], atol=1e-6)
    np.testing.assert_array_equal(clock[4], [0, 0])


def test_gait_reference_lifts_the_swing_leg_only_while_walking():
    phase = np.array([0.0, 0.775, 0.275, 0.775])
    walking = np.array([True, True, True, False])
    lift = swing_lift(phase, walking, stance_fraction=0.55)
    # left swings over phases 0.55-1 (mid-swing at 0.775), the right half a period later
    np.testing.assert_allclose(lift, [[0, 0], [1, 0], [0, 1], [0, 0]], atol=1e-12)
    ref = leg_reference(lift, 0.3)
    np.testing.assert_allclose(ref[1, 0], [-0.3, 0.6, -0.3])
    assert not ref[1, 1].any()

    env = make(2, gait_reference_rad=0.3)
    env.reset()
    env.command[:, 0] = [0.3, 0.0]  # the first walks, the second stands
    env.episode_step[:] = round((env.cfg.command.start_delay_s + 0.775 * 0.8) / env.control_dt)
    target = env.command_from_action(np.zeros((2, 29)))
    offset = target - env.default_joint_pos
    left = LEG_REFERENCE_JOINTS[0]
    lift = swing_lift(env.phase()[:1], np.array([True]), 0.55)
    np.testing.assert_allclose(offset[0, left], leg_reference(lift, 0.3)[0, 0], atol=1e-9)
    assert lift[0, 0] > 0.9 and offset[0, left[1]] > 0.5 and not offset[1].any()
    meta = env.deployment_metadata()
    assert meta["gait_reference_rad"] == 0.3 and meta["gait_period_s"] == 0.8
    with pytest.raises(ValueError, match="gait_reference_rad"):
        G1PullConfig(gait_reference_rad=-0.1).validate()


def test_stride_reference_sweeps_the_stance_foot_back_and_scales_with_speed():
    phase = np.array([0.0, 0.275, 0.55, 0.775, 0.275])
    walking = np.array([True, True, True, True, False])
    sweep = stride_sweep(phase, walking, stance_fraction=0.55)
    # left: front (-1) at touchdown, under the pelvis mid-stance, back (+1) at lift-off,
    # half way forward again mid-swing; the right leg is half a period behind
    np.testing.assert_allclose(sweep[:4, 0], [-1.0, 0.0, 1.0, 0.0], atol=1e-12)
    assert not sweep[4].any()
    ref = stride_reference(sweep, np.array([0.3, 0.3, 0.3, -0.3, 0.3]), 0.37)
    np.testing.assert_allclose(ref[2, 0], [0.111, 0.0, -0.111])  # hip back, ankle levels
    np.testing.assert_allclose(ref[3], -stride_reference(sweep, np.full(5, 0.3), 0.37)[3])


def test_curriculum_counts_a_walk_that_the_cart_held_back_as_a_failure():
    env = make(2)
    env.reset()
    env.speed[:] = 0.4
    steps = env.max_episode_steps
    env.episode_step[:] = steps
    walked = 0.4 * (steps * env.control_dt - env.cfg.command.start_delay_s)
    env.progress_trace[:, steps] = [walked, 0.2 * walked]
    np.testing.assert_array_equal(env.fell_short(np.arange(2)), [False, True])
    env.speed[:] = 0.0  # standing episodes are judged by falls alone
    np.testing.assert_array_equal(env.fell_short(np.arange(2)), [False, False])


def test_task_steps_finitely_and_commands_start_after_the_standing_start():
    env = make(4)
    env.reset()
    rng = np.random.default_rng(0)
    delay = round(env.cfg.command.start_delay_s / env.control_dt)
    for _ in range(delay + 5):
        step = env.step(rng.uniform(-0.2, 0.2, (4, 29)))
        assert np.isfinite(step.obs).all() and np.isfinite(step.critic_obs).all()
        assert np.isfinite(step.reward).all()
    assert env.unstable_resets == 0
    running = env.episode_step >= delay
    vx = step.obs[:, 93]
    np.testing.assert_allclose(vx[running], (env.direction * env.speed)[running], atol=1e-6)


def strand_cosine(env: G1PullEnv) -> np.ndarray:
    """cos of the angle between each rope strand and the rails, by hand, for a robot held
    in its standing pose (pelvis moved along x only): the hands sit symmetric at the
    hitch's height, half a hand distance w off the rails, dx from the cart along x."""
    hands = env.scene_hand_pos
    w = abs(hands[0, 1] - hands[1, 1]) / 2
    hands_x = hands[:, 0].mean() + env.engine.qpos[:, 0]  # the pelvis starts at x = 0
    dx = np.abs(env.engine.qpos[:, env.cart_q] - hands_x)
    return dx / np.hypot(dx, w)


def test_rope_tension_sensor_reads_a_stretched_spring_k_times_x():
    """Static case: the robot holds still, the cart's spring (k = 400 N/m) is anchored
    0.3 m beyond the cart's start, away from the robot; once the cart rests, the rope
    holds the spring's force k x (x the spring's stretch): along the rails the two
    strands carry 2 T cos(a) = k x, and the handle force is k x towards the cart."""
    env = make(2, evaluation=True)  # sim 0 pulls backward (cart ahead), sim 1 forward
    env.reset()
    k, stretch = 400.0, 0.3
    anchor = env.engine.qpos[:, env.cart_q] - env.direction * stretch
    field = env.engine.model_field
    field("jnt_stiffness")[:, env.cart_jnt] = k
    field("qpos_spring")[:, env.cart_q] = anchor
    field("dof_damping")[:, env.cart_dof] = 100.0  # settles the cart
    field("dof_frictionloss")[:, env.cart_dof] = 0.0
    hold_robot(env, 600)
    np.testing.assert_allclose(env.engine.qvel[:, env.cart_dof], 0.0, atol=1e-6)
    spring = k * np.abs(anchor - env.engine.qpos[:, env.cart_q])
    assert (spring > 50.0).all()  # the rope is taut and carries load
    tension = spring / (2 * strand_cosine(env))
    np.testing.assert_allclose(env.tension_sensor[:, 0], tension, rtol=2e-3)
    env.measure_handle_force()
    handle = env.external_force.sum(axis=1)
    np.testing.assert_allclose(handle[:, 0], -env.direction * spring, rtol=2e-3)
    np.testing.assert_allclose(handle[:, 1:], 0.0, atol=0.02 * spring.max())
    np.testing.assert_allclose(env.handle_force_n, spring, rtol=2e-3)
    np.testing.assert_array_equal(env.external_force[:, 0], 0.0)  # nothing on the torso


def test_rope_pull_of_a_rolling_cart_is_its_rolling_resistance():
    """The robot, held in its pose, is carried away from the cart at 0.3 m/s: once the
    cart rolls along at that speed the rope pulls it with its rolling resistance."""
    env = make(2, evaluation=True)
    env.reset()
    field = env.engine.model_field
    field("dof_frictionloss")[:, env.cart_dof] = 150.0
    field("dof_damping")[:, env.cart_dof] = 0.0
    hold_robot(env, 300, 0.3 * env.direction)  # 1.5 s: rope taut, cart up to speed
    np.testing.assert_allclose(env.engine.qvel[:, env.cart_dof], 0.3 * env.direction, rtol=0.02)
    tension = 150.0 / (2 * strand_cosine(env))
    np.testing.assert_allclose(env.tension_sensor[:, 0], tension, rtol=0.03)
    env.measure_handle_force()
    np.testing.assert_allclose(env.handle_force_n, 150.0, rtol=0.03)


def brute_force_held(force, progress, steps, window, min_progress):
    out = np.zeros(force.shape[0])
    for r in range(force.shape[0]):
        for i in range(steps[r] - window + 1):
            if progress[r, i + window] - progress[r, i] >= min_progress:
                out[r] = max(out[r], force[r, i : i + window].min())
    return out


def test_held_force_on_a_synthetic_trace():
    dt, window = 0.02, 100  # 2 s at 50 Hz
    speed = np.r_[np.zeros(50), np.full(450, 0.2)]  # stands 1 s, then walks at 0.2 m/s
    force = np.r_[np.full(150, 50.0), np.full(80, 200.0), np.full(120, 120.0), np.full(150, 80.0)]
    progress = np.r_[0.0, np.cumsum(speed * dt)]
    min_progress = 0.1 * window * dt
    # 200 N lasts 1.6 s only; 200 N then 120 N make 2 s of at least 120 N, walking.
    assert held_force(force[None], progress[None], [500], window, min_progress)[0] == 120.0
    # Walking stops 0.6 s into the 200 N phase: no window of >= 120 N advances 0.2 m.
    stop = np.r_[np.zeros(50), np.full(130, 0.2), np.zeros(320)]
    stalled = np.r_[0.0, np.cumsum(stop * dt)]
    assert held_force(force[None], stalled[None], [500], window, min_progress)[0] == 50.0
    # An episode that ends after 240 steps never holds 120 N for 2 s.
    assert held_force(force[None], progress[None], [240], window, min_progress)[0] == 50.0
    # Windows start after the walk command: from step 260 on, 200 N is gone and less
    # than 2 s of 120 N is left, so 80 N is the most held for 2 s.
    late = held_force(force[None], progress[None], [500], window, min_progress, first_start=260)
    assert late[0] == 80.0
    rng = np.random.default_rng(1)
    forces = rng.uniform(0, 300, (6, 240))
    walks = np.concatenate(
        [np.zeros((6, 1)), np.cumsum(rng.uniform(-0.1, 0.5, (6, 240)) * dt, 1)], 1
    )
    steps = np.array([240, 239, 150, 100, 99, 10])
    np.testing.assert_allclose(
        held_force(forces, walks, steps, 50, 0.1),
        brute_force_held(forces, walks, steps, 50, 0.1),
    )


def test_evaluation_protocol_and_per_direction_metrics():
    env = make(4, evaluation=True)
    env.reset()
    np.testing.assert_array_equal(env.direction, [-1, 1, -1, 1])
    np.testing.assert_allclose(env.resistance, [150.0, 150.0, 300.0, 300.0])
    hold = env.hold_steps
    assert hold == 100
    T = env.max_episode_steps
    env.episode_step[:] = T
    env.force_trace[:] = [[160.0], [140.0], [250.0], [310.0]]
    env.cart_trace[:] = np.linspace(0.0, 3.0, T + 1)  # the cart at 0.25 m/s all along
    env.fell[:] = [False, False, False, True]
    out = env.episode_metrics(np.arange(4))
    np.testing.assert_allclose(out["pull_force_held_n"], [160.0, 140.0, 250.0, 0.0])
    np.testing.assert_allclose(out["peak_pull_force_backward_n"], [160.0, 0.0, 250.0, 0.0])
    np.testing.assert_allclose(out["peak_pull_force_forward_n"], [0.0, 140.0, 0.0, 0.0])
    np.testing.assert_array_equal(out["fall_rate"], [0, 0, 0, 1])
    assert G1PullEnv.metric_reductions["peak_pull_force_backward_n"] == "max"
    # the pelvis walking while the cart stands still holds nothing
    env.progress_trace[:] = np.linspace(0.0, 3.0, T + 1)
    env.cart_trace[:] = 0.0
    out = env.episode_metrics(np.arange(4))
    np.testing.assert_allclose(out["pull_force_held_n"], 0.0)


class ScriptedEpisodes:
    """A VecEnv whose episodes all end after one step with given metrics: the reduction
    logic of `evaluate` alone, apart from any physics."""

    num_envs, num_obs, num_actions = 3, 1, 1
    metric_reductions = {"best": "max"}  # noqa: RUF012

    def reset(self):
        return np.zeros((3, 1), np.float32), np.zeros((3, 1), np.float32)

    def step(self, action):
        from simreal.tasks.env import StepResult

        info = {
            "episode": {
                "return": np.array([1.0, 2.0, 3.0]),
                "length": np.ones(3),
                "best": np.array([5.0, 0.0, 7.0]),
                "other": np.array([5.0, 0.0, 7.0]),
            }
        }
        done = np.ones(3, bool)
        zeros = np.zeros((3, 1), np.float32)
        return StepResult(zeros, zeros, np.zeros(3), done, ~done, zeros, info)


def test_evaluate_takes_the_maximum_of_max_reduced_metrics():
    out = evaluate(ScriptedEpisodes(), lambda obs: np.zeros((3, 1)))
    assert out["best"] == 7.0 and out["other"] == pytest.approx(4.0)


def test_hold_time_must_fit_in_the_evaluation_episode():
    with pytest.raises(ValueError, match=r"eval_pull.hold_s=9.5 does not fit"):
        G1PullConfig(eval_pull=EvalPullConfig(hold_s=9.5), eval_episode_s=10.0).validate()


def test_a_load_beyond_the_robot_ends_the_episode_as_a_fall():
    """A 50 kN spring yanks the rope: the episode ends as a fall, never as NaN."""
    env = make(2, evaluation=True)
    env.reset()
    field = env.engine.model_field
    field("jnt_stiffness")[:, env.cart_jnt] = 1e5
    field("qpos_spring")[:, env.cart_q] = env.engine.qpos[:, env.cart_q] - env.direction * 0.5
    assert_every_robot_falls(env, 100, zero_logs=("pull_force_held_n",))


def test_walking_command_and_walking_rewards():
    t = np.array([0.5, 1.0, 2.0, 2.0])
    direction = np.array([-1.0, 1.0, -1.0, 1.0])
    yaw = np.array([0.0, 0.1, -2.0, 2.0])
    cmd = walking_command(t, direction, np.full(4, 0.4), yaw, 1.0, 1.0, 0.5)
    np.testing.assert_allclose(cmd[:, 0], [0.0, 0.4, -0.4, 0.4])  # after the standing start
    np.testing.assert_allclose(cmd[:, 2], [0.0, -0.1, 0.5, -0.5])  # back to the rails, clipped
    np.testing.assert_array_equal(cmd[:, 1], 0.0)
    vel = np.array([[0.4, 0.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(
        track_lin_vel(vel, np.array([[0.4, 0, 0], [0.5, 0, 0]]), 0.25), [1.0, np.exp(-4.0)]
    )
    np.testing.assert_allclose(track_yaw_rate(np.array([0.2]), np.array([0.2]), 0.5), [1.0])
    touchdown = np.array([[0.5, 0.0], [0.0, 0.3], [0.5, 0.0]])
    walking = np.array([True, True, False])
    np.testing.assert_allclose(feet_air_time(touchdown, 0.4, walking), [0.1, -0.1, 0.0])


def test_rail_velocity_and_heading_pay_nothing_for_walking_after_turning_around():
    """A backward puller (command vx -0.3) that turned by pi walks at -0.3 m/s in its
    heading frame, i.e. at +0.3 m/s along the rails, towards the cart."""
    command = np.array([[-0.3, 0.0, 0.0]])
    env = make(1)
    env.reset()
    q = env.engine.qpos
    q[0, 3:7] = [0.0, 0.0, 0.0, 1.0]  # yawed by pi
    env.engine.qvel[0, 0:3] = [0.3, 0.0, 0.0]  # world frame: towards the cart
    in_heading = env.to_heading(env.engine.qvel[:, 0:3])
    assert track_lin_vel(in_heading, command, 0.15)[0] == pytest.approx(1.0)
    assert track_lin_vel(env.engine.qvel[:, 0:3], command, 0.15)[0] < 1e-6  # world frame
    assert abs(env.yaw()[0]) == pytest.approx(np.pi)
    assert heading(env.yaw(), 0.3)[0] < 1e-6
    assert heading(np.zeros(1), 0.3)[0] == 1.0


def test_tow_pays_the_share_of_the_resistance_the_rope_pulls_while_walking():
    force, resistance = np.array([0.0, 50.0, 150.0, 150.0]), np.full(4, 100.0)
    walking = np.array([True, True, True, False])
    np.testing.assert_allclose(tow(force, resistance, walking), [0.0, 0.5, 1.0, 0.0])


def test_tow_steady_pays_an_even_pull_and_penalizes_jerks_both_ways():
    steady = np.full(5, 100.0)
    force = np.array([100.0, 115.0, 85.0, 150.0, 100.0])
    walking = np.array([True, True, True, True, False])
    got = tow_steady(force, steady, walking, sigma_share=0.15)
    np.testing.assert_allclose(got[:3], [1.0, np.exp(-1.0), np.exp(-1.0)])
    assert got[3] < 1e-4 and got[4] == 0.0  # a jerk above the steady force costs like a dip


def test_steady_tow_force_adds_damping_at_the_carts_speed_and_the_spring_it_stretched():
    env = make(num_envs=2)
    env.reset()
    env.resistance[:] = 100.0
    env.damping[:] = [20.0, 0.0]
    env.stiffness[:] = [0.0, 5.0]
    start = env.cart_start_x(env.direction)
    env.engine.qpos[:, env.cart_q] = start + np.array([0.0, -0.4])
    env.engine.qvel[:, env.cart_dof] = [-0.5, 0.0]
    np.testing.assert_allclose(env.steady_tow_force(), [110.0, 102.0])


def test_evaluation_summary_lists_each_directions_carts_lightest_first_with_falls():
    ended = {
        "pulls_forward": [1.0, 0.0, 0.0, 1.0],
        "pull_resistance_n": [60.0, 90.0, 30.0, 30.0],
        "pull_force_held_n": [50.0, 0.0, 25.0, 20.0],
        "fall_rate": [0.0, 1.0, 0.0, 0.0],
    }
    out = G1PullEnv.summarize_episodes(ended)
    assert out["fall_rate_backward"] == 0.5 and out["fall_rate_forward"] == 0.0
    assert out["episodes_backward"] == [
        {"resistance_n": 30.0, "held_n": 25.0, "fell": False},
        {"resistance_n": 90.0, "held_n": 0.0, "fell": True},
    ]
    assert [e["resistance_n"] for e in out["episodes_forward"]] == [30.0, 60.0]


@pytest.mark.parametrize("task", ["g1-pull", "g1-walk"])
def test_observing_once_after_resets_changes_no_evaluation_step(task):
    """`observe_after_resets`: a step that resets simulations observes once, after the
    resets. Evaluation (noise-free) must read exactly as observing before and after did,
    episode ends and resets included."""
    cfg = dataclasses.replace(get_task(task).config_cls(), evaluation=True)
    once, twice = make_env(task, cfg, 4, seed=5), make_env(task, cfg, 4, seed=5)
    twice.observe_after_resets = False
    assert once.observe_after_resets
    np.testing.assert_array_equal(once.reset()[0], twice.reset()[0])
    rng = np.random.default_rng(1)
    resets = 0
    for _ in range(120):
        action = rng.uniform(-1, 1, (4, once.num_actions))
        a, b = once.step(action), twice.step(action)
        for name in ("obs", "critic_obs", "reward", "terminated", "truncated"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        resets += int("episode" in a.info)
    assert resets > 0, "random actions should topple some robots in 120 steps"
