"""`task.actuation=native`: MuJoCo's own motors (dcmotor envelope, ctrl delay) step the same
G1 as the default per-substep path, to rounding, through randomized latencies (also under
one physics step), resets and both G1 tasks; other engines are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from simreal.tasks import get_task, make_env


def _pair(task: str, envs: int = 8, evaluation: bool = False, seed: int = 3):
    built = []
    for actuation in ("substeps", "native"):
        cfg = get_task(task).config_cls()
        cfg.actuation, cfg.evaluation = actuation, evaluation
        built.append(make_env(task, cfg, envs, seed=seed))
    return built


@pytest.mark.parametrize("task", ["g1-force", "g1-pull"])
@pytest.mark.parametrize("evaluation", [False, True])
def test_native_motors_step_the_same_robot(task, evaluation):
    default, native = _pair(task, evaluation=evaluation)
    rng = np.random.default_rng(0)
    default.reset(), native.reset()
    late = native.latency_substeps
    if not evaluation:  # the randomized latencies include the hand-blended case
        assert ((late > 0) & (late < 1)).any() and (late >= 1).any()
    for _ in range(10):
        action = (0.5 * rng.normal(size=(default.num_envs, 29))).astype(np.float32)
        a, b = default.step(action), native.step(action)
        np.testing.assert_allclose(b.obs, a.obs, atol=1e-6)
        np.testing.assert_allclose(b.reward, a.reward, atol=1e-6)
    np.testing.assert_allclose(native.engine.qpos, default.engine.qpos, atol=1e-9)
    assert native.evaluation_conditions()["actuation"] == "native"


def test_a_reset_simulation_forgets_the_last_episodes_delayed_commands():
    """After a reset the native motors' ctrl history holds the reset command, as the default
    path's previous target does; else a delayed read would act on the last episode's."""
    default, native = _pair("g1-force")
    rng = np.random.default_rng(1)
    default.reset(), native.reset()
    slow = np.flatnonzero(native.latency_substeps >= 1.0)
    assert slow.size
    for _ in range(5):
        action = (0.5 * rng.normal(size=(default.num_envs, 29))).astype(np.float32)
        default.step(action), native.step(action)
    ids = slow[:2]
    default._reset_sims(ids), native._reset_sims(ids)
    for _ in range(3):
        action = (0.5 * rng.normal(size=(default.num_envs, 29))).astype(np.float32)
        default.step(action), native.step(action)
    np.testing.assert_allclose(native.engine.qpos, default.engine.qpos, atol=1e-9)


def test_native_actuation_is_refused_off_mjbatch_and_checked():
    cfg = get_task("g1-force").config_cls()
    cfg.actuation = "native"
    with pytest.raises(ValueError, match=r"actuation='native'.*mjbatch"):
        get_task("g1-force").env_cls(cfg, num_envs=1, engine="pybullet")
    cfg.actuation = "motors"
    with pytest.raises(ValueError, match="actuation 'motors'"):
        cfg.validate()
