"""How commands, benchmarks and experiments hand back a result: the JSON printed, and
written to a file too when one is given (a committed report keeps its `command`)."""

from __future__ import annotations

import json
from pathlib import Path


def emit(report: dict, path: Path | str | None = None) -> None:
    """Print `report` as JSON, and write it to `path` too when given."""
    text = json.dumps(report, indent=2)
    if path:
        Path(path).write_text(text + "\n")
    print(text)
