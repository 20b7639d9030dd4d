"""bench/native_motor.py: MuJoCo's own `dcmotor` gives the G1 motors' torque-speed envelope
to rounding, its native delay the tasks' command latency from one substep up (not below),
and the speed side returns a time for each variant.

Why a test: the finding in docs/benchmarks.md rests on these equivalences; a MuJoCo
upgrade that changes either shows here first."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from simreal.tasks import get_task, make_env

BENCH = Path(__file__).resolve().parent.parent / "bench" / "native_motor.py"
spec = importlib.util.spec_from_file_location("native_motor", BENCH)
native_motor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native_motor)


def _mjcf() -> str:
    return make_env("g1-pull", get_task("g1-pull").config_cls(), 1, seed=0).mjcf


def test_dcmotor_reproduces_the_torque_speed_envelope():
    out = native_motor.envelope_error(_mjcf(), samples=200)
    assert out["clamped"] > 0.1 * out["samples"]  # the envelope's clipping is exercised
    assert out["max_abs_error_n_m"] < 1e-9


def test_native_delay_matches_the_blend_from_one_substep_and_not_below():
    mjcf = _mjcf()
    for late in (1.0, 1.5, 2.7):
        expected = np.clip(late - np.arange(6), 0.0, 1.0)
        np.testing.assert_allclose(native_motor.held_share(mjcf, late), expected, atol=2e-3)
    # under one substep the new command waits a whole substep natively
    assert native_motor.held_share(mjcf, 0.3)[0] == 1.0


def test_a_tiny_speed_run_times_every_variant():
    out = native_motor.speed("g1-pull", envs=4, steps=2, rounds=1)
    for key in ("task_ms_per_step", "native_one_call_ms_per_step", "native_two_calls_ms_per_step"):
        assert out[key] > 0, key
    assert 0.0 <= out["latency_under_one_substep_share"] <= 1.0
