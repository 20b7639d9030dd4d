"""Task registry: kebab-case names to a config class and an environment class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simreal.tasks.dex_track import DexTrackConfig, DexTrackEnv
from simreal.tasks.env import TaskEnv
from simreal.tasks.g1_force import G1ForceConfig, G1ForceEnv
from simreal.tasks.g1_pull import G1PullConfig, G1PullEnv
from simreal.tasks.lane_keep import LaneKeepConfig, LaneKeepEnv
from simreal.tasks.quad_hover import QuadHoverConfig, QuadHoverEnv
from simreal.tasks.quad_swarm import QuadSwarmConfig, QuadSwarmEnv
from simreal.tasks.quad_track import QuadTrackConfig, QuadTrackEnv


@dataclass(frozen=True)
class TaskSpec:
    name: str
    summary: str
    robot: str
    config_cls: type
    env_cls: type[TaskEnv]
    train_defaults: tuple[str, ...] = ()
    """`train.` overrides (KEY=VALUE) that suit this task better than the generic defaults;
    the user's --set and flags still win."""


G1_TRAIN_DEFAULTS = (
    "num_envs=256",
    "ppo.num_steps_per_env=24",
    "model.actor_hidden=[256, 128]",
    "model.critic_hidden=[256, 128]",
    "model.init_std=0.5",
    "eval_interval=20",
)
"""Training defaults of the G1 tasks: one network shape, so policies carry over between them."""

TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(
            "quad-hover",
            "Crazyflie 2.x rises from the ground and holds (0, 0, 1) with per-motor RPM "
            "control (HoverAviary specification, 240 Hz physics, 30 Hz control, 8 s).",
            "crazyflie",
            QuadHoverConfig,
            QuadHoverEnv,
        ),
        TaskSpec(
            "quad-track",
            "Crazyflie follows figure-eights, circles and random smooth curves with a "
            "preview of the reference; metrics position RMSE and max error (m).",
            "crazyflie",
            QuadTrackConfig,
            QuadTrackEnv,
        ),
        TaskSpec(
            "quad-swarm",
            "N Crazyflies (2-32) cross a room of columns to individual goals with one shared "
            "attention policy; curriculum on obstacle density; success, collision rate, time.",
            "crazyflie",
            QuadSwarmConfig,
            QuadSwarmEnv,
            train_defaults=(
                # 32 simulations of 8 drones: 256 policy rows, 8k samples per update, and
                # 8 epochs at 1e-3: on this CPU the update, not the simulation, is the cost,
                # and more updates per sample learnt faster than more samples per update.
                "num_envs=32",
                "ppo.num_epochs=8",
                "torch_threads=2",  # attention updates gain from a second core
                "model.attention_dim=32",
                # Velocity actions saturate at +-1 when a drone races for its goal, so an
                # entropy bonus inflates the std at no cost there (1.2 after 10 M steps
                # with 0.003) until the noise crashes drones among the columns: no entropy
                # bonus, std 0.3 (+-0.45 m/s), and a fixed rate (the adaptive one swung
                # between 1e-5 and 1e-2 on the noisy KL of the attention policy).
                "model.init_std=0.3",
                "ppo.entropy_coef=0.0",
                "ppo.schedule=fixed",
                "ppo.learning_rate=0.001",
            ),
        ),
        TaskSpec(
            "g1-force",
            "Unitree G1 (29 DoF) stands and steps under random pushes and pulls on torso and "
            "hands up to 300 N (curriculum), leaning into them (FAT2 reward); metrics "
            "max_push_resisted_n, fall_rate.",
            "g1",
            G1ForceConfig,
            G1ForceEnv,
            train_defaults=G1_TRAIN_DEFAULTS,
        ),
        TaskSpec(
            "g1-pull",
            "Unitree G1 holds a rope looped through a cart on rails and tows it walking backward "
            "or forward; rolling resistance rises with a fall-rate curriculum; metrics "
            "peak_pull_force_backward_n, peak_pull_force_forward_n, fall_rate.",
            "g1",
            G1PullConfig,
            G1PullEnv,
            # g1-force's network and rollout, so its policies warm-start this task.
            train_defaults=(*G1_TRAIN_DEFAULTS, "eval_episodes=8"),
        ),
        TaskSpec(
            "dex-track",
            "Allegro-like hand (22 actions: wrist 6, fingers 16) makes an object follow "
            "hand-object references (lift, rotate, translate, place, regrasp; 8 object types) "
            "as a residual on the reference; metrics success_rate, object errors on held-out "
            "references.",
            "allegro",
            DexTrackConfig,
            DexTrackEnv,
            train_defaults=(
                "num_envs=128",
                "eval_episodes=64",
                "eval_interval=20",
                "ppo.num_steps_per_env=32",
                # 22 action dimensions: the adaptive-KL rate sank to its floor (1e-5) and
                # stayed there in the first runs; a fixed rate keeps the actor learning.
                "ppo.schedule=fixed",
                "ppo.learning_rate=0.0003",
                "model.actor_hidden=[256, 128]",
                "model.critic_hidden=[256, 128]",
                "model.init_std=0.2",
            ),
        ),
        TaskSpec(
            "lane-keep",
            "A car keeps its lane on procedural roads (curves, S-bends, obstacles, friction) "
            "from lane geometry, 180-beam LiDAR, a PID correction and scene captions; "
            "metrics lateral_rmse_m, collision_rate over 100 held-out roads.",
            "car",
            LaneKeepConfig,
            LaneKeepEnv,
            train_defaults=(
                "num_envs=64",
                "eval_episodes=16",
                "model.actor_hidden=[128, 128]",
                "model.critic_hidden=[128, 128]",
                "ppo.num_steps_per_env=32",
                "ppo.gamma=0.98",
            ),
        ),
    )
}


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; registered tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name]


def make_env(name: str, cfg: Any, num_envs: int, engine: str = "mjbatch", seed: int = 0) -> TaskEnv:
    return get_task(name).env_cls(cfg, num_envs=num_envs, engine=engine, seed=seed)
