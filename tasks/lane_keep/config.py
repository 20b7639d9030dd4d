"""Configuration of `lane-keep`: car, roads, sensors, semantic channel, PID, rewards."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from simreal.tasks.lane_keep.perception import PerceptionConfig
from simreal.tasks.lane_keep.rewards import REWARDS
from simreal.tasks.lane_keep.roads import ROAD_SETS, RoadConfig
from simreal.tasks.lane_keep.semantic import PROVIDERS
from simreal.tasks.rate_timing import RateTiming
from simreal.tasks.terms import WEIGHTS_UNIT, check_unit, default_weights
from simreal.tasks.train_defaults import TrainDefaults

TRAIN_DEFAULTS = TrainDefaults(
    num_envs=64,
    eval_episodes=16,
    actor_hidden=(128, 128),
    critic_hidden=(128, 128),
    num_steps_per_env=32,
    gamma=0.98,
)


@dataclass
class LidarConfig:
    enabled: bool = True
    beams: int = 180
    fov_deg: float = 180.0
    """Beams spread evenly over this field of view, centred straight ahead."""
    max_range_m: float = 20.0
    noise_std_m: float = 0.02
    forward_m: float = 1.5
    """Sensor position ahead of the centre of mass (m)."""

    def validate(self) -> None:
        if self.beams < 1 or not 0 < self.fov_deg <= 360 or self.max_range_m <= 0:
            raise ValueError("lidar: need beams >= 1, fov_deg in (0, 360], max_range_m > 0")
        if self.noise_std_m < 0:
            raise ValueError(f"lidar.noise_std_m must be >= 0, got {self.noise_std_m}")


@dataclass
class SemanticConfig:
    provider: str = "captions"
    """captions (ground truth), blip (a local BLIP model on the camera image) or none."""
    refresh_steps: int = 10
    """A new caption every this many control steps (BLIP-FusePPO refreshes every 10)."""
    blip_weights: str = ""
    """Local directory of BLIP captioning weights (provider blip); never downloaded."""
    embed_dim: int = 8
    """Size of the policy's learned embedding of each caption token."""

    def validate(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(
                f"semantic.provider: {self.provider!r} is not one of {list(PROVIDERS)}"
            )
        if self.refresh_steps < 1 or self.embed_dim < 1:
            raise ValueError("semantic.refresh_steps and semantic.embed_dim must be >= 1")


@dataclass
class PidConfig:
    """Steering correction delta = -(kp e + ki int e + kd de/dt) - kh e_psi (rad), from the
    lateral offset e (m, left positive) and heading error e_psi (rad)."""

    feature: bool = True
    """Feed the correction to the policy as an observation."""
    kp: float = 0.25
    ki: float = 0.02
    kd: float = 0.05
    kh: float = 1.0
    integral_limit: float = 2.0
    """Anti-windup bound on the integral of e (m s)."""
    baseline_speed_mps: float = 7.0
    """Target speed of the PID-alone baseline."""


@dataclass
class BaselineConfig:
    """The classical controllers beside the policy (`simreal eval baseline:NAME --task
    lane-keep`). Gains picked on training roads only by `experiments/lane_keep_baselines.py`."""

    speed_mps: float = 7.0
    stanley_gain: float = 2.0
    """k of Stanley's cross-track term (1/s)."""
    stanley_soft_mps: float = 1.0
    """Softening speed of Stanley's cross-track term (m/s)."""
    pursuit_gain_s: float = 0.6
    """Pure pursuit's look-ahead distance per unit speed (s)."""
    pursuit_min_m: float = 2.0
    """Pure pursuit's shortest look-ahead (m)."""


@dataclass
class LaneKeepConfig(RateTiming):
    physics_hz: int = 100
    control_hz: int = 20
    episode_s: float = 20.0
    evaluation: bool = False
    """Held-out roads (road i for simulation i), starts drawn from the eval_start ranges
    with the evaluation's seed."""
    road_set: str = "held_out"
    """Which roads an evaluation drives: held_out (final numbers), validation (model and
    gain selection) or train (the training bank, for tuning baselines on it alone)."""
    eval_start_offset_m: float = 0.5
    """Evaluation starts up to this far (m) off the lane centre ..."""
    eval_start_heading_rad: float = 0.2
    """... up to this heading error (rad) ..."""
    eval_start_speed_mps: tuple[float, float] = (4.0, 12.0)
    """... at a speed in this range (m/s)."""
    target_speed_mps: float = 8.0
    start_speed_mps: tuple[float, float] = (4.0, 9.0)
    start_offset_m: float = 0.5
    """Training starts up to this far (m) off the lane centre."""
    start_heading_rad: float = 0.1
    start_s_m: tuple[float, float] = (0.0, 40.0)
    """Training starts this far along the road (m); evaluation starts at 0."""
    train_roads: int = 512
    """Size of the bank of training roads (random seeds below the held-out range)."""
    eval_roads: int = 100
    """Held-out roads: the first valid ones from seed 1,000,000 on."""
    curvature_preview_m: tuple[float, ...] = (5.0, 10.0, 15.0, 20.0, 30.0)
    """The policy sees road curvature this far ahead (m), as a lane detector reports it."""
    off_road_margin_m: float = 0.3
    """Off road: the car's side is this far beyond the road edge."""
    geometry: bool = True
    """Feed the lane estimate (offset, heading error, width, curvature) to the policy;
    false for the ablation without the geometric channel (the PID feature, computed from
    the same estimate, is its own switch)."""
    road: RoadConfig = field(
        default_factory=lambda: RoadConfig(ego_lane_obstacle_prob=0.5, obstacles=(1, 4))
    )
    """Half the roads have an obstacle in the car's own lane (a lane change or a stop)."""
    perception: PerceptionConfig = field(default_factory=PerceptionConfig)
    baselines: BaselineConfig = field(default_factory=BaselineConfig)
    lidar: LidarConfig = field(default_factory=LidarConfig)
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    pid: PidConfig = field(default_factory=PidConfig)
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))
    reward_weights_unit: str = WEIGHTS_UNIT
    """The unit of `reward_weights`, saved with the config: always per second
    (`tasks/terms.py`)."""

    def training_evaluation(self) -> LaneKeepConfig:
        """What training evaluates on (and checkpoints are chosen by): validation roads."""
        return dataclasses.replace(self, evaluation=True, road_set="validation")

    def validate(self) -> None:
        self.check_rates()
        if self.episode_s <= 0 or self.train_roads < 1 or self.eval_roads < 1:
            raise ValueError("episode_s, train_roads and eval_roads must be positive")
        if not 0 < self.target_speed_mps <= 12.0:
            raise ValueError(f"target_speed_mps must be in (0, 12], got {self.target_speed_mps}")
        lo, hi = self.start_speed_mps
        if not 0 < lo <= hi <= 12.0:
            raise ValueError(f"start_speed_mps: need 0 < low <= high <= 12, got {lo}, {hi}")
        needed = self.start_s_m[1] + 12.0 * self.episode_s + 60.0
        if self.road.length_m < needed:
            raise ValueError(
                f"road.length_m ({self.road.length_m}) must cover the longest episode: >= {needed}"
            )
        if self.eval_start_offset_m < 0 or self.eval_start_heading_rad < 0:
            raise ValueError("eval_start_offset_m and eval_start_heading_rad must be >= 0")
        lo, hi = self.eval_start_speed_mps
        if not 0 < lo <= hi <= 12.0:
            raise ValueError(f"eval_start_speed_mps: need 0 < low <= high <= 12, got {lo}, {hi}")
        if self.road_set not in ROAD_SETS:
            raise ValueError(f"road_set: {self.road_set!r} is not one of {list(ROAD_SETS)}")
        self.road.validate()
        self.perception.validate(self.control_dt)
        self.lidar.validate()
        self.semantic.validate()
        check_unit(self.reward_weights_unit)
