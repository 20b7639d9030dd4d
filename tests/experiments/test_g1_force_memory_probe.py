"""experiments/g1_force_memory_probe.py: the imitation error is split by the load's
magnitude, every state in one bin, the shares of states and of error each summing to 1."""

from __future__ import annotations

import numpy as np
from _repo import REPO, load_script

SCRIPT = REPO / "experiments" / "g1_force_memory_probe.py"


def test_imitation_error_is_split_by_the_load_it_was_made_under():
    probe = load_script(SCRIPT)
    steps, sims = 6, 4
    force = np.zeros((steps, sims, 3))
    force[:, 0, 0] = 10.0  # light
    force[:, 1, 1] = -30.0  # moderate, sideways: the magnitude decides
    force[:, 2, 0] = 60.0
    force[:, 3, 0] = -95.0  # heavy, from ahead
    student = np.zeros((steps, sims, 2))
    teacher = np.zeros((steps, sims, 2))
    teacher[:, 3] = 2.0  # only the heavy load is copied badly: error 8 per state
    teacher[:, 2, 0] = 1.0  # error 1
    data = {"force": force, "student": student, "teacher": teacher}
    rows = probe.imitation_by_load(data, skip=1)
    assert [r["load_n"] for r in rows] == [[0.0, 20.0], [20.0, 50.0], [50.0, 80.0], [80.0, None]]
    assert [r["share_of_states"] for r in rows] == [0.25] * 4
    assert [r["imitation_error"] for r in rows] == [0.0, 0.0, 1.0, 8.0]
    np.testing.assert_allclose([r["share_of_error"] for r in rows], [0, 0, 1 / 9, 8 / 9])
