"""experiments/g1_force_checkpoints.py: the pick ranks the weaker direction held in place
first, survival second; an empty run is refused naming where it looked; the sweep
selection (policies/checkpoint.py: swept_checkpoints) keeps the newest, counts back."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _repo import REPO, load_script

SCRIPT = REPO / "experiments" / "g1_force_checkpoints.py"


def held(back_in_place, fwd_in_place, back, fwd) -> dict:
    return {
        "backward_in_place_n": back_in_place,
        "forward_in_place_n": fwd_in_place,
        "backward_n": back,
        "forward_n": fwd,
    }


def test_the_weaker_direction_in_place_decides_before_survival():
    score = load_script(SCRIPT).score
    walker = held(10.0, 90.0, 190.0, 190.0)  # survives everything, holds little in place
    stander = held(40.0, 40.0, 60.0, 60.0)
    assert score(stander) > score(walker)
    assert score(held(40.0, 50.0, 80.0, 70.0)) > score(stander)  # tie in place: survival


def test_picking_by_survival_puts_the_walker_first_and_breaks_ties_in_place():
    score = load_script(SCRIPT).score
    walker = held(10.0, 90.0, 190.0, 190.0)
    stander = held(40.0, 40.0, 60.0, 60.0)
    assert score(walker, "survived") > score(stander, "survived")
    tied = held(20.0, 30.0, 190.0, 200.0)  # the same weaker direction survived
    assert score(tied, "survived") > score(walker, "survived")


def test_a_run_without_checkpoints_is_refused_naming_the_folder(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode != 0
    assert str(tmp_path / "checkpoints") in done.stderr


def test_a_sweep_takes_every_kth_back_from_the_newest_and_the_last_n(tmp_path):
    from simreal.policies.checkpoint import swept_checkpoints

    (tmp_path / "checkpoints").mkdir()
    for i in (5, 10, 100, 1000, 20, 30, 40):  # numbered, not in the order they are named
        (tmp_path / "checkpoints" / f"model_{i:06d}.pt").touch()
    names = [p.name for p in swept_checkpoints(tmp_path, every=2)]
    assert names == ["model_000005.pt", "model_000020.pt", "model_000040.pt", "model_001000.pt"]
    names = [p.name for p in swept_checkpoints(tmp_path, every=2, last=2)]
    assert names == ["model_000040.pt", "model_001000.pt"]
    assert len(swept_checkpoints(tmp_path)) == 7


def test_a_sweep_on_the_interval_judges_the_same_checkpoints_on_any_machine(tmp_path):
    """The wall-time saves differ between a fast and a slow run of one seed; the saves at
    multiples of the interval, and the newest, do not."""
    from simreal.policies.checkpoint import swept_checkpoints

    fast, slow = tmp_path / "fast", tmp_path / "slow"
    for run, timed in ((fast, (13, 27, 38, 61, 77, 88)), (slow, (31, 72))):
        (run / "checkpoints").mkdir(parents=True)
        for i in (*timed, 50, 100, 117):
            (run / "checkpoints" / f"model_{i:06d}.pt").touch()
    picked = [
        [p.name for p in swept_checkpoints(run, every=1, last=3, interval=50)]
        for run in (fast, slow)
    ]
    assert picked[0] == picked[1] == ["model_000050.pt", "model_000100.pt", "model_000117.pt"]
    assert [p.name for p in swept_checkpoints(fast, last=3)] != picked[0]
    with pytest.raises(ValueError, match="interval"):
        swept_checkpoints(fast, interval=-1)
