"""The PPO update of a decoupled actor against a coupled one, side by side.

Builds G1-sized actor-critics (g1-pull's observation sizes and action groups, the G1
training defaults' 256-128 MLPs), fills a rollout of `--samples` random transitions and
times the project's own `PPO.update` (5 epochs x 4 minibatches, as the G1 tasks train)
for: the coupled actor, the decoupled actor with its group MLPs run one after another,
and the decoupled actor run stacked (`stacked_mlp`: one batched product per layer).
Rounds alternate so machine noise hits all three alike; the medians are printed with
the ratios to coupled, beside the ratio of the networks' arithmetic (multiply-adds of
their linear layers per sample): the bound a CPU update, limited by its matrix products,
cannot beat however the groups are batched.

    python bench/decoupled_update.py [--samples 32768] [--threads 2] [--rounds 5] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch

from simreal.policies.config import ModelConfig, PPOConfig
from simreal.policies.models import ActorCritic
from simreal.policies.ppo import PPO
from simreal.policies.storage import RolloutStorage
from simreal.policies.vecenv import StepResult
from simreal.tasks.g1.config import G1_TRAIN_DEFAULTS
from simreal.tasks.g1.env import ACTION_GROUPS
from simreal.tasks.g1_pull.observations import PULL_CRITIC_OBSERVATION, PULL_POLICY_OBSERVATION

STEPS_PER_ENV = 24


def variant(arch: str, stack: bool | None, samples: int, device: str) -> PPO:
    n_obs = sum(size for _, size in PULL_POLICY_OBSERVATION)
    n_critic = sum(size for _, size in PULL_CRITIC_OBSERVATION)
    n_actions = sum(len(idx) for idx in ACTION_GROUPS.values())
    hidden = dict(
        actor_hidden=G1_TRAIN_DEFAULTS.actor_hidden, critic_hidden=G1_TRAIN_DEFAULTS.critic_hidden
    )
    torch.manual_seed(0)
    config = ModelConfig(arch=arch, **hidden)
    model = ActorCritic(n_obs, n_critic, ACTION_GROUPS, config).to(device)
    model.actor.stack = stack
    envs = samples // STEPS_PER_ENV
    storage = RolloutStorage(STEPS_PER_ENV, envs, n_obs, n_critic, n_actions, device)
    ppo = PPO(model, PPOConfig(num_epochs=5, num_minibatches=4), storage, seed=0)
    rng = np.random.default_rng(0)
    running = np.zeros(envs, dtype=bool)
    for _ in range(STEPS_PER_ENV):
        obs = torch.randn(envs, n_obs, device=device)
        critic = torch.randn(envs, n_critic, device=device)
        ppo.act(obs, critic)
        reward = rng.normal(size=envs).astype(np.float32)
        ppo.record(StepResult(obs, critic, reward, running, running, critic))
    ppo.finish_rollout(torch.randn(envs, n_critic, device=device))
    return ppo


def multiply_adds(model: torch.nn.Module) -> int:
    """Multiply-adds per sample of one forward pass through every linear layer of
    `model` (actor groups and critic): the update's arithmetic, forward and backward,
    scales with it."""
    return sum(
        m.in_features * m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear)
    )


def run(samples: int = 32768, threads: int = 2, rounds: int = 5, device: str = "cpu") -> dict:
    torch.set_num_threads(threads)
    variants = {
        "coupled": ("coupled", None),
        "decoupled_per_group": ("decoupled", False),
        "decoupled_stacked": ("decoupled", True),
    }
    ppos = {name: variant(arch, stack, samples, device) for name, (arch, stack) in variants.items()}
    times: dict[str, list[float]] = {name: [] for name in ppos}
    for _ in range(rounds):
        for name, ppo in ppos.items():
            _sync(device)
            start = time.perf_counter()
            ppo.update()
            _sync(device)
            times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(t) for name, t in times.items()}
    work = {name: multiply_adds(ppo.model) for name, ppo in ppos.items()}
    return {
        "samples": samples,
        "threads": threads,
        "device": device,
        "update_s_median": median,
        "ratio_to_coupled": {name: median[name] / median["coupled"] for name in median},
        "multiply_adds_per_sample": work,
        "arithmetic_ratio_to_coupled": {name: work[name] / work["coupled"] for name in work},
        "update_s_per_round": times,
    }


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=32768)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    out = run(args.samples, args.threads, args.rounds, args.device)
    print("command: python bench/decoupled_update.py " + " ".join(sys.argv[1:]))
    print(json.dumps(out, indent=2))
    for name, ratio in out["ratio_to_coupled"].items():
        arithmetic = out["arithmetic_ratio_to_coupled"][name]
        print(
            f"{name}: {out['update_s_median'][name]:.3f} s, {ratio:.2f}x coupled "
            f"(arithmetic {arithmetic:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
