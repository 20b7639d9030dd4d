"""Curricula on one difficulty number: a fall-rate curriculum (one level for all, rising
while the robot rarely falls, falling back when it falls often) and a per-simulation one
(each simulation's own level, up after a success, down after a failure). Both take ended
episodes through `record_episodes` and give each simulation's level through `levels_of`,
so a task uses either without asking which. g1-force's force cap and g1-pull's load
resistance use them; dex-track's motion level the fall-rate one."""

from __future__ import annotations

import numpy as np


class FallRateCurriculum:
    """`level` moves by `step` within [start, maximum] once a window of episode outcomes is
    in: up when their fall rate is below `raise_below`, down when above `lower_above`
    (then the window starts afresh); between the two it keeps collecting."""

    def __init__(
        self,
        start: float,
        maximum: float,
        step: float,
        raise_below: float,
        lower_above: float,
        minimum: float | None = None,
    ):
        """`minimum`: the floor it may fall back to (default: `start`)."""
        self.start, self.maximum, self.step = start, maximum, step
        self.minimum = start if minimum is None else minimum
        self.raise_below, self.lower_above = raise_below, lower_above
        self.level = start
        self._outcomes: list[float] = []

    def restore(self, level: float) -> None:
        """Resume at `level` (from a checkpoint), within [minimum, maximum], window empty."""
        self.level = float(np.clip(level, self.minimum, self.maximum))
        self._outcomes.clear()

    def record(self, fell: np.ndarray, window: int) -> None:
        """Episodes ended with outcomes `fell` (bool per episode); `window` of the latest
        decide (one per simulation is a natural size)."""
        self._outcomes.extend(np.asarray(fell, dtype=float).tolist())
        if len(self._outcomes) < window:
            return
        rate = float(np.mean(self._outcomes[-window:]))
        if rate < self.raise_below:
            self.level = min(self.level + self.step, self.maximum)
        elif rate > self.lower_above:
            self.level = max(self.level - self.step, self.minimum)
        else:
            return
        self._outcomes.clear()

    def record_episodes(self, sims: np.ndarray, failed: np.ndarray, window: int) -> None:
        """Episodes of simulations `sims` ended (the shared interface of the curricula):
        their outcomes join the window; which simulations they came from does not matter."""
        self.record(failed, window)

    def levels_of(self, sims: np.ndarray) -> np.ndarray:
        """(len(sims),) the level the simulations `sims` train at: the one shared level."""
        return np.full(len(sims), self.level)


class PerSimulationCurriculum:
    """One level per simulation (legged_gym's terrain levels): a simulation's level rises
    by `step` after an episode it succeeded in and falls after one it failed, within
    [minimum, maximum]. Unlike FallRateCurriculum, a few simulations that succeed raise
    their own load while the rest stay easy: the training distribution spreads to the
    hardest level each simulation can hold instead of waiting for most of them.

    A level drifts to where the failure rate p balances the steps, p * down = (1 - p) * up,
    so the levels settle where a share `failure_share` of episodes fail: with the symmetric
    steps of the default (0.5) they train where the robot fails every other episode, and
    the mean level reads as a load it cannot stand.
    A smaller share steps down by step * (1 - share) / share after a failure."""

    def __init__(
        self,
        start: float,
        maximum: float,
        step: float,
        num_sims: int,
        minimum: float | None = None,
        failure_share: float = 0.5,
    ):
        """`minimum`: the floor a simulation may fall back to (default: `start`)."""
        if not 0.0 < failure_share < 1.0:
            raise ValueError(f"failure_share must lie in (0, 1), got {failure_share}")
        self.start, self.maximum, self.step = start, maximum, step
        self.minimum = start if minimum is None else minimum
        self.step_down = step * (1.0 - failure_share) / failure_share
        self.levels = np.full(num_sims, start, dtype=float)

    @property
    def level(self) -> float:
        """The mean level (logged and checkpointed)."""
        return float(self.levels.mean())

    def restore(self, level: float | np.ndarray) -> None:
        """Resume at `level`, within range: one level per simulation when the checkpoint
        kept them for as many simulations as this run has, else every simulation at their
        mean (a warm start with another simulation count, or a fall-rate checkpoint)."""
        level = np.asarray(level, dtype=float)
        if level.shape != self.levels.shape:
            level = np.full_like(self.levels, level.mean())
        self.levels[:] = np.clip(level, self.minimum, self.maximum)

    def record(self, sims: np.ndarray, failed: np.ndarray) -> None:
        """Episodes of simulations `sims` ended, `failed` (bool) of them unsuccessfully."""
        moved = np.where(np.asarray(failed, dtype=bool), -self.step_down, self.step)
        self.levels[sims] = np.clip(self.levels[sims] + moved, self.minimum, self.maximum)

    def record_episodes(self, sims: np.ndarray, failed: np.ndarray, window: int) -> None:
        """Episodes of simulations `sims` ended (the shared interface; no window here)."""
        self.record(sims, failed)

    def levels_of(self, sims: np.ndarray) -> np.ndarray:
        """(len(sims),) the levels the simulations `sims` train at."""
        return self.levels[sims].copy()


Curriculum = FallRateCurriculum | PerSimulationCurriculum


def make_curriculum(
    kind: str,
    start: float,
    maximum: float,
    step: float,
    num_sims: int,
    raise_below: float,
    lower_above: float,
    minimum: float | None = None,
    failure_share: float = 0.5,
) -> Curriculum:
    """`kind` "per_sim" (PerSimulationCurriculum with `failure_share`; the rates do not
    apply) or "shared" (FallRateCurriculum)."""
    if kind == "per_sim":
        return PerSimulationCurriculum(
            start, maximum, step, num_sims, minimum=minimum, failure_share=failure_share
        )
    return FallRateCurriculum(start, maximum, step, raise_below, lower_above, minimum=minimum)


def checkpoint_state(curriculum: Curriculum, name: str) -> dict:
    """`{name: mean level}`, and for a per-simulation curriculum every simulation's level
    under `name_per_sim`, so that a resumed run gets them all back."""
    state: dict = {name: curriculum.level}
    if isinstance(curriculum, PerSimulationCurriculum):
        state[f"{name}_per_sim"] = curriculum.levels.tolist()
    return state


def restore_state(curriculum: Curriculum, state: dict, name: str) -> None:
    """Every simulation's own level when the checkpoint has them and the curriculum is
    per simulation (a resumed run); otherwise the checkpointed mean (a shared run, or a
    warm start)."""
    if f"{name}_per_sim" in state and isinstance(curriculum, PerSimulationCurriculum):
        curriculum.restore(np.asarray(state[f"{name}_per_sim"], float))
    elif name in state:
        curriculum.restore(state[name])
