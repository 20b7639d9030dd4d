"""Latency of one policy step on the robot's computer: `OnnxPolicy` at batch 1, one thread.

The deploy loop calls the policy once per control period, so the tail (p99, max)
matters as much as the median. `session.run` alone is timed beside it to show what
the wrapper's checks and reshapes cost.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from simreal.deploy import OnnxPolicy

WARMUP_CALLS = 500
DEFAULT_CALLS = 20_000


def export_quad_hover_policy(folder: Path) -> Path:
    """An untrained policy of the quad-hover shape, with the task's own metadata."""
    from simreal.policies.config import ModelConfig
    from simreal.policies.export import export_onnx
    from simreal.policies.models import ActorCritic
    from simreal.tasks.quad_hover import QuadHoverConfig
    from simreal.tasks.registry import make_env

    env = make_env("quad-hover", QuadHoverConfig(), num_envs=1)
    model = ActorCritic(env.num_obs, env.num_critic_obs, env.action_groups, ModelConfig())
    metadata = {"task": "quad-hover", **env.deployment_metadata()}
    return export_onnx(model, folder / "policy.onnx", metadata)


def latency_us(step: Callable[[], object], calls: int) -> dict[str, float]:
    """p50, p99 and max of `calls` timed calls after a warm-up, in microseconds."""
    for _ in range(WARMUP_CALLS):
        step()
    times = np.empty(calls, dtype=np.int64)
    for i in range(calls):
        start = time.perf_counter_ns()
        step()
        times[i] = time.perf_counter_ns() - start
    p50, p99 = np.percentile(times, [50, 99]) / 1e3
    return {"p50": float(p50), "p99": float(p99), "max": float(times.max() / 1e3)}


def run(policy_path: Path | None = None, calls: int = DEFAULT_CALLS) -> dict:
    """Time `policy_path` (or a fresh quad-hover-shaped export); print and return the numbers."""
    command = "python bench/onnx_inference.py"
    command += f" --policy {policy_path}" if policy_path else ""
    command += f" --calls {calls}" if calls != DEFAULT_CALLS else ""
    with tempfile.TemporaryDirectory() as tmp:
        policy = OnnxPolicy(policy_path or export_quad_hover_policy(Path(tmp)))
    obs = np.random.default_rng(0).standard_normal(policy.metadata.n_obs).astype(np.float32)
    feed = {"obs": obs[None]}
    results = {
        "command": command,
        "policy": str(policy_path or "fresh quad-hover export"),
        "calls": calls,
        "onnx_policy_us": latency_us(lambda: policy(obs), calls),
        "session_run_us": latency_us(lambda: policy.session.run(["actions"], feed), calls),
    }
    print(f"ONNX policy latency, batch 1, 1 intra-op thread, {calls} calls ({results['policy']})")
    for label, key in (
        ("OnnxPolicy.__call__", "onnx_policy_us"),
        ("session.run alone", "session_run_us"),
    ):
        t = results[key]
        print(
            f"  {label:20s} p50 {t['p50']:7.1f} us  p99 {t['p99']:7.1f} us  max {t['max']:8.1f} us"
        )
    print(f"command: {command}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--policy", type=Path, help="ONNX policy; default: a fresh quad-hover export"
    )
    parser.add_argument(
        "--calls", type=int, default=DEFAULT_CALLS, help="timed calls per measurement"
    )
    args = parser.parse_args()
    run(args.policy, args.calls)
