"""How every bench hands back its result: the JSON report printed, and written to the
`--json` file when one is given (the README quotes these files with their `command`)."""

from __future__ import annotations

import json
from pathlib import Path


def emit(report: dict, path: Path | None) -> None:
    text = json.dumps(report, indent=2)
    if path:
        Path(path).write_text(text + "\n")
    print(text)
