"""Data-parallel PPO under torchrun: 2 gloo ranks on the CPU stay one model and learn."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _repo import REPO

WORKER = REPO / "tests" / "_distributed_worker.py"


def torchrun(
    nproc: int, args: list[str], cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess:
    """`torchrun --standalone --nproc-per-node N ARGS...` (on loopback, a free port)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    cmd += ["--nproc-per-node", str(nproc), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def rank_results(out: Path, nproc: int) -> list[dict]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(nproc)]


@pytest.mark.slow
def test_two_gloo_ranks_hold_identical_parameters_after_every_update(tmp_path):
    proc = torchrun(2, [str(WORKER), "train", str(tmp_path)], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = rank_results(tmp_path, 2)
    assert [r["world_size"] for r in ranks] == [2, 2]
    assert ranks[0]["backend"] == "gloo"
    checks = ranks[0]["checks"]
    assert len(checks) == ranks[0]["iterations"] == 3
    # env steps are totals over ranks: 3 iterations x 16 steps x 32 envs x 2 ranks
    assert ranks[0]["env_steps"] == 3 * 16 * 32 * 2
    for rank in ranks:
        for check in rank["checks"]:
            assert check["max_param_diff"] == 0.0  # bit-identical, normalizers and lr too
            assert check["moved"] > 1e-6  # and the update really changed them
            a, b = check["rollout_rewards"]
            assert a != b  # each rank simulated its own episodes (its own seed)
    # only rank 0 writes the run directory
    assert (tmp_path / "run" / "checkpoints").is_dir()
    assert (tmp_path / "run" / "metrics.csv").is_file()


@pytest.mark.slow
def test_ranks_that_disagree_on_the_config_are_refused_naming_the_difference(tmp_path):
    proc = torchrun(2, [str(WORKER), "mismatch", str(tmp_path)], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for rank in rank_results(tmp_path, 2):
        assert rank["error"] is not None
        assert "train.num_envs" in rank["error"]
        assert "rank 0 has 64" in rank["error"] and "rank 1 has 128" in rank["error"]
        assert "seed" not in rank["error"]


def test_single_process_run_needs_no_torchrun(tmp_path):
    """Without torchrun's variables the same code trains as one process."""
    from simreal.policies.distributed import Distributed

    single = Distributed.from_env()
    assert (single.rank, single.world_size, single.enabled, single.is_main) == (0, 1, False, True)
    assert single.seed(7) == 7
    assert single.decide("x") == "x"
    assert single.stop_together("budget") == "budget"
    assert single.stop_together(None) is None
    assert single.average_gradients(torch.nn.Linear(2, 1), (0.25,)) == (0.25,)


@pytest.mark.parametrize(
    ("local_world_size", "learner", "gpus", "expected"),
    [
        # CPU learners: gloo on every rank, whatever GPUs the machine has.
        (2, "cpu", 0, [("gloo", "cpu")] * 2),
        (2, "cpu", 1, [("gloo", "cpu")] * 2),
        (4, "cpu", 8, [("gloo", "cpu")] * 4),
        # GPU learners with a GPU each: NCCL, rank r on GPU r.
        (2, "cuda", 2, [("nccl", "cuda:0"), ("nccl", "cuda:1")]),
        (2, "cuda", 4, [("nccl", "cuda:0"), ("nccl", "cuda:1")]),
        # More ranks than GPUs: they share GPUs round-robin, over gloo.
        (2, "cuda", 1, [("gloo", "cuda:0"), ("gloo", "cuda:0")]),
        (3, "cuda", 2, [("gloo", "cuda:0"), ("gloo", "cuda:1"), ("gloo", "cuda:0")]),
    ],
)
def test_rank_placement_follows_the_learner_and_shares_gpus(
    local_world_size, learner, gpus, expected
):
    from simreal.policies.distributed import rank_placement

    got = [
        (p.backend, p.device)
        for p in (
            rank_placement(r, local_world_size, learner, gpus) for r in range(local_world_size)
        )
    ]
    assert got == expected


def test_rank_placement_refuses_a_gpu_learner_without_gpus_and_unknown_devices():
    from simreal.policies.distributed import rank_placement

    with pytest.raises(ValueError, match="no GPU"):
        rank_placement(0, 2, "cuda", 0)
    with pytest.raises(ValueError, match="'tpu'"):
        rank_placement(0, 2, "tpu", 1)
    with pytest.raises(ValueError, match="local rank 2"):
        rank_placement(2, 2, "cpu", 0)


def hover_run(tmp_path: Path, nproc: int, envs: int) -> dict:
    """`torchrun ... -m simreal train quad-hover` and its evaluation returns."""
    out = tmp_path / f"ranks{nproc}"
    args = ["-m", "simreal", "train", "quad-hover", "--envs", str(envs), "--steps", "819200"]
    args += ["--seed", "3", "--out", str(out), "--set", "train.eval_interval=10"]
    proc = torchrun(nproc, args, tmp_path, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = (out / "quad-hover").iterdir()
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    evals = [float(r["eval_return"]) for r in rows if r["eval_return"]]
    return {"best": max(evals), "last": evals[-1], "steps": int(rows[-1]["env_steps"])}


@pytest.mark.slow
def test_two_ranks_with_half_the_envs_learn_hover_as_well_as_one_rank(tmp_path):
    one = hover_run(tmp_path, 1, 512)
    two = hover_run(tmp_path, 2, 256)
    print(f"1 rank x 512: {one}; 2 ranks x 256: {two}")
    assert one["steps"] == two["steps"]  # the same total experience
    # 0.82 M steps (50 iterations) take an untrained hover (evaluation return ~10) to a
    # few hundred: one rank x 512, seed 3, read 376 at 0.66 M and 460 at 0.82 M.
    assert one["best"] > 200
    assert two["best"] > 200
    assert two["best"] >= 0.8 * one["best"]


@pytest.mark.parametrize(
    ("device", "cuda", "expected"),
    [("auto", False, "cpu"), ("auto", True, "cuda"), ("cpu", True, "cpu"), ("cuda", True, "cuda")],
)
def test_train_device_auto_takes_the_gpu_only_when_torch_sees_one(device, cuda, expected):
    from simreal.policies.distributed import learner_kind

    assert learner_kind(device, cuda) == expected


def test_train_device_cuda_without_cuda_and_unknown_devices_are_refused_naming_them():
    from simreal.policies.distributed import learner_kind

    with pytest.raises(ValueError, match=r"train\.device=cuda"):
        learner_kind("cuda", False)
    with pytest.raises(ValueError, match="'gpu'"):
        learner_kind("gpu", True)
