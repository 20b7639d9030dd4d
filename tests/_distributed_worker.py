"""One torchrun rank for tests/test_distributed.py; writes what it saw to OUT/rank<r>.json.

`python -m torch.distributed.run --standalone --nproc-per-node 2 _distributed_worker.py MODE OUT`
MODE `train`: a few PPO iterations of quad-hover through the real runner; after every
update the ranks compare their parameters, normalizers and learning rates (all-gather).
MODE `mismatch`: rank 1 asks for another environment count; both ranks must refuse.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from simreal.policies import TrainConfig
from simreal.policies.distributed import Distributed
from simreal.policies.runner import OnPolicyRunner
from simreal.tasks import get_task, make_env


def model_state(runner: OnPolicyRunner) -> torch.Tensor:
    """Every parameter and buffer (normalizers included) and the learning rates, flat."""
    tensors = [t.detach().reshape(-1).double() for t in runner.model.state_dict().values()]
    rates = [g["lr"] for g in runner.ppo.optimizer.param_groups]
    return torch.cat([*tensors, torch.tensor(rates, dtype=torch.float64)])


def train(distributed: Distributed, out: Path) -> dict:
    cfg = TrainConfig(num_envs=32, max_env_steps=3 * 16 * 32 * 2, seed=5, eval_interval=1000)
    cfg.ppo.num_steps_per_env = 16
    spec = get_task("quad-hover")
    env = make_env(
        spec.name, spec.config_cls(), cfg.num_envs, "mjbatch", distributed.seed(cfg.seed)
    )
    runner = OnPolicyRunner(env, cfg, out / "run", distributed=distributed)
    checks: list[dict] = []
    update = runner.ppo.update

    def checked_update(*args, **kwargs):
        before = model_state(runner)
        losses = update(*args, **kwargs)
        mine = model_state(runner)
        everyone = [torch.zeros_like(mine) for _ in range(distributed.world_size)]
        dist.all_gather(everyone, mine)
        rewards = runner.ppo.storage.rewards.sum().reshape(1).double()
        all_rewards = [torch.zeros_like(rewards) for _ in range(distributed.world_size)]
        dist.all_gather(all_rewards, rewards)
        checks.append(
            {
                "max_param_diff": max(float((e - mine).abs().max()) for e in everyone),
                "moved": float((mine - before).abs().max()),
                "rollout_rewards": [float(r) for r in all_rewards],
                "learning_rate": runner.ppo.learning_rate,
            }
        )
        return losses

    runner.ppo.update = checked_update
    runner.learn()
    return {"checks": checks, "env_steps": runner.env_steps, "iterations": runner.iteration}


def mismatch(distributed: Distributed) -> dict:
    config = {"task": "quad-hover", "train": {"num_envs": 64 + 64 * distributed.rank, "seed": 0}}
    try:
        distributed.check_same_config(config)
    except ValueError as err:
        return {"error": str(err)}
    return {"error": None}


def main() -> None:
    mode, out = sys.argv[1], Path(sys.argv[2])
    distributed = Distributed.from_env()
    result = train(distributed, out) if mode == "train" else mismatch(distributed)
    result["world_size"] = distributed.world_size
    result["backend"] = distributed.backend
    (out / f"rank{distributed.rank}.json").write_text(json.dumps(result))
    distributed.close()


if __name__ == "__main__":
    main()
