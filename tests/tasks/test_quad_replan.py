"""quad-replan: the minimum-snap solver, analytic feasibility, the time-allocation
baseline and closed-loop flight of plans in mjbatch."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simreal.robots.crazyflie import CrazyflieParams
from simreal.tasks import make_env
from simreal.tasks.quad_replan import (
    QuadReplanConfig,
    QuadReplanEnv,
    baseline,
    feasibility,
    flight,
    minsnap,
    waypoints,
)


def random_plans(seed: int, b: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    waypoints = rng.uniform(-1.0, 1.0, (b, m + 1, 3))
    durations = rng.uniform(0.5, 2.0, (b, m))
    return waypoints, durations


def test_plans_pass_through_their_waypoints_at_the_knot_times():
    waypoints, durations = random_plans(0, 16, 6)
    plan = minsnap.solve(waypoints, durations)
    np.testing.assert_allclose(plan.evaluate(plan.knot_times), waypoints, atol=1e-8)


def test_plans_start_and_end_at_rest():
    waypoints, durations = random_plans(1, 8, 5)
    plan = minsnap.solve(waypoints, durations)
    for r in (1, 2, 3):
        start, end = minsnap.segment_ends(plan, r)
        np.testing.assert_allclose(start[:, 0], 0.0, atol=1e-7)
        np.testing.assert_allclose(end[:, -1], 0.0, atol=1e-7)


def test_the_optimum_is_smooth_up_to_the_sixth_derivative():
    """Continuity is imposed up to snap; derivatives 5 and 6 come out continuous only at
    the true minimum-snap optimum (Euler-Lagrange), so this checks optimality too."""
    waypoints, durations = random_plans(2, 8, 7)
    plan = minsnap.solve(waypoints, durations)
    for r in range(1, 7):
        start, end = minsnap.segment_ends(plan, r)
        scale = max(1.0, np.abs(end).max())
        np.testing.assert_allclose(end[:, :-1], start[:, 1:], atol=1e-6 * scale, err_msg=f"d{r}")


def test_dropping_continuity_breaks_the_jerk_at_waypoints():
    """The continuity check above is not vacuous: with only velocity and acceleration
    joined, the jerk jumps at interior waypoints."""
    waypoints, durations = random_plans(3, 4, 4)
    plan = minsnap.solve(waypoints, durations, continuity=2)
    for r in (1, 2):
        start, end = minsnap.segment_ends(plan, r)
        np.testing.assert_allclose(end[:, :-1], start[:, 1:], atol=1e-7)
    start, end = minsnap.segment_ends(plan, 3)
    assert np.abs(end[:, :-1] - start[:, 1:]).max() > 0.1
    with pytest.raises(ValueError, match="continuity"):
        minsnap.solve(waypoints, durations, continuity=1)


def test_one_segment_rest_to_rest_is_the_known_septic():
    """Rest to rest in one segment: p(s) = p0 + (p1 - p0)(35 s^4 - 84 s^5 + 70 s^6 - 20 s^7)."""
    p0, p1 = np.array([0.0, 0.0, 1.0]), np.array([2.0, -1.0, 1.5])
    plan = minsnap.solve(np.stack([p0, p1]), np.array([2.0]))
    t = np.linspace(0.0, 2.0, 41)[None]
    s = t[0] / 2.0
    shape = 35 * s**4 - 84 * s**5 + 70 * s**6 - 20 * s**7
    np.testing.assert_allclose(plan.evaluate(t)[0], p0 + np.outer(shape, p1 - p0), atol=1e-9)
    # peak speed of that profile: 35/16 of the mean speed, at mid-time
    speed = np.linalg.norm(plan.evaluate(np.array([[1.0]]), 1)[0, 0])
    assert speed == pytest.approx(35 / 16 * np.linalg.norm(p1 - p0) / 2.0, rel=1e-9)


def test_collinear_waypoints_give_a_straight_line():
    line = np.linspace(0.0, 1.0, 5)[:, None] * np.array([1.0, 2.0, 0.5])
    plan = minsnap.solve(line, np.array([0.7, 1.1, 0.9, 1.3]))
    _, samples = plan.sample(0.01, derivatives=0)
    cross = np.cross(samples[0, 0], np.array([1.0, 2.0, 0.5]))
    np.testing.assert_allclose(cross, 0.0, atol=1e-9)


def test_derivatives_match_finite_differences_of_position():
    waypoints, durations = random_plans(4, 3, 4)
    plan = minsnap.solve(waypoints, durations)
    dt = 1e-4
    t = np.linspace(0.05, plan.total_time.min() - 0.05, 50)[None].repeat(3, axis=0)
    for r in (1, 2, 3):
        fd = (plan.evaluate(t + dt, r - 1) - plan.evaluate(t - dt, r - 1)) / (2 * dt)
        np.testing.assert_allclose(fd, plan.evaluate(t, r), rtol=1e-4, atol=1e-4)


def test_longer_segment_times_lower_the_snap_cost():
    waypoints, durations = random_plans(5, 4, 3)
    slow = minsnap.snap_cost(minsnap.solve(waypoints, 2.0 * durations))
    fast = minsnap.snap_cost(minsnap.solve(waypoints, durations))
    # snap scales as time^-4, its integral as time^-7: exactly 2^7 for uniform scaling
    np.testing.assert_allclose(fast / slow, 2.0**7, rtol=1e-6)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="durations must be"):
        minsnap.solve(np.zeros((3, 3)), np.array([1.0]))
    with pytest.raises(ValueError, match="positive"):
        minsnap.solve(np.zeros((3, 3)), np.array([1.0, 0.0]))


# -- low fidelity: analytic feasibility ---------------------------------------------------


def test_limits_come_from_the_crazyflie_parameters():
    p = CrazyflieParams()
    limits = feasibility.Limits.crazyflie(p)
    # thrust-to-weight 2.25: 2.25 g of collective thrust per mass
    assert limits.max_thrust_accel == pytest.approx(2.25 * 9.81)
    assert limits.max_speed == pytest.approx(30 / 3.6)
    assert limits.max_body_rate == pytest.approx(np.radians(2000))
    stronger = feasibility.Limits.crazyflie(dataclasses.replace(p, thrust_to_weight=3.0))
    assert stronger.max_thrust_accel == pytest.approx(3.0 * 9.81)


def test_flat_outputs_of_hand_computed_states():
    zero = np.zeros(3)
    hover = feasibility.flat_outputs(zero, zero, zero)
    assert hover["thrust"] == pytest.approx(9.81) and hover["tilt"] == pytest.approx(0.0)
    # 9.81 m/s^2 sideways: thrust sqrt(2) g at 45 degrees
    side = feasibility.flat_outputs(zero, np.array([9.81, 0, 0]), zero)
    assert side["thrust"] == pytest.approx(np.sqrt(2) * 9.81)
    assert side["tilt"] == pytest.approx(np.pi / 4)
    # at hover, 4.905 m/s^3 sideways jerk tilts the thrust at 0.5 rad/s
    rate = feasibility.flat_outputs(zero, zero, np.array([0.0, 4.905, 0.0]))
    assert rate["body_rate"] == pytest.approx(0.5)
    # jerk along the thrust changes its size, not its direction
    along = feasibility.flat_outputs(zero, zero, np.array([0.0, 0.0, 100.0]))
    assert along["body_rate"] == pytest.approx(0.0)
    assert feasibility.flat_outputs(np.array([3.0, 4.0, 0.0]), zero, zero)["speed"] == 5.0


def test_a_slow_move_is_feasible_and_squeezing_its_time_makes_it_infeasible():
    limits = feasibility.Limits.crazyflie()
    move = np.array([[0.0, 0.0, 1.0], [2.0, 0.0, 1.0]])
    slow = feasibility.check(minsnap.solve(move, np.array([4.0])), limits)
    assert slow.feasible[0]
    # rest to rest over 2 m in 4 s: peak speed 35/16 * 0.5 m/s, far from 8.33 m/s
    assert slow.peaks["speed"][0] == pytest.approx(35 / 16 * 0.5, rel=1e-3)
    assert slow.margins["speed"][0] == pytest.approx(1 - 35 / 16 * 0.5 / (30 / 3.6), rel=1e-3)
    fast = feasibility.check(minsnap.solve(move, np.array([0.5])), limits)
    assert not fast.feasible[0]
    assert fast.margins["tilt"][0] < 0 and fast.worst_margin[0] < 0


def test_a_fast_climb_runs_out_of_thrust_and_a_fast_drop_needs_it_pointing_down():
    """Rest to rest over 1.5 m vertically: the septic's peak acceleration is about
    7.513 d / T^2, the same accelerating and braking."""
    limits = feasibility.Limits.crazyflie()
    up = np.array([[0.0, 0.0, 0.5], [0.0, 0.0, 2.0]])
    # T = 1 s: 11.27 m/s^2 is within the 1.25 g of spare thrust going up ...
    climb = feasibility.check(minsnap.solve(up, np.array([1.0])), limits)
    assert climb.peaks["thrust"][0] == pytest.approx(9.81 + 7.513 * 1.5, rel=1e-3)
    assert climb.margins["thrust"][0] > 0
    # ... but braking at 11.27 m/s^2 > g needs the thrust pointing down: tilt pi
    assert climb.peaks["tilt"][0] == pytest.approx(np.pi)
    assert not climb.feasible[0]
    drop = feasibility.check(minsnap.solve(up[::-1].copy(), np.array([1.0])), limits)
    assert drop.margins["tilt"][0] < 0 and drop.margins["thrust"][0] > 0
    # T = 0.8 s: 17.6 m/s^2 up, more than the motors give
    fast = feasibility.check(minsnap.solve(up, np.array([0.8])), limits)
    assert fast.margins["thrust"][0] < 0
    # T = 1.5 s: 5 m/s^2 either way, feasible
    assert feasibility.check(minsnap.solve(up, np.array([1.5])), limits).feasible[0]


# -- the baseline and medium fidelity ------------------------------------------------------


def test_waypoint_sets_are_reproducible_and_inside_the_box():
    box = waypoints.WaypointBox()
    a = waypoints.sample(np.random.default_rng(7), 20, 8, box)
    np.testing.assert_array_equal(a, waypoints.sample(np.random.default_rng(7), 20, 8, box))
    assert np.all(a >= np.array(box.low) - 1e-12) and np.all(a <= np.array(box.high) + 1e-12)
    steps = np.linalg.norm(np.diff(a, axis=1), axis=2)
    assert steps.min() >= box.min_step - 1e-9 and steps.max() <= box.max_step + 1e-9
    with pytest.raises(ValueError, match="min_step"):
        waypoints.sample(np.random.default_rng(0), 1, 3, waypoints.WaypointBox(min_step=0.0))


def test_the_baseline_plans_feasibly_and_improves_on_its_start():
    w = waypoints.sample(np.random.default_rng(3), 1, 5, waypoints.WaypointBox())[0]
    limits = feasibility.Limits.crazyflie(gains=flight.FlightConfig().gains)
    cfg = baseline.BaselineConfig()
    result = baseline.plan(w, limits, cfg)
    assert result.feasible and result.planning_s > 0 and result.iterations > 1
    margins = feasibility.check(result.plan, limits)
    assert margins.worst_margin[0] >= cfg.margin - 0.02  # the optimizer's grid is 0.01 s

    def cost(durations: np.ndarray) -> float:
        plan = minsnap.solve(w, durations)
        return durations.sum() + cfg.snap_weight * minsnap.snap_cost(plan)[0]

    lengths = np.linalg.norm(np.diff(w, axis=0), axis=1)
    for speed in (cfg.initial_speed, 2.0):
        start = baseline.stretch_to_feasible(w, lengths / speed, limits, cfg.margin, 0.01)
        assert cost(result.durations) < cost(start)


def test_stretching_makes_an_infeasible_allocation_feasible():
    w = np.array([[0.0, 0.0, 1.0], [1.5, 0.0, 1.0], [1.5, 1.5, 1.5]])
    limits = feasibility.Limits.crazyflie()
    fast = np.array([0.3, 0.3])
    assert not feasibility.check(minsnap.solve(w, fast), limits).feasible[0]
    stretched = baseline.stretch_to_feasible(w, fast, limits, margin=0.1, dt=0.005)
    assert np.all(stretched > fast)
    np.testing.assert_allclose(stretched / fast, stretched[0] / fast[0])
    assert feasibility.check(minsnap.solve(w, stretched), limits).worst_margin[0] >= 0.1


def test_feasible_plans_complete_in_mjbatch_and_squeezed_ones_do_not():
    w = waypoints.sample(np.random.default_rng(5), 4, 5, waypoints.WaypointBox())
    lengths = np.linalg.norm(np.diff(w, axis=1), axis=2)
    limits = feasibility.Limits.crazyflie(gains=flight.FlightConfig().gains)
    # 0.8 m/s mean, stretched until every limit keeps a 30 % margin
    calm_times = np.stack(
        [baseline.stretch_to_feasible(w[i], lengths[i] / 0.8, limits, 0.3, 0.005) for i in range(4)]
    )
    calm = minsnap.solve(w, calm_times)
    assert feasibility.check(calm, limits).feasible.all()
    result = flight.fly(calm, w)
    assert result.completed.all() and not result.crashed.any()
    # the last waypoint is reached within the tolerance before the plan ends
    assert np.all(result.flight_time_s <= calm.total_time + 1e-9)
    assert np.all(result.flight_time_s > calm.total_time - 1.5)
    assert result.max_error_m.max() < 0.1
    squeezed = minsnap.solve(w, lengths / 6.0)
    assert not feasibility.check(squeezed, limits).feasible.any()
    fast = flight.fly(squeezed, w)
    assert not fast.completed.any()
    assert np.all(np.isnan(fast.flight_time_s))


# -- the task -------------------------------------------------------------------------------


def make_replan(n: int, seed: int = 0, **cfg) -> QuadReplanEnv:
    env = make_env("quad-replan", QuadReplanConfig(**cfg), n, seed=seed, num_threads=1)
    env.reset()
    return env


def test_the_task_observes_waypoints_relative_to_the_drone():
    env = make_replan(3, num_segments=5)
    obs, critic = env.observe()
    assert obs.shape == (3, 3 * 5 + 15) and env.num_actions == 5
    np.testing.assert_array_equal(obs, critic)
    ahead = (env.waypoints[:, 1:] - env.waypoints[:, :1]).reshape(3, -1)
    np.testing.assert_allclose(obs[:, :15], ahead, atol=1e-6)
    # at rest and level at the first waypoint
    np.testing.assert_allclose(obs[:, 15:24], np.tile(np.eye(3).ravel(), (3, 1)), atol=1e-6)
    np.testing.assert_allclose(obs[:, 24:], 0.0, atol=1e-6)


def test_actions_scale_segment_times_and_the_baseline_round_trips():
    env = make_replan(2)
    nominal = env.nominal_durations
    np.testing.assert_allclose(env.durations_from_action(np.zeros((2, 7))), nominal)
    np.testing.assert_allclose(env.durations_from_action(np.ones((2, 7))), 4.0 * nominal)
    wanted = nominal * np.linspace(0.5, 2.0, 7)
    np.testing.assert_allclose(env.durations_from_action(env.action_from_durations(wanted)), wanted)


def test_low_fidelity_rewards_fast_feasible_plans_and_ends_every_episode():
    env = make_replan(4, eval_fidelity="low", evaluation=True)
    waypoints_before = env.waypoints.copy()
    slow = env.step(np.full((4, 7), 0.5, dtype=np.float32))
    assert slow.terminated.all() and not slow.truncated.any()
    ep = slow.info["episode"]
    np.testing.assert_array_equal(ep["completed"], 1.0)
    # a new set of waypoints for the next episode
    assert not np.allclose(env.waypoints, waypoints_before)
    fast = env.step(np.full((4, 7), -1.0, dtype=np.float32))
    ep_fast = fast.info["episode"]
    np.testing.assert_array_equal(ep_fast["completed"], 0.0)
    assert np.all(ep_fast["worst_margin"] < 0)
    assert np.all(ep_fast["reward/infeasibility"] < 0)
    assert np.all(slow.reward > fast.reward)


def test_medium_fidelity_flies_the_plans_in_the_task_engine():
    env = make_replan(3, evaluation=True)  # eval_fidelity medium by default
    step = env.step(np.full((3, 7), 0.5, dtype=np.float32))
    ep = step.info["episode"]
    np.testing.assert_array_equal(ep["completed"], 1.0)
    assert np.all(ep["flight_time_s"] <= ep["plan_time_s"] + 1e-9)
    assert np.all(ep["flight_time_s"] > 0.5 * ep["plan_time_s"])


def test_evaluation_sets_are_held_out_by_seed():
    a = make_replan(2, seed=3, evaluation=True).waypoints
    np.testing.assert_array_equal(a, make_replan(2, seed=3, evaluation=True).waypoints)
    assert not np.allclose(a, make_replan(2, seed=3).waypoints)  # training stream differs
    assert not np.allclose(a, make_replan(2, seed=4, evaluation=True).waypoints)


def test_the_unbuilt_high_fidelity_is_refused_by_name():
    with pytest.raises(ValueError, match=r"high fidelity .* not built"):
        QuadReplanConfig(eval_fidelity="high").validate()
    with pytest.raises(ValueError, match="eval_fidelity must be one of"):
        QuadReplanConfig(eval_fidelity="real").validate()
    with pytest.raises(ValueError, match="unknown baseline"):
        make_replan(1).baseline_policy("pid")


def test_medium_fidelity_records_simulation_zeros_flight_for_the_video():
    env = make_replan(2, evaluation=True)
    flown_waypoints = env.waypoints.copy()
    env.step(np.full((2, 7), 0.5, dtype=np.float32))
    frames = env.episode_video_qpos(0)
    assert frames.shape[1] == 7 and frames.shape[0] > 30
    np.testing.assert_allclose(frames[0, :3], flown_waypoints[0, 0])
    # the last frame is at most one frame period (1/30 s) before the last waypoint is reached
    assert np.linalg.norm(frames[-1, :3] - flown_waypoints[0, -1]) < 0.25
    np.testing.assert_array_equal(env.shown_waypoints, flown_waypoints)


def test_episode_values_are_reproducible_and_latency_is_summarized_apart():
    """Rollout hashes cover every episode value: wall-clock latency must not be one."""
    action = np.full((3, 7), 0.2, dtype=np.float32)
    runs = []
    for _ in range(2):
        env = make_replan(3, seed=9, eval_fidelity="low", evaluation=True)
        runs.append(env.step(action).info["episode"])
    assert runs[0].keys() == runs[1].keys() and "plan_latency_ms" not in runs[0]
    for key in runs[0]:
        np.testing.assert_array_equal(runs[0][key], runs[1][key], err_msg=key)
    ended = {k: list(v) for k, v in runs[1].items()}
    summary = env.summarize_episodes(ended)
    assert summary["completion_rate"] == pytest.approx(np.mean(runs[1]["completed"]))
    assert summary["plan_latency_p50_ms"] > 0
