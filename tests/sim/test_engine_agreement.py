"""The same task, the same state, the same open-loop actions: engines agree.

Tasks run unchanged on every installed engine (they only see simreal.sim's arrays);
here `quad-hover` and the G1 standing under PD (`g1-force`, evaluation config, no push)
are driven by one open-loop action sequence on mjbatch (the reference), MuJoCo Warp and
Genesis, and the trajectories (qpos at every control step) are compared.

Documented tolerances (TOLERANCES: largest difference over the horizon; measured when
they were set, `python` on this CPU):
- MuJoCo Warp runs MuJoCo's own algorithm in float32: within float32 rounding
  (quad-hover 5.8e-7 m, 2.6e-7 quaternion; G1 1.8e-7 m, 6.5e-7 rad).
- Genesis integrates rigid bodies its own way in float32: free flight agrees to float32
  rounding (quad-hover 5.8e-7 m, 1.1e-7); contacts differ, so the standing G1 (feet on
  the floor) agrees to 1.8 mm base position, 0.0089 quaternion and 0.022 rad joints over
  0.5 s. A drone started on the floor differs too (8 cm after 1 s of take-off was
  measured), so the quad-hover comparison starts in the air.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simreal.sim import installed_engines
from simreal.tasks import TASKS, get_task, make_env

pytestmark = pytest.mark.slow  # every task on the GPU engines, run on the CPU: minutes

N = 4
OTHERS = [e for e in installed_engines() if e in ("warp", "genesis")]

QUAD_HORIZON_STEPS = 15
"""0.5 s of quad-hover control (30 Hz): open loop, a drone soon tips over."""
G1_HORIZON_STEPS = 25
"""0.5 s of G1 control (50 Hz)."""

TOLERANCES = {
    ("quad-hover", "warp"): {"position_m": 1e-5, "quat": 1e-4},
    ("quad-hover", "genesis"): {"position_m": 1e-5, "quat": 1e-4},
    ("g1-force", "warp"): {"position_m": 1e-5, "quat": 1e-5, "joint_rad": 1e-5},
    ("g1-force", "genesis"): {"position_m": 5e-3, "quat": 3e-2, "joint_rad": 5e-2},
}


def task_config(task: str):
    cfg = dataclasses.replace(get_task(task).config_cls(), evaluation=True)
    if task == "g1-force":  # standing under PD: the evaluation push never comes
        cfg = dataclasses.replace(cfg, eval_push=dataclasses.replace(cfg.eval_push, onset_s=100.0))
        # Dry joint friction is a constraint that both solvers stop after the model's 10
        # Newton iterations; MuJoCo Warp's iterate then differs from MuJoCo's by up to
        # 0.02 rad over this horizon (0.3 N m on every joint). The comparison is of the
        # engines' dynamics, so the joints here have viscous damping but no dry friction.
        dry = dataclasses.replace(cfg.randomization, joint_frictionloss_n_m=(0.0, 0.0))
        cfg = dataclasses.replace(cfg, randomization=dry)
    return cfg


AMPLITUDE = {"quad-hover": 0.02, "g1-force": 0.3}
"""Open-loop action amplitude: the drone stays inside its tilt limit for the horizon."""


def open_loop_actions(steps: int, num_actions: int, dt: float, amplitude: float) -> np.ndarray:
    """(steps, N, num_actions) sinusoids of `amplitude`, a different phase per simulation."""
    t = np.arange(steps)[:, None, None] * dt
    k = np.arange(num_actions)[None, None, :]
    phase = np.arange(N)[None, :, None]
    return (amplitude * np.sin(2 * np.pi * (1.0 + 0.1 * k) * t + phase)).astype(np.float32)


def trajectory(task: str, engine: str) -> np.ndarray:
    """qpos (steps, N, nq) under the open-loop actions, from the task's evaluation start
    (quad-hover: at rest at the target, 1 m up, clear of the floor)."""
    env = make_env(task, task_config(task), N, engine, seed=0)
    env.reset()
    steps = G1_HORIZON_STEPS
    if task == "quad-hover":
        steps = QUAD_HORIZON_STEPS
        qpos = np.tile([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], (N, 1))
        env.engine.reset(np.arange(N), qpos, np.zeros((N, 6)))
    out = []
    for action in open_loop_actions(steps, env.num_actions, env.control_dt, AMPLITUDE[task]):
        result = env.step(action)
        assert not result.terminated.any() and not result.truncated.any()
        out.append(env.engine.qpos.copy())
    return np.asarray(out, dtype=float)


_REFERENCE: dict[str, np.ndarray] = {}


@pytest.mark.parametrize("engine", OTHERS)
@pytest.mark.parametrize("task", ["quad-hover", "g1-force"])
def test_trajectories_agree_with_mjbatch(task, engine):
    if task not in _REFERENCE:
        _REFERENCE[task] = trajectory(task, "mjbatch")
    ref = _REFERENCE[task]
    got = trajectory(task, engine)
    assert np.ptp(ref[:, :, 2]) > 1e-3  # the commands really move the robot
    tol = TOLERANCES[task, engine]
    diff = np.abs(got - ref)
    assert diff[..., 0:3].max() <= tol["position_m"]
    assert diff[..., 3:7].max() <= tol["quat"]
    if "joint_rad" in tol:
        assert diff[..., 7:].max() <= tol["joint_rad"]


FEATURES_LACKING = {
    ("quad-swarm", "genesis"): "geom_pos",
    ("g1-pull", "warp"): "sensor",  # the rope tension is a MuJoCo sensor
    ("g1-pull", "genesis"): "tendons",  # the rope is a MuJoCo tendon
    ("g1-walk", "genesis"): "height field",  # the rough ground is a MuJoCo height field
    # fingertip touch and position are MuJoCo sensors
    **{("dex-track", engine): "sensor" for engine in ("pybullet", "warp", "genesis")},
}
"""Task and engine pairs that cannot run, and the feature the error must name."""


BUILT_ABOVE = {("g1-force", "genesis")}
"""Pairs `test_trajectories_agree_with_mjbatch` already builds and steps: Genesis takes
40-100 s on the CPU to build the G1's scene, and CI has a 30-minute budget."""


@pytest.mark.parametrize("engine", OTHERS)
@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_runs_unchanged_or_says_what_it_lacks(task, engine):
    if (task, engine) in BUILT_ABOVE:
        pytest.skip(f"{task} on {engine}: built and stepped by the trajectory comparison")
    cfg = get_task(task).config_cls()
    lacking = FEATURES_LACKING.get((task, engine))
    if lacking:
        with pytest.raises(ValueError, match=rf"(?is){lacking}.*{engine}|{engine}.*{lacking}"):
            env = make_env(task, cfg, 2, engine, seed=1)
            env.reset()
        return
    env = make_env(task, cfg, 2, engine, seed=1)
    obs, critic = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(5):
        result = env.step(rng.uniform(-1, 1, (env.num_envs, env.num_actions)).astype(np.float32))
        assert np.isfinite(result.obs).all() and np.isfinite(result.reward).all()
    assert obs.shape == (env.num_envs, env.num_obs)
    assert critic.shape == (env.num_envs, env.num_critic_obs)
