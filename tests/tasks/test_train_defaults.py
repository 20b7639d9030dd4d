"""Typed per-task training defaults (tasks/train_defaults.py) and their precedence."""

from __future__ import annotations

from simreal.config import apply_overrides
from simreal.policies.config import TrainConfig
from simreal.tasks import get_task
from simreal.tasks.train_defaults import TrainDefaults


def test_defaults_become_overrides_of_the_training_config_sections():
    defaults = TrainDefaults(num_envs=32, actor_hidden=(256, 128), schedule="fixed", gamma=0.98)
    assert defaults.overrides() == (
        "num_envs=32",
        "model.actor_hidden=[256, 128]",
        'ppo.schedule="fixed"',
        "ppo.gamma=0.98",
    )
    cfg = apply_overrides(TrainConfig(), list(defaults.overrides()), "train.")
    assert cfg.num_envs == 32 and cfg.model.actor_hidden == (256, 128)
    assert cfg.ppo.schedule == "fixed" and cfg.ppo.gamma == 0.98
    assert cfg.ppo.num_epochs == TrainConfig().ppo.num_epochs  # unset: the generic value


def test_a_tasks_defaults_apply_and_the_users_settings_still_win():
    spec = get_task("quad-swarm")
    cfg = apply_overrides(TrainConfig(), list(spec.train_defaults), "train.")
    assert (cfg.num_envs, cfg.ppo.num_epochs, cfg.model.init_std) == (32, 8, 0.3)
    assert cfg.ppo.learning_rate == 0.001 and cfg.ppo.entropy_coef == 0.0
    user = apply_overrides(cfg, ["ppo.num_epochs=3"], "train.")
    assert user.ppo.num_epochs == 3
    pull, force = get_task("g1-pull").training, get_task("g1-force").training
    assert pull.eval_episodes == 8 and pull.actor_hidden == force.actor_hidden == (256, 128)
    assert get_task("quad-hover").train_defaults == ()
