"""bench/native_motor.py: MuJoCo's own `dcmotor` gives the G1 motors' torque-speed envelope
to rounding, its native delay the tasks' command latency from one physics step up (not
below, which is why `actuation=native` blends that first step by hand), and the speed side
times both paths.

Why a test: `G1Config.actuation="native"` rests on these equivalences; a MuJoCo upgrade
that changes either shows here first."""

from __future__ import annotations

import numpy as np
from _repo import load_script

native_motor = load_script("bench/native_motor.py")


def test_dcmotor_reproduces_the_torque_speed_envelope():
    out = native_motor.envelope_error(samples=200)
    assert out["clamped"] > 0.1 * out["samples"]  # the envelope's clipping is exercised
    assert out["max_abs_error_n_m"] < 1e-9


def test_native_delay_matches_the_blend_from_one_step_and_not_below():
    for late in (1.0, 1.5, 2.7):
        expected = np.clip(late - np.arange(6), 0.0, 1.0)
        got = native_motor.held_share(late)
        np.testing.assert_allclose(got, expected, atol=2e-3, err_msg=str(late))
    # under one step the new command waits a whole step natively
    assert native_motor.held_share(0.3)[0] == 1.0


def test_a_tiny_speed_run_times_both_paths():
    out = native_motor.speed("g1-pull", envs=4, steps=2, rounds=1)
    for path in ("substeps", "native"):
        assert out[f"{path}_ms_per_step"] >= out[f"{path}_physics_ms_per_step"] > 0, path
    assert out["speedup"] > 0
