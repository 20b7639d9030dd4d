"""The install hint of an engine that is not installed names an extra that installs it."""

import re
import sys
from pathlib import Path

import pytest

from simreal.sim.engine import ENGINES, EXTRAS, missing_extra

if sys.version_info >= (3, 11):
    import tomllib
else:
    tomllib = pytest.importorskip("tomli")

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

DISTRIBUTIONS = {"pybullet": "pybullet", "warp": "mujoco-warp", "genesis": "genesis-world"}
"""The distribution on PyPI that each optional engine imports from."""


@pytest.mark.parametrize("engine", sorted(DISTRIBUTIONS))
def test_each_optional_engine_names_the_extra_that_installs_it(engine):
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    requirements = extras[EXTRAS[engine]]
    names = [re.match(r"[A-Za-z0-9._-]+", requirement).group() for requirement in requirements]
    assert DISTRIBUTIONS[engine] in names, (engine, EXTRAS[engine], requirements)
    assert f"pip install 'simreal[{EXTRAS[engine]}]'" in str(missing_extra(engine, engine))


def test_every_engine_but_the_core_one_has_an_extra():
    assert set(EXTRAS) == set(ENGINES) - {"mjbatch"}
