"""The rows a DDS excitation log marks as disturbed (a command of uncertain timing, a lost
or off-period state) are left out of the fits: the marks survive the log, and a gain fit
on a log whose marked rows log the wrong command comes out as on the clean log, where
the same fit without the marks is pulled off. Real MuJoCo (the in-process virtual robot)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simreal.calibration import routines
from simreal.calibration.dynamics import _kept_rows, fit_gains, smoothed
from simreal.calibration.excite import GROUPS, ExcitationConfig
from simreal.calibration.excite_dds import row_ranges
from simreal.calibration.logdata import CalibrationError, _row_mask, load_hung_log
from simreal.calibration.perturbation import random_perturbation
from simreal.deploy.g1.overlay import parse_overlay

LEG = GROUPS["left_leg"]


def test_row_ranges_round_trip():
    mask = np.zeros(12, dtype=bool)
    mask[[0, 1, 5, 9, 10, 11]] = True
    ranges = row_ranges(mask)
    assert ranges == [[0, 2], [5, 6], [9, 12]]
    np.testing.assert_array_equal(_row_mask({"r": ranges}, "r", 12, "log"), mask)
    assert _row_mask({}, "r", 12, "log") is None
    with pytest.raises(CalibrationError, match=r"log: dds_loop.r range \[9, 13\)"):
        _row_mask({"r": [[9, 13]]}, "r", 12, "log")


@pytest.fixture(scope="module")
def leg_log(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mask")
    truth = random_perturbation(3, LEG)
    routines.excite(ExcitationConfig(group="left_leg"), tmp / "log", parse_overlay(truth))
    log = load_hung_log(tmp / "log", ("joint_position", "command"), "actuators")
    assert log.uncertain_command is None and log.bad_state is None  # in process: no marks
    return smoothed(log, 20.0), truth


def test_kept_rows_follow_the_latency(leg_log):
    log, _ = leg_log
    n = len(log.t)
    log = replace(log, uncertain_command=np.zeros(n, dtype=bool), bad_state=np.zeros(n, dtype=bool))
    log.uncertain_command[100] = True
    log.bad_state[200] = True
    whole = np.flatnonzero(~_kept_rows(log, 3.0, 0))
    np.testing.assert_array_equal(whole, [103, 200, 201])  # command 100 acts at row 103
    part = np.flatnonzero(~_kept_rows(log, 3.4, 0))
    np.testing.assert_array_equal(part, [103, 104, 200, 201])  # and over part of row 104


def test_marked_rows_with_the_wrong_command_do_not_pull_the_gains(leg_log):
    """One row in 12 logs the next tick's command (the robot took it a tick late, the
    client guessed in time) and is marked uncertain, as the DDS client marks it."""
    clean_log, truth = leg_log
    clean = fit_gains(clean_log, LEG)
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(np.arange(200, len(clean_log.t) - 1), len(clean_log.t) // 12))
    cmd = {k: v.copy() for k, v in clean_log.cmd.items()}
    for v in cmd.values():
        v[rows] = v[rows + 1]
    wrong = replace(clean_log, cmd=cmd)
    unmarked = fit_gains(wrong, LEG)
    marked_log = replace(wrong, uncertain_command=np.isin(np.arange(len(wrong.t)), rows))
    marked = fit_gains(marked_log, LEG)

    def worst(fit) -> float:
        return max(
            abs(getattr(fit, key)[n].value - getattr(clean, key)[n].value)
            for n in LEG
            for key in ("kp_scale", "kd_scale")
        )

    assert worst(marked) < 0.003, worst(marked)
    assert worst(unmarked) > 3 * worst(marked), (worst(unmarked), worst(marked))
    shift = [abs(f.latency_ticks - clean.latency_ticks) for f in (marked, unmarked)]
    assert shift[0] < shift[1], shift
    assert abs(clean.latency_ticks * clean_log.dt * 1e3 - truth["latency_ms"]) < 0.1
