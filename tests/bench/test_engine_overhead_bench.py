"""bench/engine_overhead.py: a tiny side-by-side run on a G1 task (whose actuators are
written before every substep) returns the ratio and its split, and the split adds up."""

from __future__ import annotations

import pytest
from _repo import load_script

engine_overhead = load_script("bench/engine_overhead.py")


def test_a_tiny_g1_run_splits_the_gap_into_physics_and_task_layer():
    out = engine_overhead.run("g1-force", envs=4, steps=3, rounds=1)
    assert out["substeps"] == 4
    for key in (
        "raw_mjbatch_env_steps_per_s",
        "simreal_env_steps_per_s",
        "raw_per_substep_env_steps_per_s",
        "simreal_physics_ms_per_step",
        "simreal_task_layer_ms_per_step",
        "raw_ms_per_step",
        "raw_task_robots_env_steps_per_s",
        "task_robots_ratio_median",
    ):
        assert out[key] > 0, key
    # the G1's randomized robots (masses, friction, gains, joint friction) are replayed too
    assert {"body_mass", "geom_friction", "actuator_gainprm"} <= set(out["task_robot_fields"])
    assert "actuator_forcerange" not in out["task_robot_fields"]  # the envelope: task layer
    # one round: the split is of that round's wall time exactly
    wall_ms = 1e3 * out["envs"] / out["simreal_env_steps_per_s"]
    split = out["simreal_physics_ms_per_step"] + out["simreal_task_layer_ms_per_step"]
    assert split == pytest.approx(wall_ms, rel=1e-9)
    assert out["ratio_median"] == pytest.approx(
        out["simreal_env_steps_per_s"] / out["raw_mjbatch_env_steps_per_s"]
    )
