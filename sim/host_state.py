"""What the engines that mirror a foreign simulator into host arrays share.

PyBullet and Genesis keep mjbatch's (num_envs, ...) numpy arrays on the host and copy
them into their simulator: a reset is the same for both (write the arrays, then push the
rows), and both offer a fixed set of per-simulation model fields.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np


class HostStateEngine:
    """Subclasses set `engine_name`, `supported_fields`, the state arrays, `_fields` and
    `_write_state(rows)` (push those rows' qpos, qvel, act to the simulator)."""

    engine_name: ClassVar[str]
    supported_fields: ClassVar[tuple[str, ...]]
    live_model_fields: ClassVar[bool] = False
    """Model fields are host copies: `commit_model` pushes them to the simulator."""
    num_envs: int
    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    xfrc_applied: np.ndarray
    _fields: dict[str, np.ndarray]

    def _write_state(self, rows: np.ndarray) -> None:
        raise NotImplementedError

    def reset(self, ids: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        rows = np.arange(self.num_envs)[ids]
        self.qpos[rows] = qpos
        self.qvel[rows] = qvel
        self.act[rows] = 0.0
        self.xfrc_applied[rows] = 0.0
        self._write_state(rows)

    def model_field(self, name: str) -> np.ndarray:
        if name not in self._fields:
            raise ValueError(
                f"model field {name!r} is not supported by the {self.engine_name} engine; "
                f"supported: {', '.join(self.supported_fields)}"
            )
        return self._fields[name]
