"""Configuration of `quad-swarm`: N Crazyflies cross a room of columns to their goals."""

from __future__ import annotations

from dataclasses import dataclass, field

from simreal.tasks.quad_swarm.rewards import REWARDS
from simreal.tasks.quadrotor import QuadrotorConfig
from simreal.tasks.quadrotor.controller import VelocityControllerGains
from simreal.tasks.terms import default_weights
from simreal.tasks.train_defaults import TrainDefaults

ACTION_TYPES = ("velocity", "rpm")
GOAL_ASSIGNMENTS = ("lanes", "random")

TRAIN_DEFAULTS = TrainDefaults(
    # 32 simulations of 8 drones: 256 policy rows, 8k samples per update, and 8 epochs at
    # 1e-3: on this CPU the update, not the simulation, is the cost, and more updates per
    # sample learnt faster than more samples per update.
    num_envs=32,
    num_epochs=8,
    torch_threads=2,  # attention updates gain from a second core
    attention_dim=32,
    # Velocity actions saturate at +-1 when a drone races for its goal, so an entropy
    # bonus inflates the std at no cost there (1.2 after 10 M steps with 0.003) until the
    # noise crashes drones among the columns: no entropy bonus, std 0.3 (+-0.45 m/s), and
    # a fixed rate (the adaptive one swung between 1e-5 and 1e-2 on the noisy KL of the
    # attention policy).
    init_std=0.3,
    entropy_coef=0.0,
    schedule="fixed",
    learning_rate=0.001,
)


@dataclass
class ExpertConfig:
    """Gains of the privileged expert (expert.py) that `train.algorithm=dagger` distils
    into the policy; speeds in m/s, distances in m. Chosen by evaluating the expert alone
    (`simreal eval baseline:expert --task quad-swarm`, docs/quad-swarm.md)."""

    max_speed: float = 0.8
    """32 drones at 80 % density: at 1.2 m/s drones merging into the lanes between column
    rows collide, at 0.7 m/s they run out of time; 0.8 succeeded most often."""
    goal_gain: float = 1.5
    """Along the path: min(max_speed, goal_gain * planar distance to the goal)."""
    height_gain: float = 1.5
    column_margin: float = 0.3
    column_gain: float = 2.0
    drone_margin: float = 0.45
    drone_gain: float = 2.0
    drone_yield: float = 0.5
    cruise_levels: bool = False
    """Stack the swarm in height by where each drone must go sideways: ranked by its
    goal's x minus its start's (drones crossing leftward at one end of the band, rightward
    at the other, nearly parallel ones next to each other), the drones cruise at levels
    spread evenly over `cruise_band_m` and descend to their goal's height within
    `cruise_arrive_m` of it. Crossing paths then cross at different heights, where at the
    goal heights (0.7-1.6 m) they met at the entry of the column field. The rank reads
    every drone's goal: privileged, as the column maps are. Off: each drone flies at its
    goal's height."""
    cruise_band_m: tuple[float, float] = (0.5, 2.5)
    cruise_arrive_m: float = 1.5
    crowd_slow_m: float = 0.0
    """Slow down in a crowd: closer than this (m) to the nearest other drone, a drone's
    speed along its path is capped at max_speed times the gap over crowd_slow_m, down to
    crowd_min_speed_fraction of it; free of neighbours it flies at max_speed. One speed
    for all was either too slow to arrive within the episode or too fast to avoid
    collisions where crossing drones meet (docs/findings.md). 0: off."""
    crowd_min_speed_fraction: float = 0.5
    avoidance: str = "push"
    """How a drone keeps off the others: "push" (the repulsive push of `drone_margin`,
    `drone_gain`, `drone_yield`) or "orca" (reciprocal velocity obstacles: the velocity
    nearest the preferred one that no nearby drone's current velocity makes collide within
    `orca_horizon_s`, each drone of a pair doing half: expert.reciprocal_avoidance)."""
    orca_radius_m: float = 0.3
    """Combined radius of two drones for ORCA: the task's collision distance plus a margin."""
    orca_horizon_s: float = 1.5
    orca_column_horizon_s: float = 0.5
    """Columns do not give way and the path already leads round them: a short horizon
    only keeps the drone-drone avoidance from pushing a drone into one."""
    orca_neighbours: int = 6
    orca_passes: int = 3

    def validate(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, (int, float)) and value < 0:
                raise ValueError(f"expert.{name} must be >= 0, got {value}")
        if not 0.0 < self.crowd_min_speed_fraction <= 1.0:
            raise ValueError(
                "expert.crowd_min_speed_fraction must lie in (0, 1], got "
                f"{self.crowd_min_speed_fraction}"
            )
        if self.avoidance not in ("push", "orca"):
            raise ValueError(f"expert.avoidance must be 'push' or 'orca', got {self.avoidance!r}")
        if (
            min(self.orca_radius_m, self.orca_horizon_s, self.orca_column_horizon_s) <= 0
            or self.orca_passes < 1
        ):
            raise ValueError(
                "expert.orca_radius_m, orca_horizon_s and orca_column_horizon_s must be "
                "positive and "
                "expert.orca_passes >= 1"
            )
        low, high = self.cruise_band_m
        if not 0.0 < low <= high:
            raise ValueError(f"expert.cruise_band_m: need 0 < low <= high, got {low}, {high}")
        if self.column_margin <= 0 or self.drone_margin <= 0:
            raise ValueError("expert.column_margin and expert.drone_margin must be positive")


@dataclass
class QuadSwarmConfig(QuadrotorConfig):
    episode_s: float = 15.0
    action_type: str = "velocity"
    """"velocity": the policy commands each drone's world velocity and the onboard
    cascade (tasks/quadrotor/controller.py) flies it, as swarm stacks do on real
    Crazyflies; "rpm": per-motor speeds, the policy stabilises attitude itself (far
    slower to learn on a CPU budget)."""
    max_speed_xy: float = 1.5
    """Horizontal speed (m/s) that a velocity action of magnitude 1 commands, per axis."""
    max_speed_z: float = 1.0
    goal_prior_gain: float = 1.0
    """Velocity actions are residuals on a goal-seeking prior: the commanded velocity is
    clip(prior + action, -1, 1) * max_speed, the prior being goal_prior_gain * (goal -
    position) (gain in 1/s) capped at max_speed_xy in norm and scaled into [-1, 1], so a
    residual can always cancel it. The prior flies a lone drone home (the zero-residual baseline); the
    policy learns what the prior cannot: braking, columns, neighbours. 0: the action is
    the whole command."""
    controller: VelocityControllerGains = field(default_factory=VelocityControllerGains)
    max_tilt: float = 1.0
    """Crossing the room takes brisk flight: the swarm allows more tilt than hovering."""
    num_drones: int = 8
    room_half_size: float = 5.0
    """The room spans [-h, h] in x and y (m); leaving it ends the episode as a crash."""
    ceiling: float = 3.0
    obstacle_grid: int = 6
    """Columns stand on a grid of obstacle_grid x obstacle_grid cells of 1 m in the middle."""
    obstacle_radius: float = 0.2
    density: tuple[float, float] = (0.0, 0.2)
    """Training obstacle density range (share of grid cells with a column)."""
    curriculum: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8)
    """Upper densities unlocked in turn while training succeeds; empty: no curriculum."""
    curriculum_success: float = 0.8
    """Training success rate that unlocks the next density."""
    eval_density: float = 0.2
    neighbours: int = 6
    """k nearest drones each drone observes (padded with absent tokens when fewer)."""
    obstacles_seen: int = 6
    """Nearest columns each drone observes."""
    obstacle_path_frame: bool = False
    """Column tokens also give each column's position in the drone's path frame (ahead,
    left of the line to its goal): observations.obstacle_tokens."""
    goal_radius: float = 0.5
    """Within this distance of its goal (m) a drone counts as arrived."""
    collision_distance: float = 0.15
    """Two drones closer than this (m, centre to centre) collide."""
    goal_assignment: str = "lanes"
    """How drones are matched to the goal slots drawn at the far end: "lanes" keeps their
    left-to-right order (drone i's goal is the i-th goal from the left, as a formation
    crossing the room assigns them), so paths cross only where columns force detours;
    "random": any drone to any goal, the swap scenario, where most paths cross."""
    random_init_fraction: float = 0.0
    path_cell_m: float = 0.1
    """Cell size of the floor grid behind the path_progress reward (geodesic.py): metres
    closed on the goal along the shortest path round the columns, which a drone stalled
    in front of a column does not earn (weight 0 by default: the grid is then never
    built)."""
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))
    clearance_margin: float = 0.3
    """Free space (m) below which the clearance penalty starts, to drones and columns."""
    expert: ExpertConfig = field(default_factory=ExpertConfig)
    collision_ends_episode: bool = True
    """A drone that collides ends its episode like a crash (and restarts from its slot).
    Success forbids any collision, and a per-step collision penalty alone taught drones
    that crashing on purpose is the cheaper way out of a collision."""

    def validate(self) -> None:
        super().validate()
        if self.action_type not in ACTION_TYPES:
            raise ValueError(f"action_type must be one of {ACTION_TYPES}, got {self.action_type!r}")
        if self.max_speed_xy <= 0 or self.max_speed_z <= 0:
            raise ValueError("max_speed_xy and max_speed_z must be positive")
        if self.goal_assignment not in GOAL_ASSIGNMENTS:
            raise ValueError(
                f"goal_assignment must be one of {GOAL_ASSIGNMENTS}, got {self.goal_assignment!r}"
            )
        if self.goal_prior_gain < 0:
            raise ValueError(f"goal_prior_gain must be >= 0, got {self.goal_prior_gain}")
        if not 1 <= self.num_drones <= 64:
            raise ValueError(f"num_drones must be in [1, 64], got {self.num_drones}")
        for name in ("density",):
            low, high = getattr(self, name)
            if not 0.0 <= low <= high <= 0.9:
                raise ValueError(f"{name}: need 0 <= low <= high <= 0.9, got {low}, {high}")
        if not 0.0 <= self.eval_density <= 0.9 or any(not 0 <= d <= 0.9 for d in self.curriculum):
            raise ValueError("eval_density and curriculum densities must lie in [0, 0.9]")
        if self.obstacle_grid < 1 or self.obstacle_grid > 2 * self.room_half_size - 3:
            raise ValueError("obstacle_grid must leave at least 1.5 m free at each end of the room")
        r = self.randomization
        if r.wind_gust_std_n > 0 or r.latency_physics_steps[1] > 0 or self.eval_randomize:
            raise ValueError(
                "randomization.wind_gust_std_n, randomization.latency_physics_steps and "
                "eval_randomize are single-drone options "
                "(quad-hover, quad-track); quad-swarm does not simulate them"
            )
        self.expert.validate()
        if self.expert.drone_margin <= self.collision_distance:
            raise ValueError(
                f"expert.drone_margin ({self.expert.drone_margin}) must exceed "
                f"collision_distance ({self.collision_distance})"
            )
        if not 0.02 <= self.path_cell_m <= 0.5:
            raise ValueError(f"path_cell_m must lie in [0.02, 0.5] m, got {self.path_cell_m}")
        if self.neighbours < 1 or self.obstacles_seen < 1:
            raise ValueError("neighbours and obstacles_seen must be >= 1")
