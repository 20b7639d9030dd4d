"""The README's task table and docs/results.md are generated from the committed eval JSONs
(`simreal report`): these tests fail when the committed text and the JSONs disagree, and
show that the check would notice a changed number."""

import json
import re
import shutil
from pathlib import Path

import pytest

from simreal import reports
from simreal.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_committed_tables_match_the_eval_jsons():
    problems = reports.report(ROOT, check=True)
    assert not problems, "\n\n".join(problems) + "\nrun `simreal report` to regenerate them"


def test_every_headline_cell_is_short_and_links_its_results():
    for row in reports.HEADLINES:
        cell = reports.headline_cell(row, ROOT)
        assert len(cell) <= reports.CELL_LIMIT, (row.task, len(cell))
        assert f"(results/{row.task}/README.md)" in cell
        assert (ROOT / "results" / row.task / "README.md").is_file(), row.task
        assert re.search(r"\*\*[^*]*\d[^*]*\*\*", cell), f"{row.task}: no bold number"


def test_readme_is_a_map():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert not re.search(r"20\d\d-\d\d", text), "a date in the README"
    hashes = [h for h in re.findall(r"\b[0-9a-f]{7,40}\b", text) if re.search("[a-f]", h)]
    assert not hashes, f"commit hashes in the README: {hashes}"
    for link in re.findall(r"\]\(([^)#]+)", text):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the README, docs/results.md and every task's JSONs, to change freely."""
    for path in (ROOT / "results").glob("*/*.json"):
        target = tmp_path / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (tmp_path / "docs").mkdir()
    shutil.copyfile(ROOT / "README.md", tmp_path / "README.md")
    shutil.copyfile(ROOT / "docs" / "results.md", tmp_path / "docs" / "results.md")
    return tmp_path


def _set(path: Path, key: str, value) -> None:
    data = json.loads(path.read_text())
    assert key in data
    data[key] = value
    path.write_text(json.dumps(data, indent=2) + "\n")


def test_a_changed_eval_value_changes_both_tables(tree: Path, capsys):
    assert reports.report(tree, check=True) == []
    _set(tree / "results/g1-pull/eval_mu0.7.json", "peak_pull_force_backward_n", 171.26)

    assert main(["report", "--check", "--root", str(tree)]) == 1
    err = capsys.readouterr().err
    assert "README.md: table 'tasks' differs" in err
    assert "docs/results.md: table 'results/g1-pull' differs" in err
    assert "171.3" in err and "quad-hover" not in err  # only the changed rows

    assert main(["report", "--root", str(tree)]) == 0
    assert "holds **171.3 N** back" in (tree / "README.md").read_text()
    assert "| 171.3 |" in (tree / "docs/results.md").read_text()
    assert reports.report(tree, check=True) == []


def test_pooled_seeds_are_weighted_by_episodes(tree: Path):
    """quad-swarm's headline pools three seeds; one seed's success moves the pooled rate."""
    row = next(r for r in reports.HEADLINES if r.task == "quad-swarm")
    before = reports.headline_cell(row, tree)
    assert "**77.1 %**" in before and "seeds 3, 4, 5, 192 episodes pooled" in before
    _set(tree / "results/quad-swarm" / row.pool[0], "success", 1.0)  # 78.1 % -> 100 %
    assert "**84.4 %**" in reports.headline_cell(row, tree)


def test_bad_input_names_the_file_and_field(tree: Path):
    path = tree / "results/lane-keep/eval.json"
    data = json.loads(path.read_text())
    del data["lateral_rmse_pooled_m"]
    path.write_text(json.dumps(data))
    with pytest.raises(KeyError, match=r"results/lane-keep/eval.json.*lateral_rmse_pooled_m"):
        reports.report(tree, check=True)

    text = (tree / "README.md").read_text().replace("<!-- /report:tasks -->", "")
    (tree / "README.md").write_text(text)
    path.write_text(json.dumps({**data, "lateral_rmse_pooled_m": 0.05}))
    with pytest.raises(KeyError, match=r"README\.md: no .* markers for tasks"):
        reports.report(tree, check=True)


def test_python_m_simreal_reports_checks_too(tree: Path):
    assert reports.main(["--check", "--root", str(tree)]) == 0
    _set(tree / "results/dex-track/eval_onnx.json", "success_rate", 0.5)
    assert reports.main(["--check", "--root", str(tree)]) == 1
