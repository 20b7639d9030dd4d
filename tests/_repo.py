"""Where the repository is, seen from the tests, and its scripts (bench/, experiments/) as
modules: one place that knows the test folders sit one level below tests/."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_script(relative: str | Path) -> ModuleType:
    """Import the script at `relative` (to the repository, or absolute) as a module named after its file.

    It is registered in sys.modules while and after it runs (dataclasses look their module
    up there) and its folder is on sys.path while it loads (scripts import their siblings,
    e.g. experiments/g1_walk_chain.py imports g1_pull_chain)."""
    path = REPO / relative
    folder = str(path.parent)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module
