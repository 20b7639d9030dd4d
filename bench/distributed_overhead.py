"""What the torch.distributed wrapper costs: per-rank throughput of a 2-rank gloo run
against a 1-rank run with the same machine share.

Each rank is pinned to one CPU core (`taskset`, inside torchrun), owns --envs
simulations and trains quad-hover with PPO for --steps env steps per rank; evaluation
is off (it runs on rank 0 only and is not part of the wrapper). The 1-rank side is the
same command as two independent single-process runs at the same time, one per core,
so both sides hold the same machine share (two busy processes, one per core) and
differ only by the wrapper. Rounds alternate the two sides so that load from other
work on the machine hits both alike. Throughput is
the median of the per-iteration `steps_per_s` in metrics.csv (a total over ranks)
after the first two iterations; per rank it is divided by the rank count.

    simreal bench distributed_overhead [--envs 512] [--steps 400000] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GOAL = 0.8


def launch(nproc: int, envs: int, steps: int, out: Path, first_core: int) -> subprocess.Popen:
    """Start `torchrun` training; rank r runs pinned to core first_core + r."""
    inner = (
        f"exec taskset -c $(({first_core} + LOCAL_RANK)) {sys.executable} -m simreal train "
        f"quad-hover --envs {envs} --steps {steps * nproc} --seed 0 --out {out} "
        "--set train.eval_interval=100000 --set train.checkpoint_interval=100000"
    )
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    cmd += ["--nproc-per-node", str(nproc), "--no-python", "sh", "-c", inner]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def rate(proc: subprocess.Popen, out: Path) -> float:
    """Total env-steps/s of a finished run (median over its iterations after the first two)."""
    _, err = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(proc.args)} failed:\n{err[-3000:]}")
    (run_dir,) = (out / "quad-hover").iterdir()
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    rates = [float(r["steps_per_s"]) for r in rows[2:]] or [float(rows[-1]["steps_per_s"])]
    return statistics.median(rates)


def per_rank_rate(nproc: int, envs: int, steps: int, out: Path) -> float:
    """Per-rank env-steps/s with the machine share held equal: the 2-rank run against
    two independent 1-rank runs at once, each on its own core."""
    if nproc == 2:
        return rate(launch(2, envs, steps, out, 0), out) / 2
    outs = [out / f"core{core}" for core in (0, 1)]
    procs = [launch(1, envs, steps, o, core) for core, o in zip((0, 1), outs, strict=True)]
    return statistics.mean(rate(p, o) for p, o in zip(procs, outs, strict=True))


def run(envs: int = 512, steps: int = 400_000, rounds: int = 3) -> dict:
    per_rank: dict[int, list[float]] = {1: [], 2: []}
    ratios = []
    root = Path(tempfile.mkdtemp(prefix="simreal-dist-bench-"))
    try:
        for r in range(rounds):
            for nproc in (1, 2):
                value = per_rank_rate(nproc, envs, steps, root / f"round{r}-ranks{nproc}")
                per_rank[nproc].append(value)
                print(
                    f"round {r + 1}: {nproc} rank(s): {value:,.0f} env-steps/s per rank",
                    flush=True,
                )
            ratios.append(per_rank[2][-1] / per_rank[1][-1])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "envs_per_rank": envs,
        "steps_per_rank": steps,
        "per_rank_env_steps_per_s": {str(k): v for k, v in per_rank.items()},
        "ratios": ratios,
        "median_ratio": statistics.median(ratios),
        "goal": GOAL,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=512, help="simulations per rank")
    p.add_argument("--steps", type=int, default=400_000, help="env steps per rank per run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="also write the numbers here")
    args = p.parse_args(argv)
    result = run(args.envs, args.steps, args.rounds)
    command = "simreal bench distributed_overhead " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    result["command"] = command.strip()
    print(
        f"`{result['command']}`: 2-rank gloo per-rank throughput = "
        f"{result['median_ratio']:.0%} of 1 rank (median of {len(result['ratios'])} rounds; "
        f"goal >= {GOAL:.0%}); one core per process, two processes on both sides, "
        "machine shared with other work"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
