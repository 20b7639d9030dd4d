"""quad-swarm: layout, tokens, obstacles, collisions, success, actions, randomization and
the attention policy; the expert and path planning are in test_quad_swarm_expert.py."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

from simreal.policies.config import ModelConfig
from simreal.policies.export import export_onnx
from simreal.policies.models import ActorCritic
from simreal.tasks.episodes import wilson_interval
from simreal.tasks.quad_swarm import QuadSwarmConfig, QuadSwarmEnv
from simreal.tasks.quad_swarm import observations as obs_terms
from simreal.tasks.quad_swarm.scene import PARKED_Z
from simreal.tasks.quadrotor.config import QuadRandomization


def make(sims: int, **cfg) -> QuadSwarmEnv:
    env = QuadSwarmEnv(QuadSwarmConfig(**cfg), num_envs=sims, seed=0, num_threads=1)
    env.reset()
    return env


def test_one_row_per_drone_and_a_fixed_width_whatever_the_swarm_size():
    small, large = make(2, num_drones=2), make(2, num_drones=32)
    assert small.num_envs == 4 and large.num_envs == 64
    assert small.num_obs == large.num_obs == 21 + 3 + 6 * 7 + 6 * 4
    assert small.observation_structure == large.observation_structure


def test_neighbour_tokens_are_nearest_first_and_padded():
    pos = np.array([[[0.0, 0, 1], [3.0, 0, 1], [1.0, 0, 1]]])
    tokens = obs_terms.neighbour_tokens(pos, np.zeros_like(pos), k=4)
    np.testing.assert_allclose(tokens[0, 0, 0, 0:3], [1.0, 0, 0])  # drone 2 is nearest
    np.testing.assert_allclose(tokens[0, 0, 1, 0:3], [3.0, 0, 0])
    np.testing.assert_array_equal(tokens[0, 0, :, 6], [1, 1, 0, 0])
    np.testing.assert_array_equal(tokens[0, 0, 2:, :6], 0.0)


def test_obstacle_tokens_report_surface_distance_and_absence():
    pos = np.array([[[0.0, 0.0, 1.0]]])
    columns = np.array([[[1.0, 0.0], [0.0, 2.0], [5.0, 5.0]]])
    present = np.array([[True, True, False]])
    tokens = obs_terms.obstacle_tokens(pos, columns, present, radius=0.2, m=3)
    np.testing.assert_allclose(tokens[0, 0, 0], [1.0, 0.0, 0.8, 1.0])
    np.testing.assert_allclose(tokens[0, 0, 1], [0.0, 2.0, 1.8, 1.0])
    np.testing.assert_allclose(tokens[0, 0, 2], [0.0, 0.0, obs_terms.FAR, 0.0])


def test_path_frame_tells_how_far_ahead_and_to_the_left_a_column_stands():
    pos = np.array([[[0.0, 0.0, 1.0]]])
    goal = np.array([[[0.0, 4.0, 1.0]]])  # flying along +y: left is -x
    columns = np.array([[[0.5, 1.0], [-1.0, -2.0], [5.0, 5.0]]])
    present = np.array([[True, True, False]])
    tokens = obs_terms.obstacle_tokens(pos, columns, present, 0.2, m=3, goal=goal)
    assert tokens.shape[-1] == obs_terms.obstacle_token_size(path=True) == 6
    np.testing.assert_allclose(tokens[0, 0, 0], [0.5, 1.0, np.hypot(0.5, 1) - 0.2, 1.0, -0.5, 1])
    np.testing.assert_allclose(tokens[0, 0, 1, 3:], [-2.0, 1.0, 1.0])  # behind, to the left
    np.testing.assert_allclose(tokens[0, 0, 2, 3:], [obs_terms.FAR, 0.0, 0.0])  # absent


def test_density_places_that_share_of_columns_and_parks_the_rest():
    env = make(3, evaluation=True, eval_density=0.5)
    np.testing.assert_array_equal(env.column_present.sum(axis=1), 18)
    z = env.engine.model_field("geom_pos")[:, env._column_geoms, 2]
    np.testing.assert_allclose(z[env.column_present], env.cfg.ceiling / 2)
    np.testing.assert_allclose(z[~env.column_present], PARKED_Z)
    # Different simulations get different layouts.
    assert not np.array_equal(env.column_present[0], env.column_present[1])


def test_starts_and_goals_are_separate_and_at_opposite_ends():
    env = make(4, num_drones=32, evaluation=True)
    pos = env.pos
    gaps = np.linalg.norm(pos[:, :, None] - pos[:, None], axis=-1) + np.eye(32) * 9
    assert gaps.min() > env.cfg.collision_distance
    assert np.all(pos[..., 1] < -3.0) and np.all(env.goal[..., 1] > 3.0)


@pytest.mark.parametrize("ends", [True, False])
def test_collisions_are_counted_and_spoil_success(ends):
    env = make(
        1,
        num_drones=2,
        evaluation=True,
        eval_density=0.0,
        episode_s=0.2,
        collision_ends_episode=ends,
    )
    qpos = env.engine.qpos.reshape(1, 2, 7)
    qpos[0, :, 0:3] = env.goal[0]
    qpos[0, 1, 0:3] = qpos[0, 0, 0:3] + [0.1, 0.0, 0.0]  # too close to drone 0
    env.engine.qpos[:] = qpos.reshape(1, -1)
    step = env.step(np.zeros((2, env.num_actions)))
    assert not step.terminated.any()  # evaluation: every drone's episode runs to the end
    np.testing.assert_array_equal(env.down[0], [ends, ends])
    while "episode" not in step.info:
        assert env.collided.all()
        step = env.step(np.zeros((2, env.num_actions)))
    np.testing.assert_array_equal(step.info["episode"]["collision"], 1.0)
    np.testing.assert_array_equal(step.info["episode"]["success"], 0.0)


def test_drones_at_their_goals_succeed():
    env = make(1, num_drones=3, evaluation=True, eval_density=0.0, episode_s=0.2)
    qpos = env.engine.qpos.reshape(1, 3, 7)
    qpos[0, :, 0:3] = env.goal[0]
    env.engine.qpos[:] = qpos.reshape(1, -1)
    step = env.step(np.zeros((3, env.num_actions)))
    while "episode" not in step.info:
        step = env.step(np.zeros((3, env.num_actions)))
    np.testing.assert_array_equal(step.info["episode"]["success"], 1.0)
    assert step.info["episode"]["time_to_goal_s"][0] < 0.1
    np.testing.assert_array_equal(step.info["episode"]["arrived_fraction"], 1.0)


def attention_policy(env: QuadSwarmEnv) -> ActorCritic:
    torch.manual_seed(0)
    model = ActorCritic(
        env.num_obs,
        env.num_critic_obs,
        env.action_groups,
        ModelConfig(attention_dim=16),
        env.observation_structure,
    )
    for p in model.parameters():
        p.data.add_(0.1 * torch.randn_like(p))
    return model


def test_attention_policy_ignores_the_order_of_neighbours():
    env = make(2, num_drones=8)
    model = attention_policy(env)
    obs, _ = env.observe()
    shuffled = obs.copy()
    k, size = env.cfg.neighbours, obs_terms.NEIGHBOUR_TOKEN
    first = obs_terms.SELF_SIZE_WITHOUT_ACTION + env.num_actions
    tokens = shuffled[:, first : first + k * size].reshape(-1, k, size)
    shuffled[:, first : first + k * size] = tokens[:, ::-1].reshape(-1, k * size)
    with torch.no_grad():
        a = model.act_inference(torch.from_numpy(obs))
        b = model.act_inference(torch.from_numpy(shuffled))
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_a_policy_for_8_drones_runs_32_and_exports_to_onnx(tmp_path):
    env8, env32 = make(1, num_drones=8), make(1, num_drones=32)
    model = attention_policy(env8)
    obs, _ = env32.observe()
    with torch.no_grad():
        expected = model.act_inference(torch.from_numpy(obs)).numpy()
    path = export_onnx(model, tmp_path / "swarm.onnx", {"task": "quad-swarm"})
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    actions = session.run(None, {"obs": obs})[0]
    assert actions.shape == (32, 3)
    np.testing.assert_allclose(actions, expected, atol=1e-5)


def test_in_training_a_crashed_drone_restarts_alone_and_spoils_the_swarm_success():
    env = make(2, num_drones=3, density=(0.0, 0.0), episode_s=0.5)
    qpos = env.engine.qpos.reshape(2, 3, 7)
    qpos[0, 1, 2] = 0.01  # drone 1 of simulation 0 hits the floor
    env.engine.qpos[:] = qpos.reshape(2, -1)
    step = env.step(np.zeros((6, env.num_actions)))
    np.testing.assert_array_equal(step.terminated, [False, True, False, False, False, False])
    np.testing.assert_array_equal(step.info["episode"]["crash"], [1.0])
    np.testing.assert_allclose(env.pos[0, 1], env.start_pos[0, 1])  # respawned
    assert env.episode_step[1] == 0 and env.episode_step[0] == 1
    while not step.truncated.any():
        step = env.step(np.zeros((6, env.num_actions)))
    assert step.truncated.all()
    np.testing.assert_array_equal(step.info["episode"]["crash"], [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(step.info["episode"]["success"][:3], 0.0)


def test_in_evaluation_a_crashed_drone_drops_out_and_the_swarm_is_judged_at_the_end():
    env = make(1, num_drones=3, evaluation=True, eval_density=0.0, episode_s=1.0)
    qpos = env.engine.qpos.reshape(1, 3, 7)
    qpos[0, :, 0:3] = env.goal[0]
    qpos[0, 1, 2] = 0.01  # drone 1 hits the floor beneath its goal
    env.engine.qpos[:] = qpos.reshape(1, -1)
    step = env.step(np.zeros((3, env.num_actions)))
    assert not step.terminated.any() and "episode" not in step.info
    np.testing.assert_array_equal(env.down[0], [False, True, False])
    assert step.reward[1] < step.reward[0]  # the crash penalty, once
    while "episode" not in step.info:
        assert env.pos[0, 1, 2] < 0.05  # motors off: it stays down
        step = env.step(np.zeros((3, env.num_actions)))
        assert step.reward[1] >= -1.0  # no further crash penalties
    assert step.truncated.all()
    episode = step.info["episode"]
    np.testing.assert_array_equal(episode["crash"], 1.0)
    np.testing.assert_array_equal(episode["success"], 0.0)
    np.testing.assert_allclose(episode["arrived_fraction"], 2 / 3)


def test_the_crash_penalty_lands_on_the_step_of_the_crash():
    """Rewards are computed before `terminated`: the crash must already be known then,
    or the penalty would fall on the respawned drone's first step."""
    env = make(1, num_drones=2, density=(0.0, 0.0))  # training: crashes end episodes
    qpos = env.engine.qpos.reshape(1, 2, 7)
    qpos[0, 1, 2] = 0.01  # drone 1 hits the floor
    env.engine.qpos[:] = qpos.reshape(1, -1)
    crash = env.reward_weights()["crash"]  # per step
    assert crash < 0
    step = env.step(np.zeros((2, env.num_actions)))
    assert step.terminated[1] and step.reward[1] < crash / 2 < step.reward[0]
    step = env.step(np.zeros((2, env.num_actions)))
    assert not step.terminated.any() and step.reward[1] > crash / 2


def test_clearance_rises_from_zero_at_the_margin_to_one_at_contact():
    from simreal.tasks.quad_swarm.rewards import clearance

    drone_gap = np.array([[1.0, 0.15 + 0.15, 0.15]])
    column_gap = np.array([[1.0, 1.0, 1.0]])
    np.testing.assert_allclose(clearance(drone_gap, column_gap, 0.15, 0.06, 0.3), [[0, 0.5, 1]])
    np.testing.assert_allclose(
        clearance(np.full((1, 1), 9.0), np.array([[0.06]]), 0.15, 0.06, 0.3), [[1.0]]
    )


def test_velocity_actions_fly_the_commanded_velocity_through_the_onboard_controller():
    env = make(1, num_drones=2, eval_density=0.0, evaluation=True, goal_prior_gain=0.0)
    start = env.pos.copy()
    for _ in range(30):  # zero command: hold station
        env.step(np.zeros((2, 3)))
    assert np.abs(env.pos - start).max() < 1e-3
    command = np.array([[0.5, 0.0, 0.0], [0.0, -0.4, 0.6]])
    for _ in range(45):
        env.step(command)
    expected = command * [env.cfg.max_speed_xy, env.cfg.max_speed_xy, env.cfg.max_speed_z]
    np.testing.assert_allclose(env.lin_vel[0], expected, atol=0.05)


def test_the_controller_recovers_a_tilted_tumbling_drone():
    env = make(1, num_drones=1, eval_density=0.0, evaluation=True, goal_prior_gain=0.0)
    qvel = env.engine.qvel.reshape(1, 1, 6)
    qvel[0, 0, 3:6] = [6.0, -4.0, 2.0]  # rad/s: a hard knock
    env.engine.qvel[:] = qvel.reshape(1, -1)
    for _ in range(60):
        step = env.step(np.zeros((1, 3)))
        assert not step.terminated.any()
    assert np.abs(env.lin_vel).max() < 0.05 and np.abs(env.ang_vel).max() < 0.05


def test_the_goal_prior_flies_a_lone_drone_home_and_actions_are_residuals_on_it():
    env = make(2, num_drones=1, eval_density=0.0, evaluation=True)
    env.goal[1, 0] = env.pos[1, 0] + [0.2, -0.1, 0.05]  # near: command in proportion
    gain, scale = env.cfg.goal_prior_gain, env.speed_scale
    np.testing.assert_allclose(env.velocity_command()[1, 0], gain * np.array([0.2, -0.1, 0.05]))
    np.testing.assert_array_equal(np.abs(env.velocity_command()[0, 0]) <= scale, True)
    env.action[1, 0] = [0.1, 0.0, 0.0]
    np.testing.assert_allclose(env.velocity_command()[1, 0, 0], 0.2 * gain + 0.1 * scale[0])
    env.action[0, 0] = [0.0, 5.0, 0.0]  # prior + residual still within the speed limits
    assert env.velocity_command()[0, 0, 1] == pytest.approx(scale[1])
    env.action[0, 0] = 0.0  # far from the goal: full speed towards it
    toward = env.goal[0, 0] - env.pos[0, 0]
    command = env.velocity_command()[0, 0]
    assert np.linalg.norm(command) == pytest.approx(scale[0])
    assert command @ toward == pytest.approx(scale[0] * np.linalg.norm(toward))
    env.action[0, 0] = -env.velocity_command()[0, 0] / scale  # a residual can stop it
    np.testing.assert_allclose(env.velocity_command()[0, 0], 0.0, atol=1e-12)
    env = make(4, num_drones=1, eval_density=0.0, evaluation=True)
    for _ in range(env.max_episode_steps - 1):
        step = env.step(np.zeros((4, 3)))
        assert not step.terminated.any()
    assert (env.goal_dist < env.cfg.goal_radius).all()


def test_rpm_actions_remain_available():
    env = make(1, num_drones=2, action_type="rpm")
    assert env.num_actions == 4 and set(env.action_groups) == {"motors"}
    step = env.step(np.zeros((2, 4)))
    assert step.reward.shape == (2,)


def test_an_unknown_action_type_is_refused_by_name():
    with pytest.raises(ValueError, match="action_type"):
        make(1, action_type="thrust")


def test_padding_tokens_change_nothing_and_flags_stay_unnormalized():
    """A drone alone in an empty room: every neighbour and obstacle token is padding, so
    whatever their other values, the policy acts the same."""
    env = make(1, num_drones=1, eval_density=0.0, evaluation=True)
    model = attention_policy(env)
    obs, _ = env.observe()
    noisy = obs.copy()
    first = obs_terms.SELF_SIZE_WITHOUT_ACTION + env.num_actions
    k, size = env.cfg.neighbours, obs_terms.NEIGHBOUR_TOKEN
    tokens = noisy[:, first : first + k * size].reshape(-1, k, size)
    tokens[..., :-1] = np.random.default_rng(0).normal(size=tokens[..., :-1].shape)
    noisy[:, first : first + k * size] = tokens.reshape(-1, k * size)
    assert (tokens[..., -1] == 0).all()
    with torch.no_grad():
        model.obs_normalizer.update(torch.from_numpy(np.repeat(noisy, 50, axis=0) * 3.0))
        a = model.act_inference(torch.from_numpy(obs))
        b = model.act_inference(torch.from_numpy(noisy))
    torch.testing.assert_close(a, b)


def test_airframe_randomization_acts_per_drone_and_spares_presence_flags():
    from simreal.tasks.quadrotor.config import QuadRandomization

    ranges = QuadRandomization(
        mass_scale=(0.7, 1.3), kf_scale=(0.8, 1.2), latency_steps=(2, 2), obs_noise_std=0.05
    )
    env = make(2, num_drones=3, randomization=ranges)
    mass = env.engine.model_field("body_mass")[:, env._airframe.bodies]
    assert np.unique(np.round(mass, 9)).size == 6  # every drone of every simulation its own
    ratio = mass / env._airframe.mass
    assert np.all((ratio >= 0.7) & (ratio <= 1.3))
    assert np.all((env.kf_scale >= 0.8) & (env.kf_scale <= 1.2))
    # two control steps of latency: the first two actions still fly the zero residual
    action = np.full((6, 3), 0.5)
    for _ in range(2):
        env.step(action)
        np.testing.assert_array_equal(env.delayed_action(), 0.0)
    env.step(action)
    np.testing.assert_array_equal(env.delayed_action(), 0.5)
    obs, clean = env.observe()
    structure = env.observation_structure
    start = structure["self"]
    flags = obs[:, start + 6 : start + 6 * 7 : 7]
    np.testing.assert_array_equal(flags, clean[:, start + 6 : start + 6 * 7 : 7])
    assert np.abs(obs - clean).max() > 0.0
    evaluation = make(2, num_drones=3, randomization=ranges, evaluation=True)
    np.testing.assert_array_equal(evaluation.kf_scale, 1.0)
    assert not evaluation.randomize


@pytest.mark.slow
def test_a_swarm_run_warm_starts_another_swarm_size_with_dagger(tmp_path, capsys):
    """The swarm's observation layout is built per instance (it depends on the config):
    --init-from between swarm runs checks the weight shapes instead, and the policy for
    8 drones carries over to 32 (the attention pools do not depend on N)."""
    from simreal.cli import main
    from simreal.policies.checkpoint import resolve_checkpoint

    small = ["--set", "train.eval_episodes=1", "--set", "train.num_envs=2"]
    dagger = ["--set", "train.algorithm=dagger", "--set", "train.dagger.steps_per_iteration=4"]
    first = tmp_path / "a"
    args = ["train", "quad-swarm", "--steps", "1", "--out", str(first), *small, *dagger]
    assert main(args) == 0, capsys.readouterr().err
    (source,) = (first / "quad-swarm").iterdir()
    second = tmp_path / "b"
    args = ["train", "quad-swarm", "--init-from", str(source), "--steps", "1"]
    args += ["--out", str(second), "--set", "task.num_drones=32", *small, *dagger]
    assert main(args) == 0, capsys.readouterr().err
    (run,) = (second / "quad-swarm").iterdir()
    assert resolve_checkpoint(run).exists()


def test_confidence_intervals_count_swarm_episodes_not_drone_rows():
    """Four swarms of 3 drones, three of them successful: the interval is Wilson's for 3
    of 4 (every drone row repeats its swarm's outcome), not for 9 of 12."""
    env = make(1, num_drones=3, evaluation=True)
    swarms = np.array([1.0, 0.0, 1.0, 1.0])
    ended = {
        "success": np.repeat(swarms, 3).tolist(),
        "collision": np.repeat(1.0 - swarms, 3).tolist(),
        "crash": [0.0] * 12,
    }
    summary = env.summarize_episodes(ended)
    np.testing.assert_allclose(summary["success_ci95"], wilson_interval(3, 4))
    np.testing.assert_allclose(summary["collision_ci95"], wilson_interval(1, 4))
    assert summary["crash_ci95"][0] == 0.0
    assert summary["success_ci95"] != list(wilson_interval(9, 12))


def test_wilson_interval_matches_tabulated_values():
    np.testing.assert_allclose(wilson_interval(5, 10), (0.2366, 0.7634), atol=1e-4)
    np.testing.assert_allclose(wilson_interval(0, 10), (0.0, 0.2775), atol=1e-4)
    np.testing.assert_allclose(wilson_interval(64, 64), (0.9434, 1.0), atol=1e-4)
    with pytest.raises(ValueError, match="wilson_interval"):
        wilson_interval(5, 4)


def test_goal_assignment_is_stated_in_the_evaluation_conditions():
    env = make(1, num_drones=2, evaluation=True, goal_assignment="random")
    conditions = env.evaluation_conditions()
    assert conditions["goal_assignment"] == "random" and conditions["num_drones"] == 2


def test_wind_and_eval_randomize_are_refused_in_the_swarm():
    with pytest.raises(ValueError, match="quad-swarm does not simulate them"):
        QuadSwarmConfig(randomization=QuadRandomization(wind_gust_std_n=0.01)).validate()
