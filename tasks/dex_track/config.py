"""Configuration of `dex-track`: track hand-object references with the Allegro-like hand."""

from __future__ import annotations

from dataclasses import dataclass, field

from simreal.tasks.dex_track.objects import OBJECT_TYPES
from simreal.tasks.dex_track.rewards import REWARDS
from simreal.tasks.terms import default_weights
from simreal.tasks.train_defaults import TrainDefaults

TRAIN_DEFAULTS = TrainDefaults(
    num_envs=128,
    eval_episodes=64,
    eval_interval=20,
    num_steps_per_env=32,
    # 22 action dimensions: a fixed rate keeps the actor learning (docs/findings.md, PPO).
    schedule="fixed",
    learning_rate=0.0003,
    actor_hidden=(256, 128),
    critic_hidden=(256, 128),
    init_std=0.2,
)


@dataclass
class DexTrackConfig:
    physics_dt: float = 0.005
    decimation: int = 10
    """Physics steps per control step: 20 Hz control, the references' rate."""
    episode_frames: int = 64
    """Frames per reference (3.2 s at 20 Hz); shorter references hold their last frame."""
    references: str = ""
    """A dataset directory (`simreal dex references`); empty: generate the split in-process
    from reference_seed (deterministic; a small set for quick runs and tests, the results
    train on a 512-reference directory)."""
    resample: bool = False
    """Resample dataset files whose rate_hz differs from the control rate (else an error)."""
    train_references: int = 64
    heldout_references: int = 64
    reference_seed: int = 0
    heldout_types: tuple[str, ...] = ("bottle",)
    """Object types that never appear in training references (held out by object)."""
    preview_frames: int = 3
    """The policy sees the reference's next `preview_frames` frames."""
    wrist_pos_action_scale: float = 0.04
    """Residual (m) on the reference's wrist position per unit action."""
    wrist_rot_action_scale: float = 0.2
    finger_action_scale: float = 0.25
    """Residual (rad) on the reference's finger angles per unit action (the preload squeezes)."""
    grip_preload_rad: tuple[float, float] = (0.1, 0.2)
    """Squeeze added to the reference's flexing joints (long fingers' joints 1-3, thumb's 2-3),
    in proportion to how closed the reference hand is (`dataset.grip_level`): references
    touch without force, and a servo only pushes when its target lies inside the object.
    (0, 0) is the pure residual on the reference."""
    object_mass: tuple[float, float] = (0.05, 0.2)
    object_friction: tuple[float, float] = (0.7, 1.2)
    """Sliding friction of the object (the hand's is lower, and MuJoCo takes the larger)."""
    max_object_pos_error: float = 0.05
    """Training episodes end (failed) when the object strays this far (m) from its reference:
    the success criterion's per-frame bound. A looser bound let the first policies drop the
    object and live on, paid by the orientation term while it sat still on the table."""
    max_object_rot_error_deg: float = 30.0
    curriculum: bool = True
    """Unlock motion types (lift, rotate, translate, place, regrasp) one after another."""
    curriculum_completion: float = 0.5
    """Unlock the next motion once this fraction of a window of episodes finish their
    reference without straying."""
    curriculum_mix: float = 0.2
    """Share of training episodes drawn from all references regardless of the curriculum,
    so that the policy never trains on the easiest motions alone."""
    evaluation: bool = False
    """Held-out references, one per simulation in order, fixed physics, no early end."""
    reward_weights: dict[str, float] = field(default_factory=lambda: default_weights(REWARDS))

    @property
    def control_dt(self) -> float:
        """The control period (s): reward weights (per second) are multiplied by it."""
        return self.physics_dt * self.decimation

    @property
    def rate_hz(self) -> float:
        return 1.0 / (self.physics_dt * self.decimation)

    def validate(self) -> None:
        if self.physics_dt <= 0 or self.decimation < 1 or self.episode_frames < 2:
            raise ValueError("physics_dt > 0, decimation >= 1 and episode_frames >= 2 required")
        unknown = set(self.heldout_types) - set(OBJECT_TYPES)
        if unknown:
            raise ValueError(
                f"heldout_types: unknown {sorted(unknown)}; known: {list(OBJECT_TYPES)}"
            )
        if len(set(self.heldout_types)) >= len(OBJECT_TYPES):
            raise ValueError("heldout_types must leave at least one object type for training")
        if self.train_references < 1 or self.heldout_references < 1 or self.preview_frames < 1:
            raise ValueError("train_references, heldout_references, preview_frames must be >= 1")
        if not 0.0 <= self.curriculum_mix <= 1.0 or not 0.0 < self.curriculum_completion <= 1.0:
            raise ValueError(
                "curriculum_mix must lie in [0, 1] and curriculum_completion in (0, 1]"
            )
        if min(self.grip_preload_rad) < 0 or len(self.grip_preload_rad) != 2:
            raise ValueError(
                f"grip_preload_rad must be two angles >= 0 (long fingers, thumb), got "
                f"{self.grip_preload_rad}"
            )
        for name in ("object_mass", "object_friction"):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi:
                raise ValueError(f"{name} must be a range 0 < low <= high, got {(lo, hi)}")
