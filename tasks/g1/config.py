"""Configuration every G1 task shares: timing, falls, the FAT2 and posture reward shapes,
domain randomization, the calibration overlay and reward weights."""

from __future__ import annotations

from dataclasses import dataclass, field

from simreal.robots.g1.mjcf import INTEGRATORS
from simreal.robots.g1.overlay import Overlay, OverlayError, load_overlay
from simreal.tasks.g1.rewards import REWARDS
from simreal.tasks.terms import default_weights
from simreal.tasks.train_defaults import TrainDefaults

ACTUATIONS = ("substeps", "native")
"""`G1Config.actuation`'s choices."""

G1_TRAIN_DEFAULTS = TrainDefaults(
    num_envs=256,
    num_steps_per_env=24,
    actor_hidden=(256, 128),
    critic_hidden=(256, 128),
    init_std=0.5,
    eval_interval=20,
    schedule="adaptive",
    learning_rate=1e-3,
)
"""Training defaults of the G1 tasks: one network shape, so policies carry over between them.
The learning-rate schedule is stated here, not inherited: adaptive-KL (rsl_rl's) for
g1-force; g1-pull's recipe (experiments/g1_pull_chain.py) and g1-walk set a fixed rate
(why: docs/findings.md, "the adaptive learning rate sits at its floor")."""


@dataclass
class G1Randomization:
    """Per-simulation ranges sampled at every training reset (uniform); scales multiply
    the nominal value. Evaluation samples none of them.

    With a calibration overlay (`G1ForceConfig.calibration`) the ranges are centred on the
    calibrated robot instead of the nominal one: gain and strength scales multiply the
    overlay's scales, joint offsets are drawn around the overlay's encoder offsets, and
    the latency range keeps its width but is centred on the overlay's latency (clipped
    at 0)."""

    friction: tuple[float, float] = (0.4, 1.2)
    """Sliding friction of floor and soles."""
    link_mass_scale: tuple[float, float] = (0.9, 1.1)
    """Every link's mass (and inertia), one scale per link."""
    torso_added_mass_kg: tuple[float, float] = (-1.0, 3.0)
    torso_com_offset_m: float = 0.03
    """Torso centre of mass moved by up to this in x, y and z."""
    kp_scale: tuple[float, float] = (0.85, 1.15)
    kd_scale: tuple[float, float] = (0.85, 1.15)
    """Per joint."""
    motor_strength: tuple[float, float] = (0.85, 1.1)
    """Torque limit scale, per joint."""
    joint_offset_rad: float = 0.02
    """Encoder offset per joint: the robot measures q + offset and its PD loop acts on the
    measured angle."""
    latency_substeps: tuple[float, float] = (0.0, 4.0)
    """Actions reach the PD loop this many physics steps (5 ms each) late; drawn
    uniformly, fractions included (0..20 ms)."""
    gyro_noise: float = 0.1
    gravity_noise: float = 0.03
    joint_pos_noise: float = 0.01
    joint_vel_noise: float = 0.5
    """Gaussian observation noise (rad/s, unit gravity, rad, rad/s)."""
    joint_frictionloss_n_m: tuple[float, float] = (0.1, 0.5)
    joint_damping_n_m_s: tuple[float, float] = (0.02, 0.2)
    """Coulomb (N m) and viscous (N m s/rad) joint friction, per joint. No public
    measurement of the G1's joint friction exists: these are the ranges the perturbed
    robots of `simreal calibrate`'s checks draw from (calibration/perturbation.py), i.e.
    what a calibration is built to recover. With an overlay, each range keeps its width
    and is centred on the calibrated value (clipped at 0). Evaluation uses the middle."""
    push_interval_s: tuple[float, float] = (4.0, 8.0)
    push_vel_m_s: float = 0.4
    """Impulsive pushes: the base velocity jumps by up to this, horizontally."""

    def validate(self) -> None:
        low, high = self.latency_substeps
        if not 0 <= low <= high <= 8:
            raise ValueError(
                f"randomization.latency_substeps: need 0 <= low <= high <= 8, got {low}, {high}"
            )
        for name in ("joint_frictionloss_n_m", "joint_damping_n_m_s"):
            low, high = getattr(self, name)
            if not 0.0 <= low <= high:
                raise ValueError(f"randomization.{name}: need 0 <= low <= high, got {low}, {high}")
        for name in ("friction", "link_mass_scale", "kp_scale", "kd_scale", "motor_strength"):
            low, high = getattr(self, name)
            if not 0.0 < low <= high:
                raise ValueError(f"randomization.{name}: need 0 < low <= high, got {low}, {high}")


@dataclass
class G1Config:
    """What every G1 task shares: timing, falls, the FAT2 and posture reward shapes,
    domain randomization, the calibration overlay and reward weights. Tasks subclass it
    with their own loads (`G1ForceConfig`: external forces; `G1PullConfig`: a towed load)."""

    physics_dt: float = 0.005
    decimation: int = 4
    integrator: str = "implicitfast"
    """MuJoCo integrator of the robot's model (sim-to-sim checks evaluate a policy under
    another integrator and timestep: `--set task.integrator=RK4 --set task.physics_dt=...`)."""
    episode_s: float = 20.0
    eval_episode_s: float = 8.0
    """Evaluation episodes (g1-force: long enough to settle after the push and show a late
    fall)."""
    evaluation: bool = False
    """Evaluation protocol (the task's own), no randomization, no curriculum."""
    self_collision: bool = True
    """The robot's geoms collide with each other (robots/g1/mjcf.py): a limb cannot pass
    through the body. False: the idealized body, limbs passing through each other."""
    motor_envelope: bool = True
    """Each motor's torque limit falls with its speed (robots/g1/actuators.py,
    `torque_speed_range`), updated before every physics step: the joint velocity limits
    hold in the simulation. False: a constant torque limit at any speed."""
    actuation: str = "substeps"
    """How the motors' command latency and torque-speed envelope reach MuJoCo: substeps
    (from Python, every physics step; every engine) or native (MuJoCo's `dcmotor`
    actuators and ctrl delay; mjbatch only). docs/g1.md, "Native actuation"."""
    eval_friction: float = 1.0
    """Sliding friction of floor and soles in evaluation (training randomizes it over
    `randomization.friction`); every G1 evaluation JSON states it as `foot_friction`."""
    randomize: bool = True
    reset_joint_noise_rad: float = 0.05
    fall_height_m: float = 0.5
    fall_tilt_rad: float = 1.0
    """Pelvis height below, or pelvis tilt from vertical above, ends the episode as a fall."""
    fat2_sigma_rad: float = 0.15
    fat2_max_tilt_rad: float = 0.35
    """FAT2 target lean is clipped here (the waist pitch range is +-0.52 rad)."""
    base_height_sigma_m: float = 0.1
    upright_sigma: float = 0.5
    randomization: G1Randomization = field(default_factory=G1Randomization)
    calibration: str | None = None
    """Path to a G1 calibration overlay YAML (`simreal calibrate`): the simulated robot's
    nominal model becomes the calibrated one (encoder offsets, PD gain and torque limit
    scales, armature, friction, latency, gyro bias) and randomization is centred on it.
    Loaded when the environment is built; None: the nominal G1."""
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))

    @property
    def control_dt(self) -> float:
        return self.physics_dt * self.decimation

    @property
    def max_episode_steps(self) -> int:
        seconds = self.eval_episode_s if self.evaluation else self.episode_s
        return round(seconds / self.control_dt)

    def validate(self) -> None:
        if self.physics_dt <= 0 or self.decimation < 1:
            raise ValueError("physics_dt must be positive and decimation >= 1")
        if self.integrator not in INTEGRATORS:
            raise ValueError(f"integrator {self.integrator!r}: choose one of {INTEGRATORS}")
        if self.actuation not in ACTUATIONS:
            raise ValueError(f"actuation {self.actuation!r}: choose one of {ACTUATIONS}")
        if self.episode_s <= 0 or self.eval_episode_s <= 0:
            raise ValueError("episode_s and eval_episode_s must be positive")
        if self.fat2_sigma_rad <= 0 or self.base_height_sigma_m <= 0 or self.upright_sigma <= 0:
            raise ValueError("reward sigmas must be positive")
        if not 0.0 < self.eval_friction <= 2.0:
            raise ValueError(f"eval_friction must be in (0, 2], got {self.eval_friction}")
        if self.calibration is not None and not str(self.calibration).strip():
            raise ValueError("calibration: empty path (give an overlay YAML file or null)")
        self.randomization.validate()

    def load_calibration(self) -> Overlay:
        """The overlay at `calibration` (nominal when None); errors name the file and the
        bad fields, prefixed with `calibration:`."""
        if self.calibration is None:
            return Overlay()
        try:
            return load_overlay(self.calibration)
        except (OverlayError, FileNotFoundError) as err:
            raise ValueError(f"calibration: {err}") from None


@dataclass
class G1GaitConfig(G1Config):
    """What the walking G1 tasks (`g1-pull`, `g1-walk`) add: the gait clock
    (tasks/g1/gait.py), its stepping reference and the widths of the walking rewards."""

    lin_vel_sigma_m_s: float = 0.25
    yaw_rate_sigma: float = 0.5
    feet_air_time_s: float = 0.3
    """feet_air_time pays (air time - this) at every touchdown while a speed is commanded."""
    gait_period_s: float = 0.8
    stance_fraction: float = 0.55
    swing_height_m: float = 0.08
    """The gait clock (gait.py): period, each leg's stance share, and the sole height
    feet_swing_height asks of a swinging foot."""
    gait_reference_rad: float = 0.0
    """Amplitude a of an open-loop stepping pattern added to the policy's joint targets
    while walking (gait.leg_reference: hip pitch -a, knee +2a, ankle pitch -a times the
    swing lift): the action becomes a residual on stepping in place, so the policy need
    not discover stepping before it can learn to walk. 0: no reference."""
    gait_stride_gain: float = 0.0
    """rad per m/s: the reference also strides at the commanded forward speed
    (gait.stride_reference; 0.37 matches the speed with the default clock). Acts only
    with gait_reference_rad > 0."""
    gait_turn_gain: float = 0.0
    """s (rad of hip yaw per rad/s of commanded yaw rate): the reference also turns the
    hips through each stance at the commanded yaw rate (gait.turn_reference; s T / 2 =
    0.22 s matches the rate with the default clock). Acts only with
    gait_reference_rad > 0."""
    gait_side_gain: float = 0.0
    """rad per m/s: the reference also strides sideways at the commanded sideways speed
    (gait.side_reference: hip and ankle roll; 0.42 matches the speed with the default
    clock). Acts only with gait_reference_rad > 0."""

    def validate(self) -> None:
        super().validate()
        for name in ("lin_vel_sigma_m_s", "yaw_rate_sigma"):
            if getattr(self, name) <= 0:
                raise ValueError(f"task.{name} must be positive, got {getattr(self, name)}")
        for name in (
            "gait_reference_rad",
            "gait_stride_gain",
            "gait_turn_gain",
            "gait_side_gain",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"task.{name} must be >= 0, got {getattr(self, name)}")
        if self.gait_period_s <= 0 or not 0.0 < self.stance_fraction < 1.0:
            raise ValueError(
                f"gait: need gait_period_s > 0 and 0 < stance_fraction < 1, got "
                f"{self.gait_period_s}, {self.stance_fraction}"
            )
