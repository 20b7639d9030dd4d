"""Loop timing of the G1 deploy node against the virtual robot, over DDS on loopback.

Two processes, as on a robot: `simreal sim-robot g1 --band` (MuJoCo at 500 Hz behind
rt/lowstate and rt/lowcmd) and `simreal deploy POLICY --robot g1 --auto-start` (the
node: start-up sequence, then the policy at 50 Hz, low-level commands at 500 Hz), for
`--seconds` each, once without and once with rosbag2 logging. Printed: jitter (actual
period minus nominal) p50/p99/max of the 500 Hz command stream and of the 50 Hz policy
loop, overruns, policy inference time p50/p99, log messages dropped, and the virtual
robot's own loop jitter. The machine's load average is printed too: the numbers mean
little on a loaded machine. Without --policy an untrained
but complete g1-force policy is exported first (the loop cost does not depend on the
weights, only on the network's size).

    python bench/deploy_jitter.py [--seconds 60] [--policy POLICY.onnx] [--json FILE]
                                  [--rt-priority P]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from simreal.reports import emit

ROOT = Path(__file__).resolve().parent.parent


def untrained_policy(path: Path) -> Path:
    from simreal.config import apply_overrides, to_plain
    from simreal.policies.config import TrainConfig
    from simreal.policies.export import export_onnx
    from simreal.policies.models import ActorCritic
    from simreal.tasks import get_task, make_env

    spec = get_task("g1-force")
    cfg = spec.config_cls(evaluation=True)
    env = make_env("g1-force", cfg, 1)
    model_cfg = apply_overrides(TrainConfig(), list(spec.train_defaults), "train.").model
    model = ActorCritic(env.num_obs, env.num_critic_obs, env.action_groups, model_cfg)
    meta = {**env.deployment_metadata(), "task": "g1-force", "task_config": to_plain(cfg)}
    return export_onnx(model, path, meta)


def run_pair(
    policy: Path, seconds: float, domain: int, log_dir: Path | None, rt_priority: int | None
) -> dict:
    env = {
        **os.environ,
        "CYCLONEDDS_URI": os.environ.get("CYCLONEDDS_URI", f"file://{ROOT}/dds/loopback.xml"),
    }
    simreal = [sys.executable, "-m", "simreal"]
    rt = [] if rt_priority is None else ["--rt-priority", str(rt_priority)]
    robot = subprocess.Popen(
        [
            *simreal,
            "sim-robot",
            "g1",
            "--band",
            "--domain",
            str(domain),
            "--duration",
            str(seconds + 8),
            *rt,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    node_cmd = [
        *simreal,
        "deploy",
        str(policy),
        "--robot",
        "g1",
        "--auto-start",
        "--domain",
        str(domain),
        "--duration",
        str(seconds),
        *rt,
    ]
    if log_dir is not None:
        node_cmd += ["--log", str(log_dir)]
    node = subprocess.run(
        node_cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL
    )
    robot_out, _ = robot.communicate(timeout=seconds + 60)
    node_summary = json.loads(node.stdout.strip().splitlines()[-1])
    robot_summary = json.loads(robot_out.strip().splitlines()[-1])
    return {"node": node_summary, "virtual_robot": robot_summary}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--policy", type=Path)
    p.add_argument("--json", type=Path)
    p.add_argument(
        "--rt-priority",
        type=int,
        metavar="P",
        help="run both loops SCHED_FIFO at priority P (needs root or CAP_SYS_NICE)",
    )
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        policy = args.policy or untrained_policy(Path(tmp) / "g1_untrained.onnx")
        report = {
            "command": "python bench/deploy_jitter.py " + " ".join(sys.argv[1:]),
            "seconds": args.seconds,
            "without_log": run_pair(policy, args.seconds, 41, None, args.rt_priority),
            "with_log": run_pair(policy, args.seconds, 42, Path(tmp) / "log", args.rt_priority),
        }
    emit(report, args.json)
    for name in ("without_log", "with_log"):
        n = report[name]["node"]
        print(
            f"{name}: 500 Hz commands p99 {n.get('jitter_p99_ms')} ms (overruns {n.get('overruns')}), "
            f"50 Hz policy p99 {n.get('policy_jitter_p99_ms')} ms, "
            f"inference p99 {n.get('inference_p99_us')} us, log dropped {n.get('log_dropped')}, "
            f"final mode {n.get('mode')}"
        )
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
