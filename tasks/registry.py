"""Task registry: kebab-case names to a config class and an environment class."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simreal.tasks.dex_track import DexTrackConfig, DexTrackEnv
from simreal.tasks.dex_track.config import TRAIN_DEFAULTS as DEX_TRAIN
from simreal.tasks.env import TaskEnv
from simreal.tasks.g1.config import G1_TRAIN_DEFAULTS
from simreal.tasks.g1_force import G1ForceConfig, G1ForceEnv
from simreal.tasks.g1_pull import G1PullConfig, G1PullEnv
from simreal.tasks.g1_pull.config import TRAIN_DEFAULTS as PULL_TRAIN
from simreal.tasks.g1_walk import G1WalkConfig, G1WalkEnv
from simreal.tasks.g1_walk.config import TRAIN_DEFAULTS as WALK_TRAIN
from simreal.tasks.lane_keep import LaneKeepConfig, LaneKeepEnv
from simreal.tasks.lane_keep.config import TRAIN_DEFAULTS as LANE_TRAIN
from simreal.tasks.quad_hover import QuadHoverConfig, QuadHoverEnv
from simreal.tasks.quad_replan import QuadReplanConfig, QuadReplanEnv
from simreal.tasks.quad_swarm import QuadSwarmConfig, QuadSwarmEnv
from simreal.tasks.quad_swarm.config import TRAIN_DEFAULTS as SWARM_TRAIN
from simreal.tasks.quad_track import QuadTrackConfig, QuadTrackEnv
from simreal.tasks.train_defaults import TrainDefaults


@dataclass(frozen=True)
class TaskSpec:
    name: str
    summary: str
    robot: str
    config_cls: type
    env_cls: type[TaskEnv]
    training: TrainDefaults = field(default_factory=TrainDefaults)
    """Training settings that suit this task better than the generic defaults, declared
    next to its config; the user's --set and flags still win."""

    @property
    def train_defaults(self) -> tuple[str, ...]:
        """`training` as `train.` overrides (KEY=VALUE), applied before the user's."""
        return self.training.overrides()


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
            "quad-replan",
            "Crazyflie minimum-snap plans through 8 random waypoints: the policy allocates "
            "the segment times, judged at low (analytic feasibility) or medium (mjbatch "
            "flight) fidelity; metrics completion_rate, flight_time_s, plan_latency_p50_ms.",
            "crazyflie",
            QuadReplanConfig,
            QuadReplanEnv,
        ),
        TaskSpec(
            "quad-swarm",
            "N Crazyflies (2-32) cross a room of columns to individual goals with one shared "
            "attention policy; curriculum on obstacle density; success, collision rate, time.",
            "crazyflie",
            QuadSwarmConfig,
            QuadSwarmEnv,
            training=SWARM_TRAIN,
        ),
        TaskSpec(
            "g1-force",
            "Unitree G1 (29 DoF) stands and steps under random pushes and pulls on torso and "
            "hands up to 300 N (curriculum), leaning into them (FAT2 reward); metrics "
            "max_push_resisted_n, fall_rate.",
            "g1",
            G1ForceConfig,
            G1ForceEnv,
            training=G1_TRAIN_DEFAULTS,
        ),
        TaskSpec(
            "g1-pull",
            "Unitree G1 holds a rope looped through a cart on rails and tows it walking backward "
            "or forward; rolling resistance rises with a fall-rate curriculum; metrics "
            "peak_pull_force_backward_n, peak_pull_force_forward_n, fall_rate.",
            "g1",
            G1PullConfig,
            G1PullEnv,
            training=PULL_TRAIN,
        ),
        TaskSpec(
            "g1-walk",
            "Unitree G1 tracks a commanded planar velocity (vx -0.6..1.0, vy -0.4..0.4 m/s, yaw "
            "rate -1..1 rad/s, some zero: stand still) on rough ground (slopes to 10 deg, steps "
            "to 5 cm) under random pushes; metrics lin_vel_tracking_rmse_m_s, "
            "yaw_rate_tracking_rmse_rad_s, fall_rate, max_push_recovered_m_s.",
            "g1",
            G1WalkConfig,
            G1WalkEnv,
            training=WALK_TRAIN,
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
            training=DEX_TRAIN,
        ),
        TaskSpec(
            "lane-keep",
            "A car keeps its lane on procedural roads (curves, S-bends, obstacles, friction) "
            "from lane geometry, 180-beam LiDAR, a PID correction and scene captions; "
            "metrics lateral_rmse_m, collision_rate over 100 held-out roads.",
            "car",
            LaneKeepConfig,
            LaneKeepEnv,
            training=LANE_TRAIN,
        ),
    )
}


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; registered tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name]


def make_env(
    name: str, cfg: Any, num_envs: int, engine: str = "mjbatch", seed: int = 0, num_threads: int = 0
) -> TaskEnv:
    """num_threads: the engine's physics threads (0: its default, every usable CPU)."""
    return get_task(name).env_cls(
        cfg, num_envs=num_envs, engine=engine, seed=seed, num_threads=num_threads
    )
