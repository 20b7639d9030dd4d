"""Typed configuration of the model, PPO and the training run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from simreal.policies.normalizer import NORMALIZER_EPS


@dataclass
class ModelConfig:
    arch: Literal["decoupled", "coupled"] = "decoupled"
    """decoupled: one actor per action group; coupled: one actor for all actions."""
    actor_hidden: tuple[int, ...] = (64, 64)
    critic_hidden: tuple[int, ...] = (64, 64)
    activation: Literal["elu", "tanh", "relu"] = "elu"
    encoder: Literal["auto", "mlp"] = "auto"
    """auto: entity attention when the environment declares an observation structure
    (neighbours, obstacles), plain MLP otherwise; mlp: always MLP."""
    attention_dim: int = 64
    init: Literal["default", "orthogonal"] = "default"
    """default: PyTorch's layer initialization (the tasks' policies were trained with it);
    orthogonal: every hidden layer orthogonal with gain sqrt(2) and zero bias, the critic's
    output layer gain 1 (the actor's output layer is gain 0.01 either way), as in the
    reference PPO implementations for the MuJoCo benchmarks."""
    init_std: float = 0.5
    normalizer_var_floor: float = NORMALIZER_EPS
    """Added to the running variance before the observation normalizers divide by its
    root: a column whose spread is below sqrt(floor) is amplified at most 1/sqrt(floor)
    times. 0.01 (the default, the tasks' policies were trained with it) lets near-constant
    columns (a contact force that is mostly zero) swing the input by up to 10 std; 1.0 only
    scales columns down (spread above 1), never up."""
    max_std: float | None = None
    """Upper bound on the action std (None: unbounded). Where actions saturate (a clipped
    velocity command), extra noise costs nothing and PPO's std can drift up until the
    noise itself fails episodes; a bound stops the drift."""
    estimator_hidden: tuple[int, ...] = (128, 64)
    """Hidden layers of the state estimator, built only where the task names quantities
    for the actor to estimate (`estimate_terms`, e.g. g1-force's
    `task.actor_estimates_force`)."""
    memory_size: int = 0
    """Units of the actor's memory, a GRU cell over the normalized observation whose state
    the actor reads beside the observation (0: a feed-forward actor). Why: what the robot
    does not sense, such as a steady push on its torso, shows only in how its state
    evolves over many steps; an actor with memory can infer it, one that sees a single
    step cannot. The critic stays feed-forward (it is told the privileged state). The
    state travels with the exported policy (ONNX input `h`, output `h_next`) and is zeroed
    at every episode start, in training, evaluation and on the robot."""

    def validate(self) -> None:
        if self.arch not in ("decoupled", "coupled"):
            raise ValueError(f"model.arch must be 'decoupled' or 'coupled', got {self.arch!r}")
        if (
            not self.actor_hidden
            or not self.critic_hidden
            or min(self.actor_hidden + self.critic_hidden) < 1
        ):
            raise ValueError("model.actor_hidden and model.critic_hidden need positive layer sizes")
        if not self.estimator_hidden or min(self.estimator_hidden) < 1:
            raise ValueError(
                f"model.estimator_hidden needs positive layer sizes, got {self.estimator_hidden}"
            )
        if not self.normalizer_var_floor > 0:
            raise ValueError(
                f"model.normalizer_var_floor must be positive, got {self.normalizer_var_floor}"
            )
        if self.init_std <= 0:
            raise ValueError(f"model.init_std must be positive, got {self.init_std}")
        if self.memory_size < 0:
            raise ValueError(f"model.memory_size must be 0 or more, got {self.memory_size}")
        if self.init not in ("default", "orthogonal"):
            raise ValueError(f"model.init must be 'default' or 'orthogonal', got {self.init!r}")
        if self.max_std is not None and self.max_std < self.init_std:
            raise ValueError(
                f"model.max_std ({self.max_std}) must be at least model.init_std ({self.init_std})"
            )


@dataclass
class PPOConfig:
    num_steps_per_env: int = 32
    num_epochs: int = 5
    num_minibatches: int = 4
    clip: float = 0.2
    gamma: float = 0.99
    lam: float = 0.95
    value_coef: float = 1.0
    entropy_coef: float = 0.003
    learning_rate: float = 1e-3
    critic_learning_rate: float | None = None
    """A fixed step size for the critic. None: the critic follows the actor's learning rate.
    With many action dimensions the adaptive-KL schedule can drive the shared rate to its
    floor (the G1's 29-D Gaussian reaches KL 0.01 at lr 1e-5), which then starves the value
    function; its own rate keeps the advantages honest while the actor stays cautious."""
    schedule: Literal["adaptive", "fixed", "linear"] = "adaptive"
    """adaptive: the rate follows the KL towards `desired_kl`; fixed: constant; linear:
    falls from `learning_rate` to 0 over the run's budget (steps or minutes, whichever
    runs out first), the reference implementations' schedule for the MuJoCo benchmarks."""
    desired_kl: float = 0.01
    max_kl: float | None = None
    """Stop an update's remaining minibatches once the policy has moved this far from the
    rollout's (the mean KL over ranks, before the step; no step taken then). None: every
    epoch runs. The decoupled G1 actor's per-update KL spiked to 1-2.5
    (20 of 2,950 updates above 0.1 in g1-pull's steady stage) where the coupled actor's
    never passed 0.062 under the same fixed learning rate; a cap bounds such jumps."""
    ratio: Literal["joint", "per_group"] = "joint"
    """joint: one probability ratio over every action, clipped once (single-agent PPO).
    per_group: each action group's own ratio, clipped on its own, the groups' surrogates
    summed: the decoupled actor as cooperating agents sharing one advantage (MAPPO-style,
    Thor's "three-agent" reading). Under the joint ratio a large move of one group (the
    waist, say) clips the sample for all three and stalls the others' learning; per
    group, each actor keeps its own trust region. Same as joint for the coupled actor."""
    max_grad_norm: float = 1.0
    clip_value_loss: bool = True
    normalize_returns: bool = False
    """Divide rewards by the running std of each simulation's discounted return (clipped
    to +-return_clip), as Gymnasium's NormalizeReward and SB3's VecNormalize do. It puts
    value targets on one scale whatever the reward's units: on the MuJoCo benchmarks,
    whose returns reach thousands, it mattered more than any other setting measured.
    The statistics live in the model's state (checkpointed, not exported)."""
    return_clip: float = 10.0
    normalizer_update: Literal["step", "rollout", "never"] = "step"
    """When the observation normalizers take in new observations. step (rsl_rl's way): at
    every rollout step, so the normalization an action was sampled under has moved by the
    time the update recomputes its probability, and the first minibatch's ratio is not 1
    (most early on, when the statistics move fastest). rollout: the rollout's observations
    are merged after its update, so every step of a rollout and its update see the same
    normalization and the ratio starts at exactly 1 (as where the environment normalizes
    and the buffer stores the normalized observation: SB3's VecNormalize, CleanRL); the
    statistics lag one rollout behind. never: the statistics keep their initial values
    (mean 0, variance 1: the observation passes scaled by 1 / sqrt(1 + eps) and clipped
    at +-clip), to compare with implementations that do not normalize (SB3's defaults)."""
    imitation_coef: float = 0.0
    """Weight of a DAgger term: the squared distance of the policy's mean action from the
    environment's expert action (`expert_action()`, e.g. quad-swarm's privileged
    teacher) on the states of the policy's own rollouts, added to the PPO loss. 0: none."""
    estimation_coef: float = 1.0
    """Weight of the state estimator's regression loss (the squared error of its estimate
    against the simulator's true value, in normalized units), added to the PPO loss where
    the model has an estimator. The estimator learns from this term alone: the actor reads
    its estimate without passing gradients back."""
    estimator_learning_rate: float | None = None
    """The state estimator's own learning rate (None: the actor's)."""
    estimator_warmup_iterations: int = 0
    """Iterations at the start of a run in which the actor reads the true values instead
    of the estimate (in its rollouts and its update) while the estimator learns from
    them: a student warm-started from a policy that was told the true values keeps
    acting as its teacher, and so meets the loads its teacher met, until its estimator
    has learned them. 0: the estimate from the first step."""

    def validate(self) -> None:
        for name in ("num_steps_per_env", "num_epochs", "num_minibatches"):
            if getattr(self, name) < 1:
                raise ValueError(f"ppo.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("gamma", "lam"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"ppo.{name} must be in (0, 1], got {getattr(self, name)}")
        if self.learning_rate <= 0 or self.clip <= 0:
            raise ValueError("ppo.learning_rate and ppo.clip must be positive")
        if self.critic_learning_rate is not None and self.critic_learning_rate <= 0:
            raise ValueError(
                f"ppo.critic_learning_rate must be positive, got {self.critic_learning_rate}"
            )
        if self.imitation_coef < 0:
            raise ValueError(f"ppo.imitation_coef must be >= 0, got {self.imitation_coef}")
        if self.estimator_warmup_iterations < 0:
            raise ValueError(
                f"ppo.estimator_warmup_iterations must be >= 0, got "
                f"{self.estimator_warmup_iterations}"
            )
        if self.estimator_learning_rate is not None and not self.estimator_learning_rate > 0:
            raise ValueError(
                f"ppo.estimator_learning_rate must be positive, got {self.estimator_learning_rate}"
            )
        if not self.estimation_coef > 0:
            raise ValueError(f"ppo.estimation_coef must be positive, got {self.estimation_coef}")
        if self.schedule not in ("adaptive", "fixed", "linear"):
            raise ValueError(
                f"ppo.schedule must be 'adaptive', 'fixed' or 'linear', got {self.schedule!r}"
            )
        if self.return_clip <= 0:
            raise ValueError(f"ppo.return_clip must be positive, got {self.return_clip}")
        if self.ratio not in ("joint", "per_group"):
            raise ValueError(f"ppo.ratio must be 'joint' or 'per_group', got {self.ratio!r}")
        if self.max_kl is not None and self.max_kl <= 0:
            raise ValueError(f"ppo.max_kl must be positive (or null), got {self.max_kl}")
        if self.normalizer_update not in ("step", "rollout", "never"):
            raise ValueError(
                "ppo.normalizer_update must be 'step', 'rollout' or 'never', got "
                f"{self.normalizer_update!r}"
            )


@dataclass
class DAggerConfig:
    """`train.algorithm=dagger` (dagger.py): supervised learning of an expert's actions on
    the policy's own states."""

    steps_per_iteration: int = 30
    gradient_steps: int = 200
    batch_size: int = 1024
    buffer_rows: int = 500_000
    """Labelled states kept (the latest); the buffer is not checkpointed, so a resumed
    run starts collecting afresh."""
    learning_rate: float = 1e-3
    expert_iterations: int = 20
    """The expert's share of the executed actions falls linearly from 1 to 0 over these
    iterations (the policy then flies alone and the expert only labels)."""
    action_noise: float = 0.1
    max_grad_norm: float = 1.0

    def validate(self) -> None:
        for name in ("steps_per_iteration", "gradient_steps", "batch_size", "buffer_rows"):
            if getattr(self, name) < 1:
                raise ValueError(f"dagger.{name} must be >= 1, got {getattr(self, name)}")
        if self.learning_rate <= 0 or self.action_noise < 0 or self.expert_iterations < 0:
            raise ValueError(
                "dagger: need learning_rate > 0, action_noise >= 0, expert_iterations >= 0"
            )


@dataclass
class TrainConfig:
    num_envs: int = 512
    max_env_steps: int = 20_000_000
    max_minutes: float = 0.0
    """Wall-time budget; 0 means none."""
    seed: int = 0
    stop_at_return: float | None = None
    eval_interval: int = 10
    """Iterations between evaluations (deterministic actions, evaluation resets)."""
    eval_episodes: int = 4
    """Episodes per evaluation, run side by side (one per evaluation environment)."""
    checkpoint_interval: int = 50
    checkpoint_every_s: float = 60.0
    """Also checkpoint when this much wall time has passed since the last checkpoint."""
    torch_threads: int = 1
    """PyTorch's threads for the learning update (on a CPU learner)."""
    rollout_torch_threads: int = 1
    """PyTorch's threads while collecting (policy inference between physics steps). One:
    more threads spin after each small call on the cores the engine's physics threads
    need next (2 cores, 128 g1-pull simulations: physics 0.52 -> 0.41 s an iteration
    with one thread). Raise it for a CPU learner with large batches on many cores."""
    device: str = "auto"
    """Where the actor-critic, the rollout storage and the update run: auto (a GPU when
    torch sees one, else the CPU), cpu or cuda. The simulations stay on the CPU; a step's
    observations go over in one transfer and its actions come back in one."""
    env_groups: int = 1
    """Split the simulations into this many groups stepped in turn, one group's physics on
    a worker thread while the main thread does the task layer of the others
    (tasks/overlap.py): for machines with many cores, where the serial task layer leaves
    the engine's threads idle. 1 steps all simulations at once (and on 2 cores is best)."""
    algorithm: Literal["ppo", "dagger"] = "ppo"
    """ppo: reinforcement learning on the task's reward; dagger: imitation of the task's
    expert (`expert_action()`, e.g. quad-swarm's privileged teacher)."""
    model: ModelConfig = field(default_factory=ModelConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    dagger: DAggerConfig = field(default_factory=DAggerConfig)

    def validate(self) -> None:
        if self.num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {self.num_envs}")
        if self.max_env_steps < 1 or self.max_minutes < 0:
            raise ValueError("max_env_steps must be >= 1 and max_minutes >= 0")
        if self.eval_interval < 1 or self.eval_episodes < 1 or self.checkpoint_interval < 1:
            raise ValueError("eval_interval, eval_episodes and checkpoint_interval must be >= 1")
        if not (math.isfinite(self.checkpoint_every_s) and self.checkpoint_every_s > 0):
            raise ValueError(f"checkpoint_every_s must be > 0, got {self.checkpoint_every_s}")
        if self.torch_threads < 1 or self.rollout_torch_threads < 1:
            raise ValueError(
                f"torch_threads and rollout_torch_threads must be >= 1, got "
                f"{self.torch_threads} and {self.rollout_torch_threads}"
            )
        if self.env_groups < 1 or self.num_envs % self.env_groups:
            raise ValueError(
                f"env_groups must be >= 1 and divide num_envs={self.num_envs}, "
                f"got {self.env_groups}"
            )
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if self.algorithm not in ("ppo", "dagger"):
            raise ValueError(f"algorithm must be 'ppo' or 'dagger', got {self.algorithm!r}")
        self.model.validate()
        self.ppo.validate()
        self.dagger.validate()
