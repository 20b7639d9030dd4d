"""simreal's tasks behind rsl_rl's `VecEnv` interface, so `rsl_rl.runners.OnPolicyRunner`
(the trainer of Isaac Lab and mjlab) trains them unchanged.

    from rsl_rl.runners import OnPolicyRunner
    from simreal.rsl_rl import RslRlVecEnv, rsl_rl_train_cfg

    env = RslRlVecEnv("quad-hover", num_envs=512, device="cpu")
    runner = OnPolicyRunner(env, rsl_rl_train_cfg("quad-hover"), log_dir=None, device="cpu")
    runner.learn(num_learning_iterations=100)

Written against rsl-rl-lib 5.5.1 (the `rsl_rl` extra): observations are a TensorDict
with the groups "policy" (the task's policy observation) and "critic" (its critic
observation: the policy's terms without noise, then the privileged ones); `step`
returns observations, rewards, dones (terminated or truncated) and extras with
"time_outs" (truncated by the time limit, which rsl_rl's PPO bootstraps) and "episode"
(the task's summary of each episode that ended: return, length, per-term reward sums
and the task's metrics, which rsl_rl's logger averages). The task resets episodes inside
the step that ends them, as Isaac Lab's environments do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from simreal.vector import make_task_env


class RslRlVecEnv(VecEnv):
    """Task `task` with `num_envs` simulations (policy rows: simulations times the task's
    agents per simulation), its tensors on `device`. `seed`, `engine`, `num_threads`,
    `config` and the keyword overrides of the task's config as for `simreal.make_vec`.
    The simulations run on the CPU whatever `device` is; a step's arrays go over once."""

    def __init__(
        self,
        task: str,
        num_envs: int,
        device: str | torch.device = "cpu",
        seed: int = 0,
        engine: str = "mjbatch",
        num_threads: int = 0,
        config: Any = None,
        **overrides: Any,
    ):
        self.env = make_task_env(task, num_envs, seed, engine, num_threads, config, **overrides)
        self.task = task
        self.device = torch.device(device)
        self.num_envs = self.env.num_envs
        self.num_actions = self.env.num_actions
        self.max_episode_length = int(self.env.max_episode_steps)
        self.cfg = self.env.cfg
        obs, critic_obs = self.env.reset()
        self._obs = self._observations(obs, critic_obs)

    @property
    def episode_length_buf(self) -> torch.Tensor:
        """Steps into each row's episode (the task's own counter, copied to `device`)."""
        return torch.from_numpy(self.env.episode_step.copy()).to(self.device)

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        """Set the episodes' step counters, e.g. `learn(init_at_random_ep_len=True)`'s
        random starts: the task's time limit counts per simulation, so each simulation
        takes its first agent's value."""
        steps = torch.as_tensor(value).detach().cpu().numpy().astype(np.int64).reshape(-1)
        if steps.shape != (self.num_envs,):
            raise ValueError(
                f"episode_length_buf must have {self.num_envs} values, got {steps.shape}"
            )
        self.env.episode_step[:] = steps
        self.env.sim_step[:] = steps[:: self.env.agents_per_sim]

    def get_observations(self) -> TensorDict:
        return self._obs

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """Actions (num_envs, num_actions), clipped by the task as in its own training."""
        step = self.env.step(actions.detach().to("cpu", torch.float32).numpy())
        self._obs = self._observations(step.obs, step.critic_obs)
        done = step.terminated | step.truncated
        extras: dict[str, Any] = {
            "time_outs": self._tensor(step.truncated),
            "episode": {
                key: self._tensor(np.asarray(values, dtype=np.float32))
                for key, values in step.info.get("episode", {}).items()
            },
        }
        return self._obs, self._tensor(step.reward), self._tensor(done.astype(np.int64)), extras

    def _observations(self, obs: np.ndarray, critic_obs: np.ndarray) -> TensorDict:
        return TensorDict(
            {"policy": self._tensor(obs), "critic": self._tensor(critic_obs)},
            batch_size=[self.num_envs],
            device=self.device,
        )

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def close(self) -> None:
        close = getattr(self.env.engine, "close", None)
        if close is not None:
            close()


def rsl_rl_train_cfg(task: str, **changes: Any) -> dict[str, Any]:
    """An `OnPolicyRunner` config (rsl-rl-lib 5.x layout) holding simreal's own training
    settings for `task` (`simreal train`'s defaults with the task's, `TrainConfig`)
    mapped onto rsl_rl's PPO, MLPModel and GaussianDistribution: steps per environment,
    epochs, minibatches, clip, discount, GAE lambda, value-loss weight and clipping,
    entropy weight, learning rate and its schedule (adaptive KL or fixed), gradient norm,
    hidden layers, activation, initial action std, observation normalization (always on
    in simreal). `changes` replace top-level keys of the result.

    Not carried over, as rsl_rl has no such setting: a decoupled actor (one per action
    group; a task with one group, as the quadcopters, trains one actor either way), the
    critic's own learning rate, return normalization, a linear learning-rate schedule,
    an action-std bound and a state estimator; the config's values for them must be
    their defaults, or this raises naming them."""
    from simreal.config import from_plain
    from simreal.policies.config import TrainConfig
    from simreal.training import TrainRequest, run_config

    cfg = from_plain(TrainConfig, run_config(TrainRequest(task=task))["train"], "train.")
    model, ppo = cfg.model, cfg.ppo
    unmapped = [
        name
        for name, bad in (
            ("ppo.critic_learning_rate", ppo.critic_learning_rate is not None),
            ("ppo.normalize_returns", ppo.normalize_returns),
            ("ppo.schedule=linear", ppo.schedule == "linear"),
            ("ppo.max_kl", ppo.max_kl is not None),
            ("ppo.imitation_coef", ppo.imitation_coef > 0),
            ("model.max_std", model.max_std is not None),
            ("model.memory_size", model.memory_size > 0),
        )
        if bad
    ]
    if unmapped:
        raise ValueError(
            f"{task}: simreal's training settings {', '.join(unmapped)} have no rsl_rl "
            "counterpart; write the rsl_rl config by hand"
        )
    out: dict[str, Any] = {
        "num_steps_per_env": ppo.num_steps_per_env,
        "save_interval": 50,
        "obs_groups": {"actor": ["policy"], "critic": ["critic"]},
        "algorithm": {
            "class_name": "PPO",
            "learning_rate": ppo.learning_rate,
            "num_learning_epochs": ppo.num_epochs,
            "num_mini_batches": ppo.num_minibatches,
            "schedule": ppo.schedule,
            "desired_kl": ppo.desired_kl,
            "value_loss_coef": ppo.value_coef,
            "clip_param": ppo.clip,
            "use_clipped_value_loss": ppo.clip_value_loss,
            "entropy_coef": ppo.entropy_coef,
            "gamma": ppo.gamma,
            "lam": ppo.lam,
            "max_grad_norm": ppo.max_grad_norm,
        },
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": list(model.actor_hidden),
            "activation": model.activation,
            "obs_normalization": True,
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": model.init_std},
        },
        "critic": {
            "class_name": "MLPModel",
            "hidden_dims": list(model.critic_hidden),
            "activation": model.activation,
            "obs_normalization": True,
        },
    }
    return {**out, **changes}


def rsl_rl_policy(actor: torch.nn.Module, device: str | torch.device = "cpu"):
    """An rsl_rl actor (`runner.alg.get_policy()`) as a deterministic policy on NumPy
    observations (its mean action): what `simreal.policies.evaluate.evaluate` and
    `simreal eval`'s environments call, so an rsl_rl policy is judged as simreal's are."""
    device = torch.device(device)

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            tensor = torch.from_numpy(np.asarray(obs, dtype=np.float32)).to(device)
            group = TensorDict({"policy": tensor}, batch_size=[tensor.shape[0]], device=device)
            return actor(group).cpu().numpy()

    return act
