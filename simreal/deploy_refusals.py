"""Command-line values that `simreal deploy` must refuse before it makes any DDS
participant, each with the words its error must contain.

One list for the two places that check them, so that they check the same values: the
fault bench (bench/faults.py) reports each as a table row, and tests/deploy/test_deploy_faults.py
asserts each (exit 2, the value named, no traceback).
"""

from __future__ import annotations

BAD_DEPLOY_ARGUMENTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("--rate", "0"), "--rate 0 Hz"),
    (("--rate", "-500"), "--rate -500 Hz"),
    (("--state-timeout", "inf"), "--state-timeout inf ms"),
    (("--state-timeout", "nan"), "--state-timeout nan ms"),
    (("--state-timeout", "-5"), "--state-timeout -5 ms"),
    (("--domain", "999"), "--domain 999"),
    (("--domain", "-1"), "--domain -1"),
)
"""(extra arguments after `deploy POLICY --robot g1`, text the error must contain)."""
