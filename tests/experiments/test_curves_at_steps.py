"""experiments/curves_at_steps.py: the mean of a column over the window before each mark,
and nothing where a run has not reached the mark."""

from __future__ import annotations

import pytest
from _repo import REPO, load_script

SCRIPT = REPO / "experiments" / "curves_at_steps.py"


def test_marks_average_their_window_and_stay_empty_past_the_run(tmp_path):
    rows = ["env_steps,train_return,reward/x"]
    rows += [f"{k * 250_000},{k},{'' if k == 3 else 2 * k}" for k in range(1, 9)]  # to 2 M
    (tmp_path / "metrics.csv").write_text("\n".join(rows) + "\n")
    m = load_script(SCRIPT)
    out = m.at_steps(m.rows_of(tmp_path), [1.0, 2.0, 3.0], ["train_return", "reward/x"], 0.5)
    assert out["1.0"] == {"train_return": 3.5, "reward/x": 8.0}  # rows at 0.75 and 1.0 M
    assert out["2.0"] == {"train_return": 7.5, "reward/x": 15.0}
    assert out["3.0"] == {"train_return": None, "reward/x": None}
    # a column this run does not log (it predates it) reads as empty
    assert m.at_steps(m.rows_of(tmp_path), [1.0], ["nope"], 0.5) == {"1.0": {"nope": None}}
    with pytest.raises(SystemExit):  # no run logs it at all: an error naming it
        m.main([str(tmp_path), "--steps", "1", "--columns", "nope"])
