"""`python -m simreal`: the `simreal` command, from any folder.

Python looks for `simreal` in the current folder before the installed package, and two
folders are named so: a repository's source folder `simreal/` (the repository root is
the current folder) and a clone named `simreal` (its parent is). Either one, imported in
the installed package's place, lacks the rest of the package (`simreal.sim`, ...;
`simreal.__version__`). When that happened, this module drops the current folder from
the import path and imports the installed package instead; with none installed it says
where to run from.
"""

import importlib.util
import os
import sys


def _shadowed() -> bool:
    """Whether the `simreal` imported is a folder in the current directory, not the package."""
    package = sys.modules.get("simreal")
    if package is None or getattr(package, "__file__", None) is None:
        return True  # a namespace package: the folder of a clone named simreal
    return importlib.util.find_spec("simreal.sim") is None  # the bare source folder


def _import_installed() -> None:
    here = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    for name in [m for m in sys.modules if m == "simreal" or m.startswith("simreal.")]:
        del sys.modules[name]
    try:
        importlib.import_module("simreal")
        if not _shadowed():
            return
    except ImportError:
        pass
    sys.exit(
        f"python -m simreal: the folder named simreal in {here} is not the installed "
        f"package, and no simreal is installed for {sys.executable}. Install it "
        "(`pip install -e .` in the repository root), or run `python -m simreal` from a "
        "folder that holds no folder named simreal (the `simreal` command works anywhere)."
    )


if _shadowed():
    _import_installed()

from simreal.cli import main  # noqa: E402 (after the import path is settled)

raise SystemExit(main())
