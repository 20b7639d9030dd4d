"""A fingerprint of every task's dynamics, observations and rewards, to prove a refactor
changes no number.

For each registered task, in training and in evaluation mode (and the quadcopters with
observation noise), the script builds a few
simulations with a fixed seed, runs a fixed seeded random-action rollout and prints a
SHA-256 over the policy and critic observations, rewards, per-term reward sums,
terminations, truncations and every finished episode's logged values (returns,
per-term rewards, metrics). Two runs on the same code and machine print the same
hashes; a refactor that keeps every hash kept every number.

    python bench/rollout_hash.py [--tasks quad-hover g1-force] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np

from simreal.tasks.registry import TASKS, make_env

NUM_ENVS = 4
STEPS = 100
SEED = 7
ACTION_SEED = 11


def _update(digest, value) -> None:
    array = np.ascontiguousarray(np.asarray(value))
    digest.update(str(array.dtype).encode())
    digest.update(str(array.shape).encode())
    digest.update(array.tobytes())


def rollout_hash(name: str, mode: str) -> tuple[str, int]:
    """SHA-256 hex digest of one fixed rollout of task `name`, and how many episodes
    ended in it (their logs are part of the hash)."""
    cfg = TASKS[name].config_cls()
    cfg.evaluation = mode == "eval"
    if mode == "noisy":
        cfg.randomization.obs_noise_std = 0.05
    env = make_env(name, cfg, NUM_ENVS, seed=SEED)
    digest = hashlib.sha256()
    obs, critic = env.reset()
    _update(digest, obs)
    _update(digest, critic)
    rng = np.random.default_rng(ACTION_SEED)
    ended = 0
    for _ in range(STEPS):
        clip = env.action_clip
        action = rng.uniform(-clip, clip, (env.num_envs, env.num_actions)).astype(np.float32)
        result = env.step(action)
        for value in (
            result.obs,
            result.critic_obs,
            result.reward,
            result.terminated,
            result.truncated,
            result.final_critic_obs,
        ):
            _update(digest, value)
        for term in sorted(env.episode_terms):
            digest.update(term.encode())
            _update(digest, env.episode_terms[term])
        episode = result.info.get("episode", {})
        ended += len(episode.get("length", ()))
        for key, value in sorted(episode.items()):
            digest.update(key.encode())
            _update(digest, value)
    return digest.hexdigest(), ended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="*", default=sorted(TASKS), help="task names")
    parser.add_argument("--json", help="also write the hashes to this JSON file")
    args = parser.parse_args(argv)
    hashes = {}
    for name in args.tasks:
        randomization = getattr(TASKS[name].config_cls(), "randomization", None)
        noisy = hasattr(randomization, "obs_noise_std")
        for mode in ("train", "eval", "noisy") if noisy else ("train", "eval"):
            key = f"{name}/{mode}"
            hashes[key], ended = rollout_hash(name, mode)
            print(f"{key:22s} {hashes[key]}  ({ended} episodes ended)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(hashes, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
