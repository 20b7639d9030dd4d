"""The benchmarks of the source tree's `bench/` folder, by name, with one line each.

Benchmarks finish in minutes and print ratios measured side by side in one run; long
recipes (multi-stage training chains, ablations) live in `experiments/` and run by path.
The summaries are read from each script's docstring without running it.
"""

from __future__ import annotations

import ast
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"


def summary(script: Path) -> str:
    """The first sentence of a script's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(script.read_text())) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    head, dot, _ = paragraph.partition(". ")
    return head + ("." if dot else "")


def benchmarks() -> dict[str, str]:
    """{name: one-line summary} of every benchmark (files starting with _ are helpers)."""
    if not BENCH_DIR.is_dir():
        raise FileNotFoundError(
            f"{BENCH_DIR}: the benchmarks live in the source tree's bench/ folder; run "
            "`simreal bench` from an editable install (`pip install -e .`)"
        )
    return {
        p.stem: summary(p) for p in sorted(BENCH_DIR.glob("*.py")) if not p.name.startswith("_")
    }
