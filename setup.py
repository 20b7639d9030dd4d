"""The package list for setuptools, derived from the folders that pyproject.toml maps.

pyproject.toml's [tool.setuptools.package-dir] maps each top-level source folder (robots/,
tasks/, ...) to a subpackage of `simreal`. setuptools' declarative `find` names packages by
their folder path, not by that mapping, so the subpackages below each mapped folder
(`simreal.tasks.g1_walk`, ...) are found here; a list kept by hand once left one out of
the wheel while the editable install hid it. Everything else is in pyproject.toml.
"""

import sys
from pathlib import Path

from setuptools import find_packages, setup

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent


def packages() -> list[str]:
    """Every mapped package and every package folder below it, by its name in `simreal`."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_dir = pyproject["tool"]["setuptools"]["package-dir"]
    found = []
    for name, folder in package_dir.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_packages(str(ROOT / folder))]
    return sorted(found)


setup(packages=packages())
