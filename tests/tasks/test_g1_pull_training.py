"""`g1-pull` training: the load curricula (fall-rate, per simulation, resumed) and warm
starts from g1-force, between g1-pull runs and back to g1-force."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from simreal.cli import main
from simreal.policies.checkpoint import load_actor_critic, load_checkpoint, resolve_checkpoint
from simreal.policies.config import ModelConfig
from simreal.policies.models import ActorCritic
from simreal.tasks import get_task, make_env
from simreal.tasks.curriculum import FallRateCurriculum, PerSimulationCurriculum
from simreal.tasks.g1_force import G1ForceConfig
from simreal.tasks.g1_pull import G1PullConfig, G1PullEnv, LoadConfig
from simreal.training import warm_start_weights


def make(num_envs: int = 4, **fields) -> G1PullEnv:
    return make_env("g1-pull", G1PullConfig(**fields), num_envs=num_envs, seed=0)


def test_training_resistance_follows_the_fall_rate_curriculum():
    env = make(8)
    env.reset()
    load = env.cfg.load
    low, high = load.resistance_spread
    level = env.curriculum.level
    assert ((env.resistance >= low * level) & (env.resistance <= high * level)).all()
    np.testing.assert_array_equal(
        env.engine.model_field("dof_frictionloss")[:, env.cart_dof], env.resistance
    )
    env.curriculum.record(np.zeros(8, bool), window=8)
    assert env.curriculum.level == level + load.resistance_step_n
    env.reset()
    assert env.resistance.max() > high * level  # the new level reaches the loads


def test_fall_rate_curriculum_moves_within_its_range():
    c = FallRateCurriculum(10.0, 30.0, 10.0, raise_below=0.2, lower_above=0.5)
    c.record(np.zeros(3, bool), window=4)
    assert c.level == 10.0  # the window is not full yet
    c.record(np.zeros(1, bool), window=4)
    assert c.level == 20.0
    for _ in range(3):
        c.record(np.zeros(4, bool), window=4)
    assert c.level == 30.0
    c.record(np.array([True, True, True, False]), window=4)
    assert c.level == 20.0
    c.record(np.array([True, False, False, False]), window=4)  # 25 %: stays
    assert c.level == 20.0


def test_per_simulation_curriculum_moves_each_simulation_alone():
    c = PerSimulationCurriculum(20.0, 40.0, 10.0, num_sims=3)
    c.record(np.array([0, 2]), np.array([False, True]))
    np.testing.assert_array_equal(c.levels, [30.0, 20.0, 20.0])  # 2 failed at the floor
    c.record(np.array([0, 0]), np.array([False, False]))
    c.record(np.array([0]), np.array([False]))
    assert c.levels[0] == 40.0 and c.level == pytest.approx(80.0 / 3)
    c.restore(35.0)
    np.testing.assert_array_equal(c.levels, [35.0, 35.0, 35.0])
    c.restore(np.array([20.0, 30.0, 90.0]))  # a checkpoint's own levels, clipped
    np.testing.assert_array_equal(c.levels, [20.0, 30.0, 40.0])
    c.restore(np.array([20.0, 30.0]))  # another simulation count: their mean
    np.testing.assert_array_equal(c.levels, [25.0, 25.0, 25.0])


def test_per_simulation_load_levels_reach_the_carts():
    env = make(4, load=LoadConfig(curriculum="per_sim", resistance_spread=(1.0, 1.0)))
    env.reset()
    assert isinstance(env.curriculum, PerSimulationCurriculum)
    env.speed[:] = 0.0  # standing episodes: success means not falling
    env.episode_step[:] = env.max_episode_steps  # time limit: no fall
    env.episode_metrics(np.array([1, 3]))
    env.episode_step[:] = 10  # an episode ending early is a fall
    env.episode_metrics(np.array([0]))
    step = env.cfg.load.resistance_step_n
    np.testing.assert_allclose(env.curriculum.levels, 20.0 + step * np.array([0, 1, 0, 1]))
    env.reset()
    np.testing.assert_allclose(env.resistance, env.curriculum.levels)
    with pytest.raises(ValueError, match=r"load\.curriculum"):
        LoadConfig(curriculum="global").validate()


def test_a_resumed_per_simulation_run_gets_every_simulation_its_own_level_back():
    env = make(3, load=LoadConfig(curriculum="per_sim"))
    env.curriculum.levels[:] = [20.0, 50.0, 80.0]
    state = env.curriculum_checkpoint()
    assert state["load_resistance_n"] == pytest.approx(50.0)
    resumed = make(3, load=LoadConfig(curriculum="per_sim"))
    resumed.restore_curriculum(state)
    np.testing.assert_array_equal(resumed.curriculum.levels, [20.0, 50.0, 80.0])
    assert set(resumed.curriculum_state()) == {"load_resistance_n"}  # what is logged
    fall_rate = make(3)
    fall_rate.restore_curriculum(state)
    assert fall_rate.curriculum.level == pytest.approx(50.0)


@pytest.fixture(scope="module")
def force_run(tmp_path_factory) -> Path:
    """A g1-force run of one update (git keeps no checkpoints): a warm start's source."""
    out = tmp_path_factory.mktemp("warm")
    args = ["train", "g1-force", "--envs", "2", "--steps", "1", "--out", str(out)]
    assert main([*args, "--set", "train.eval_episodes=2"]) == 0
    (run,) = (out / "g1-force").iterdir()
    return run


def source_model_cfg(run: Path) -> ModelConfig:
    return load_checkpoint(resolve_checkpoint(run))["model_cfg"]


def test_warm_started_policy_acts_like_g1_force_when_the_new_terms_are_zero(force_run):
    env = make(4)
    ckpt, weights = warm_start_weights(force_run, env, source_model_cfg(force_run), "g1-pull")
    assert ckpt == resolve_checkpoint(force_run)
    source = load_actor_critic(ckpt)
    model = ActorCritic(
        env.num_obs, env.num_critic_obs, env.action_groups, source_model_cfg(force_run)
    )
    model.load_state_dict(weights)
    model.eval()
    env.reset()
    for _ in range(3):
        step = env.step(np.random.default_rng(0).uniform(-0.3, 0.3, (4, 29)))
    obs, critic = torch.from_numpy(step.obs), torch.from_numpy(step.critic_obs)
    n_force, n_force_critic = 93, source.critic_obs_normalizer.mean.numel()
    zero_new = obs.clone()
    zero_new[:, 93:] = 0.0
    with torch.inference_mode():
        expected = source.act_inference(obs[:, :93])
        np.testing.assert_allclose(model.act_inference(zero_new), expected, atol=1e-6)
        # The new columns start at zero weight: even a live command changes nothing yet.
        np.testing.assert_allclose(model.act_inference(obs), expected, atol=1e-6)
        critic_zero = critic.clone()
        critic_zero[:, n_force_critic:] = 0.0
        np.testing.assert_allclose(
            model.value(critic_zero), source.value(critic[:, :n_force_critic]), atol=1e-5
        )
    norm, src_norm = model.obs_normalizer, source.obs_normalizer
    torch.testing.assert_close(norm.mean[:n_force], src_norm.mean)
    torch.testing.assert_close(norm.var[:n_force], src_norm.var)
    assert (norm.mean[n_force:] == 0).all() and (norm.var[n_force:] == 1).all()
    first = model.actor.nets["lower"][0].weight
    assert (first[:, n_force:] == 0).all()
    torch.testing.assert_close(first[:, :n_force], source.actor.nets["lower"][0].weight)


def test_a_force_oracle_actor_warm_starts_from_g1_force_with_the_force_unweighted(force_run):
    """g1-force's diagnostic `actor_observes_force` appends the true torso force (heading
    frame) to the actor's observation only; a warm start from a run without it lines the
    terms up by name and starts the new input at zero weight."""
    from simreal.tasks.g1_force.env import TORSO_FORCE_ORACLE

    cfg = G1ForceConfig(actor_observes_force=True, randomize=False)
    env = make_env("g1-force", cfg, num_envs=3, seed=0)
    plain = make_env("g1-force", G1ForceConfig(randomize=False), num_envs=3, seed=0)
    assert env.observation_layout == (*plain.observation_layout, ("torso_force_oracle", 3))
    assert env.num_critic_obs == plain.num_critic_obs  # the critic had it already
    env.reset()
    env.external_force[:] = 0.0
    env.external_force[:, 0] = [[-60.0, 0.0, 0.0], [0.0, 25.0, 0.0], [10.0, 0.0, -5.0]]
    obs, critic = env.observe()
    heading = env.to_heading(env.external_force)[:, 0]
    np.testing.assert_allclose(obs[:, -3:], heading, atol=1e-4)
    np.testing.assert_allclose(obs[:, -3:], TORSO_FORCE_ORACLE.func(env), atol=1e-4)
    assert np.abs(obs[:, -3:]).max() > 20.0  # a live input, not zeros
    assert obs.shape[1] == plain.num_obs + 3 and critic.shape[1] == plain.num_critic_obs

    ckpt, weights = warm_start_weights(force_run, env, source_model_cfg(force_run), "g1-force")
    source = load_actor_critic(ckpt)
    model = ActorCritic(
        env.num_obs, env.num_critic_obs, env.action_groups, source_model_cfg(force_run)
    )
    model.load_state_dict(weights)
    model.eval()
    obs = torch.from_numpy(obs)
    with torch.inference_mode():  # the force changes nothing until training weighs it
        np.testing.assert_allclose(
            model.act_inference(obs), source.act_inference(obs[:, :-3]), atol=1e-6
        )
    assert (model.actor.nets["lower"][0].weight[:, -3:] == 0).all()


def test_warm_start_names_the_layer_when_architectures_disagree(force_run):
    env = make(1)
    coupled = dataclasses.replace(source_model_cfg(force_run), arch="coupled")
    with pytest.raises(ValueError, match=r"layer 'actor\.nets\.\w+\.0\.weight'.*coupled"):
        warm_start_weights(force_run, env, coupled, "g1-pull")
    wider = dataclasses.replace(source_model_cfg(force_run), actor_hidden=(256, 64))
    with pytest.raises(ValueError, match=r"layer 'actor\.nets\.lower\.2\.weight': source shape"):
        warm_start_weights(force_run, env, wider, "g1-pull")
    hover = make_env("quad-hover", get_task("quad-hover").config_cls(), num_envs=1)
    with pytest.raises(ValueError, match="action groups"):
        warm_start_weights(force_run, hover, source_model_cfg(force_run), "quad-hover")
    with pytest.raises(FileNotFoundError, match="no such run directory"):
        warm_start_weights(force_run / "nope", env, source_model_cfg(force_run), "g1-pull")


def test_train_init_from_through_the_cli(force_run, tmp_path, capsys):
    out = tmp_path / "runs"
    code = main(
        [
            "train",
            "g1-pull",
            "--init-from",
            str(force_run),
            "--envs",
            "4",
            "--steps",
            "1",
            "--out",
            str(out),
            "--set",
            "train.eval_episodes=2",
        ]
    )
    assert code == 0, capsys.readouterr().err
    (run,) = (out / "g1-pull").iterdir()
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["init_from"] == str(resolve_checkpoint(force_run))
    trained = load_actor_critic(resolve_checkpoint(run))
    source = load_actor_critic(resolve_checkpoint(force_run))
    assert trained.obs_normalizer.mean.numel() == 93 + 4 + 2  # + command, gait clock
    # One PPO iteration moved the weights a little from the source's, not from scratch.
    w, w0 = trained.actor.nets["waist"][0].weight[:, :93], source.actor.nets["waist"][0].weight
    assert (w - w0).abs().max() < 0.1 * w0.abs().max()
    capsys.readouterr()
    eval_json = tmp_path / "eval.json"
    args = ["eval", str(run), "--episodes", "2", "--set", "task.eval_episode_s=3.5"]
    assert main([*args, "--json", str(eval_json)]) == 0
    metrics = json.loads(eval_json.read_text())
    for key in ("peak_pull_force_backward_n", "peak_pull_force_forward_n", "fall_rate"):
        assert metrics[key] >= 0.0
    assert metrics["episodes"] == 2 and "return_mean" in metrics
    code = main(
        [
            "train",
            "g1-pull",
            "--init-from",
            str(force_run),
            "--arch",
            "coupled",
            "--envs",
            "4",
            "--steps",
            "1",
            "--out",
            str(tmp_path / "bad"),
        ]
    )
    assert code == 2
    assert "actor.nets" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()  # checked before any run directory is made


def test_a_warm_start_between_g1_pull_runs_goes_on_at_the_source_load(tmp_path, capsys):
    """A fine-tune (e.g. with a calibration overlay) starts at the load the source reached."""
    out = tmp_path / "runs"
    tiny = ["--envs", "2", "--steps", "1", "--out", str(out), "--set", "train.eval_episodes=2"]
    assert main(["train", "g1-pull", *tiny]) == 0, capsys.readouterr().err
    (source,) = (out / "g1-pull").iterdir()
    ckpt = resolve_checkpoint(source)
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    state["curriculum"] = {"load_resistance_n": 80.0}
    torch.save(state, ckpt)
    out = tmp_path / "warm"
    args = ["train", "g1-pull", "--init-from", str(source), "--envs", "2", "--steps", "1"]
    args += ["--out", str(out), "--set", "task.load.curriculum=per_sim"]
    assert main([*args, "--set", "train.eval_episodes=2"]) == 0, capsys.readouterr().err
    (run,) = (out / "g1-pull").iterdir()
    saved = torch.load(resolve_checkpoint(run), map_location="cpu", weights_only=False)
    assert saved["curriculum"]["load_resistance_n"] == pytest.approx(80.0)


def test_a_g1_force_warm_start_from_g1_pull_acts_as_g1_pull_with_its_extra_terms_at_zero(
    tmp_path, capsys
):
    """g1-force observes a prefix of g1-pull's observation: the dropped terms' columns go
    and what they fed the first layer at 0 (no command, no gait clock) moves into its
    bias, so the warm-started policy stands as g1-pull stands."""
    out = tmp_path / "runs"
    tiny = ["--envs", "2", "--steps", "1", "--out", str(out), "--set", "train.eval_episodes=2"]
    assert main(["train", "g1-pull", *tiny]) == 0, capsys.readouterr().err
    (source,) = (out / "g1-pull").iterdir()
    ckpt = resolve_checkpoint(source)
    state = load_checkpoint(ckpt)
    # Make the dropped terms matter: non-trivial statistics and weights on their columns.
    state["model"]["obs_normalizer.mean"][93:] = torch.linspace(0.2, 0.9, 6)
    state["model"]["obs_normalizer.var"][93:] = torch.linspace(0.5, 2.0, 6)
    for name in ("lower", "waist", "upper"):
        state["model"][f"actor.nets.{name}.0.weight"][:, 93:] = 0.3
    # Saved as the runner saves it: the model config as plain data (an object is refused).
    torch.save({**state, "model_cfg": dataclasses.asdict(state["model_cfg"])}, ckpt)
    force_env = make_env("g1-force", G1ForceConfig(), 3)
    _, weights = warm_start_weights(source, force_env, state["model_cfg"], "g1-force")
    force_model = ActorCritic(
        93, force_env.num_critic_obs, force_env.action_groups, state["model_cfg"]
    )
    force_model.load_state_dict(weights)
    pull_model = load_actor_critic(ckpt)
    obs = torch.randn(5, 93)
    with torch.inference_mode():
        expected = pull_model.act_inference(torch.cat([obs, torch.zeros(5, 6)], dim=1))
        torch.testing.assert_close(force_model.act_inference(obs), expected, rtol=1e-5, atol=1e-5)
        moved = pull_model.act_inference(torch.cat([obs, torch.ones(5, 6)], dim=1))
    assert (moved - expected).abs().max() > 1e-3  # the folded terms did matter
