"""One Stable-Baselines3 PPO run for `bench/gym_suite.py`, in its own process.

SB3's PPO with its library defaults (the baseline a user compares against), on one
Gymnasium environment with one simulation, one torch thread, on the CPU; then SB3's own
deterministic evaluation. Prints one JSON object: the training curve (steps, episode
return), the wall time of `learn()` and the evaluation returns.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--episodes", type=int, default=10)
    args = parser.parse_args()

    import gymnasium
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(1)
    env = make_vec_env(args.env_id, n_envs=1, seed=args.seed)
    model = PPO("MlpPolicy", env, seed=args.seed, device="cpu", verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    wall = time.perf_counter() - start
    monitor = env.envs[0]
    lengths = np.cumsum(monitor.get_episode_lengths())
    curve = [
        [int(s), float(r)] for s, r in zip(lengths, monitor.get_episode_rewards(), strict=True)
    ]
    eval_env = gymnasium.make(args.env_id)
    eval_env.reset(seed=args.seed + 10_000)
    returns, _ = evaluate_policy(
        model,
        eval_env,
        n_eval_episodes=args.episodes,
        deterministic=True,
        return_episode_rewards=True,
    )
    print(
        json.dumps(
            {
                "train_wall_s": wall,
                "env_steps": int(model.num_timesteps),
                "eval_returns": [float(r) for r in returns],
                "curve": curve,
            }
        )
    )


if __name__ == "__main__":
    main()
