"""Fixtures the deploy tests share."""

import pytest
from _g1_policy import export_g1_policy


@pytest.fixture(scope="module")
def g1_policy(tmp_path_factory):
    """An untrained, metadata-complete G1 policy, exported once per test file."""
    return export_g1_policy(tmp_path_factory.mktemp("policy") / "g1.onnx")
