"""quad-swarm's expert and planning: the path distance round columns, the path-progress
reward, the expert's detours, cruise levels, crowd speed cap and ORCA avoidance, and eight
expert drones flying through columns."""

from __future__ import annotations

import numpy as np
import pytest

from simreal.tasks.quad_swarm import QuadSwarmConfig, QuadSwarmEnv
from simreal.tasks.quad_swarm.config import ExpertConfig
from simreal.tasks.quad_swarm.expert import (
    active_neighbours,
    crowd_speed_cap,
    cruise_height,
    orca_planes,
    reciprocal_avoidance,
)
from simreal.tasks.quad_swarm.geodesic import FloorGrid, path_distance


def make(sims: int, **cfg) -> QuadSwarmEnv:
    env = QuadSwarmEnv(QuadSwarmConfig(**cfg), num_envs=sims, seed=0, num_threads=1)
    env.reset()
    return env


def test_path_distance_goes_round_columns_and_is_exact_in_free_space():
    grid = FloorGrid(5.0, 0.1)
    cells = np.arange(6) - 2.5
    columns = np.stack(np.meshgrid(cells, cells, indexing="ij"), -1).reshape(-1, 2)
    goals = np.array([[0.0, 4.0], [-2.5, 4.0]])
    start = np.array([[[0.0, -4.0, 1.0], [-2.5, -4.0, 1.0]]])
    goal = np.array([[[0.0, 4.0, 1.4], [-2.5, 4.0, 1.4]]])
    empty = grid.distance_maps(grid.blocked(columns, np.zeros(36, bool), 0.3), goals)
    full = grid.distance_maps(grid.blocked(columns, np.ones(36, bool), 0.3), goals)
    straight = np.hypot(8.0, 0.4)
    np.testing.assert_allclose(path_distance(empty[None], grid, start, goal), straight, atol=0.1)
    blocked_line = path_distance(full[None], grid, start, goal)[0]
    # x = 0 runs between two column rows: free; x = -2.5 runs through six columns: the path
    # steps half a metre aside and back (0.32 m longer)
    assert abs(blocked_line[0] - straight) < 0.1
    assert 0.15 < blocked_line[1] - straight < 1.2
    # a drone inside a column's keep-out still has a finite distance, a little more
    inside = np.array([[[-2.5, -2.5, 1.0]]])
    d = path_distance(full[None, 1:], grid, inside, goal[:, 1:])
    assert np.isfinite(d).all() and d[0, 0] > 6.5


def test_path_progress_reward_pays_for_the_way_round_not_through():
    weights = {"path_progress": 1.0, "progress": 0.0}
    env = make(2, num_drones=2, eval_density=0.8, reward_weights=weights, evaluation=True)
    env.reset()
    assert env.prev_path_dist.shape == (2, 2) and np.all(env.prev_path_dist > 5.0)
    before = env.prev_path_dist.copy()
    env.step(np.zeros((4, 3)))
    # zero residuals fly the prior toward the goal: the path distance shrinks
    assert np.all(env.prev_path_dist < before)
    plain = make(2, num_drones=2)
    assert plain.floor is None  # weight 0: no grid, no maps


def test_expert_goes_round_a_column_and_its_action_is_the_residual_that_flies_it():
    env = make(1, num_drones=1, eval_density=0.0, evaluation=True)
    env.column_present[0] = False
    env.column_present[0, 0] = True  # one column, at (-2.5, -2.5)
    env.columns_xy[0, 0] = [0.0, 0.0]
    env.goal[0, 0] = [0.0, 3.0, 1.0]
    env.engine.qpos[0, 0:3] = [0.0, -1.5, 1.0]  # the column stands on the straight line
    env.floor = None  # rebuild the maps for the layout set above
    velocity = env.expert_velocity()[0, 0]
    assert velocity[1] > 0.5 and abs(velocity[0]) > 0.1  # onward, and sideways round it
    env.action[:] = env.expert_action().reshape(env.action.shape)
    np.testing.assert_allclose(env.velocity_command()[0, 0], velocity, atol=1e-6)
    # free line of sight: straight at the goal
    env.engine.qpos[0, 0:3] = [1.0, 1.5, 1.0]
    velocity = env.expert_velocity()[0, 0]
    assert velocity[0] == pytest.approx(-velocity[1] * 1.0 / 1.5, abs=0.1)


def test_expert_drones_meeting_head_on_both_veer_to_their_left():
    env = make(1, num_drones=2, eval_density=0.0, evaluation=True)
    env.engine.qpos[0, 0:3] = [0.0, -0.15, 1.0]
    env.engine.qpos[0, 7:10] = [0.0, 0.15, 1.0]
    env.goal[0] = [[0.0, 4.0, 1.0], [0.0, -4.0, 1.0]]
    velocity = env.expert_velocity()[0]
    assert velocity[0, 1] < velocity[1, 1] + 1.0  # pushed apart, not ramming on
    assert velocity[0, 0] < 0.0 < velocity[1, 0]  # each to its own left


def test_cruise_levels_stack_drones_by_their_sideways_crossing_and_land_at_the_goal_height():
    """With `expert.cruise_levels` the drone crossing farthest leftward cruises at the
    band's bottom, the one crossing farthest rightward at its top, the rest evenly between
    by rank; near its goal a drone descends to the goal's height; off, every drone flies
    at its goal's height."""
    cfg = ExpertConfig(cruise_levels=True, cruise_band_m=(0.5, 2.5), cruise_arrive_m=1.5)
    start = np.array([[[0.0, -4.0, 1.0], [1.0, -4.0, 1.0], [-1.0, -4.0, 1.0]]])
    goal = np.array([[[3.0, 4.0, 0.9], [-2.0, 4.0, 1.2], [-1.0, 4.0, 1.4]]])  # +3, -3, 0 m
    height = cruise_height(cfg, start, goal, start)
    np.testing.assert_allclose(height, [[2.5, 0.5, 1.5]])
    arriving = goal.copy()
    arriving[0, 0, :2] -= [0.5, 1.0]  # 1.1 m from its goal
    np.testing.assert_allclose(cruise_height(cfg, arriving, goal, start)[0, 0], 0.9)
    off = ExpertConfig()
    np.testing.assert_array_equal(cruise_height(off, start, goal, start), goal[..., 2])
    with pytest.raises(ValueError, match="cruise_band_m"):
        ExpertConfig(cruise_band_m=(2.0, 1.0)).validate()


def test_the_crowd_speed_cap_falls_with_the_gap_to_the_nearest_active_drone():
    cfg = ExpertConfig(max_speed=1.0, crowd_slow_m=0.6, crowd_min_speed_fraction=0.5)
    pos = np.array([[[0.0, 0.0, 1.0], [0.45, 0.0, 1.0], [5.0, 0.0, 1.0], [0.0, 0.1, 1.0]]])
    active = np.array([[True, True, True, False]])  # the fourth is down: it slows no one
    cap = crowd_speed_cap(cfg, active_neighbours(pos, active)[1])[0, :, 0]
    np.testing.assert_allclose(cap[:3], [0.75, 0.75, 1.0])
    pos[0, 1, 0] = 0.1  # closer than half of crowd_slow_m: the floor
    np.testing.assert_allclose(
        crowd_speed_cap(cfg, active_neighbours(pos, active)[1])[0, :2, 0], [0.5, 0.5]
    )
    off = ExpertConfig(max_speed=0.8)
    assert crowd_speed_cap(off, active_neighbours(pos, active)[1]) == 0.8


def test_orca_halves_keep_any_two_drones_apart_for_the_whole_horizon():
    """Each drone of a pair moving onto its own half-space's boundary (the least change
    its ORCA constraint asks) leaves relative motion that stays outside the combined
    radius for the horizon, whatever the pair's positions and velocities."""
    rng = np.random.default_rng(0)
    radius, horizon = 0.3, 1.5
    t = np.linspace(0.0, horizon, 301)[:, None]
    for _ in range(500):
        rel = rng.normal(size=3)
        rel *= rng.uniform(0.35, 3.0) / np.linalg.norm(rel)
        v_a, v_b = rng.normal(size=3), rng.normal(size=3)
        moved = []
        for seen, own, other in ((rel, v_a, v_b), (-rel, v_b, v_a)):
            point, normal = orca_planes(seen, own - other, own, radius, horizon, 0.02)
            moved.append(own + max(0.0, -(own - point) @ normal) * normal)
        gaps = np.linalg.norm(rel + t * (moved[1] - moved[0]), axis=1)
        assert gaps.min() > radius - 1e-3


def test_orca_turns_head_on_drones_aside_and_keeps_columns_off():
    cfg = ExpertConfig(avoidance="orca", max_speed=1.0)
    pos = np.array([[[0.0, 0.0, 1.0], [2.0, 0.0, 1.0]]])
    vel = np.array([[[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]])
    to_other, dist = active_neighbours(pos, np.ones((1, 2), dtype=bool))
    new = reciprocal_avoidance(cfg, vel.copy(), pos, vel, to_other, dist, 0.02)
    # exactly head on, each veers to its own left: opposite ways in y
    assert new[0, 0, 1] > 0.1 and new[0, 1, 1] < -0.1
    # far apart or flying apart: unchanged
    apart = np.array([[[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])
    np.testing.assert_allclose(
        reciprocal_avoidance(cfg, apart.copy(), pos, apart, to_other, dist, 0.02), apart
    )
    # a column 0.5 m ahead of a lone drone flying at it: the velocity no longer reaches it
    # within the column horizon
    one_pos, one_vel = pos[:, :1], vel[:, :1]
    lone = active_neighbours(one_pos, np.ones((1, 1), dtype=bool))
    columns = (np.array([[[0.5, 0.05]]]), np.array([[True]]), 0.15)
    safe = reciprocal_avoidance(cfg, one_vel.copy(), one_pos, one_vel, *lone, 0.02, columns)[0, 0]
    path = one_pos[0, 0, :2] + np.linspace(0, cfg.orca_column_horizon_s, 50)[:, None] * safe[:2]
    assert np.linalg.norm(path - [0.5, 0.05], axis=1).min() > 0.15 + cfg.column_margin - 1e-6
    with pytest.raises(ValueError, match="avoidance"):
        ExpertConfig(avoidance="rvo").validate()


def test_the_expert_flies_eight_drones_through_columns_without_collisions():
    """The teacher must be worth imitating: at the issue's first setting it succeeds."""
    env = make(4, num_drones=8, eval_density=0.2, evaluation=True)
    policy = env.baseline_policy("expert")
    obs, _ = env.reset()
    for _ in range(env.max_episode_steps - 1):
        obs = env.step(policy(obs)).obs
    outcome = env.episode_metrics(np.arange(4) * 8)
    assert outcome["collision"].sum() == 0 and outcome["success"].mean() >= 0.75
