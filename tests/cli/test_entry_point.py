"""`python -m simreal` from the folders where a folder named simreal shadows the package:
the repository root (its source folder `simreal/`) and the parent of a clone named
`simreal`. It works there with the package installed, editable or not, and says where to
run from when none is installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _repo import REPO

pytestmark = pytest.mark.slow  # each test starts a Python process

NO_SIMREAL_HERE = "no folder named simreal"


def site_packages() -> list[str]:
    """The interpreter's package folders (numpy, torch, ...), to pass on as PYTHONPATH to
    a `python -S` that processes no .pth file, so an editable install's finder is off."""
    return [p for p in sys.path if p.endswith("site-packages")]


def installed_layout(root: Path) -> Path:
    """The package as a regular (non-editable) install lays it out: simreal/ with each
    part mapped in by pyproject's package-dir."""
    site = root / "site"
    shutil.copytree(
        REPO / "simreal", site / "simreal", ignore=shutil.ignore_patterns("__pycache__")
    )
    text = (REPO / "pyproject.toml").read_text()
    table = text[text.index("[tool.setuptools.package-dir]") :].split("\n\n")[0]
    for name, folder in re.findall(r'"simreal\.(\w+)" = "(\w+)"', table):
        (site / "simreal" / name).symlink_to(REPO / folder, target_is_directory=True)
    return site


def python_m_simreal(cwd: Path, *, pythonpath: list[str] | None = None, isolated_site=False):
    cmd = [sys.executable, *(["-S"] if isolated_site else []), "-m", "simreal", "tasks"]
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def lists_tasks(proc: subprocess.CompletedProcess) -> bool:
    return proc.returncode == 0 and re.search(r"^quad-hover\s+\S", proc.stdout, re.M) is not None


def test_from_the_repository_root():
    proc = python_m_simreal(REPO)
    assert lists_tasks(proc), proc.stderr[-2000:]


def test_from_the_parent_of_a_clone_named_simreal(tmp_path):
    (tmp_path / "simreal").symlink_to(REPO, target_is_directory=True)
    proc = python_m_simreal(tmp_path)
    assert lists_tasks(proc), proc.stderr[-2000:]


def test_from_the_repository_root_with_a_regular_install(tmp_path):
    """Here the source folder `simreal/` is imported first and lacks `simreal.sim`."""
    site = installed_layout(tmp_path)
    proc = python_m_simreal(REPO, pythonpath=[str(site), *site_packages()], isolated_site=True)
    assert lists_tasks(proc), proc.stderr[-2000:]


def test_without_an_install_it_says_where_to_run_from(tmp_path):
    (tmp_path / "simreal").symlink_to(REPO, target_is_directory=True)
    for cwd in (REPO, tmp_path):
        proc = python_m_simreal(cwd, pythonpath=site_packages(), isolated_site=True)
        assert proc.returncode != 0
        assert NO_SIMREAL_HERE in proc.stderr and "pip install -e ." in proc.stderr, proc.stderr
        assert str(cwd) in proc.stderr
