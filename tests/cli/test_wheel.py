"""The package as a user gets it from `pip install .`: a wheel, not the editable install.

CI installs editable, and the editable finder resolves any `simreal.*` module from the
checkout, so a package the wheel leaves out goes unnoticed there (this is how
`simreal.tasks.g1_walk` once went missing from the wheel). Here the wheel is built from a
copy of the sources, installed into an empty folder, and used from a folder outside the
checkout by a `python -S`, which processes no .pth file and so never installs the editable
finder: every module the checkout has must import from the wheel, and `simreal tasks` must
list every registered task.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simreal.tasks.registry import TASKS

pytestmark = pytest.mark.slow  # builds a wheel in a fresh build environment (~30 s)

REPO = Path(__file__).resolve().parents[2]

FOLDERS = {
    "simreal": "simreal",
    "robots": "simreal.robots",
    "sim": "simreal.sim",
    "tasks": "simreal.tasks",
    "policies": "simreal.policies",
    "deploy": "simreal.deploy",
    "calibration": "simreal.calibration",
}
"""Each top-level source folder and the package it installs as."""

JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "MUJOCO_LOG.TXT")

IMPORT_EACH = """
import importlib, json, sys
report = {}
for name in json.loads(sys.argv[1]):
    try:
        module = importlib.import_module(name)
        report[name] = ["ok", getattr(module, "__file__", None)]
    except ImportError as err:
        cause = err if err.name else (err.__cause__ or err)
        report[name] = [type(err).__name__, getattr(cause, "name", None), str(err)]
print(json.dumps(report))
"""


def source_modules() -> list[str]:
    """Every module of the checkout, by the name it has in the package."""
    names = []
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if "__pycache__" in parts or parts[-1] == "__main__":
                continue  # __main__ runs the CLI on import
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join((package, *parts)))
    return names


def data_files() -> list[Path]:
    """Files other than Python sources inside the package folders (models, tables...),
    relative to the package root: the wheel must carry them too."""
    files = []
    for folder, package in FOLDERS.items():
        root = REPO / folder
        for path in root.rglob("*"):
            if (
                path.is_file()
                and path.suffix not in {".py", ".pyc"}
                and "__pycache__" not in path.parts
                and path.name != "MUJOCO_LOG.TXT"
            ):
                files.append(Path(*package.split(".")) / path.relative_to(root))
    return files


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel built from a copy of the sources (so no build/ folder lands in the
    checkout), installed with --no-deps into an empty --target folder."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for path in REPO.iterdir():
        if path.is_file() and not path.name.startswith("."):
            shutil.copy2(path, src / path.name)  # pyproject.toml, setup.py, README.md, ...
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, src / folder, ignore=JUNK)
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", "--no-deps", "--no-cache-dir", "-q", "-w", str(root / "dist"), str(src)])
    (wheel,) = (root / "dist").glob("simreal-*.whl")
    target = root / "target"
    run([*pip, "install", "--no-deps", "--no-compile", "-q", "--target", str(target), str(wheel)])
    return target


def outside_python(target: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """A Python that sees the installed wheel and the dependencies, but not the checkout nor
    the editable finder (-S: no .pth files), run from a folder outside the checkout."""
    site = [p for p in sys.path if p.endswith("site-packages")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), *site])}
    cwd = tmp_path / "elsewhere"
    cwd.mkdir(exist_ok=True)
    return run([sys.executable, "-S", *args], cwd=cwd, env=env)


def test_every_module_imports_from_the_wheel(installed, tmp_path):
    names = source_modules()
    proc = outside_python(installed, tmp_path, "-c", IMPORT_EACH, json.dumps(names))
    report = json.loads(proc.stdout.splitlines()[-1])
    missing_here = []
    for name, result in report.items():
        if result[0] == "ok":
            assert result[1] is None or Path(result[1]).is_relative_to(installed), (name, result)
        else:
            missing_here.append((name, *result))
    # A module may need an optional extra that this machine lacks; a module of the package
    # itself must never be missing.
    left_out = [m for m in missing_here if (m[2] or "").split(".")[0] in ("", "simreal")]
    absent = sorted({m[2] or m[4] for m in left_out})
    assert not left_out, f"{len(left_out)} modules do not import from the wheel; it lacks {absent}"
    assert sum(result[0] == "ok" for result in report.values()) > 0.9 * len(names), missing_here


def test_the_wheel_carries_the_package_data(installed):
    absent = [str(path) for path in data_files() if not (installed / path).is_file()]
    assert not absent, f"data files missing from the wheel: {absent}"


def test_simreal_tasks_lists_every_task_from_the_wheel(installed, tmp_path):
    """Through the console script the wheel installs (bin/simreal), as a user runs it."""
    proc = outside_python(installed, tmp_path, str(installed / "bin" / "simreal"), "tasks")
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    assert listed == set(TASKS), proc.stdout
