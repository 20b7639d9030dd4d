"""The pulling-force metric: the largest handle force held for a while as the robot moves.

Definition (one episode). With F_t the rope tension after control step t and x_t the
cart's position along the pull direction (world x times +1 forward, -1 backward; x_0 at
the episode start), a window of W consecutive steps t = i+1 .. i+W holds force
min_t F_t, and it counts when the load moves: x_{i+W} - x_i >= min_progress (the cart
travelled at a mean speed of at least min_progress / (W dt) along the pull direction),
and the window starts after the walk command begins (i >= first_start). The cart, not
the pelvis: a robot leaning into a rope that holds it can step its pelvis forward while
the load barely moves. The episode's held force is the largest held force of a counting
window (0 when none counts; the caller sets it to 0 for a fall).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def held_force(
    force: np.ndarray,
    progress: np.ndarray,
    steps: np.ndarray,
    window: int,
    min_progress: float,
    first_start: int = 0,
) -> np.ndarray:
    """(k,) largest force held over `window` steps while moving, per episode.

    force: (k, T) tension after each control step; progress: (k, T + 1) cart position
    along the pull direction, column 0 at the episode start; steps: (k,) how many steps
    of each row are valid; window: W >= 1 steps; min_progress: metres per window;
    first_start: the first step a window may start at (the walk command's start).
    """
    k, T = force.shape
    if progress.shape != (k, T + 1):
        raise ValueError(f"progress must be (k, T + 1) = {(k, T + 1)}, got {progress.shape}")
    if window < 1:
        raise ValueError(f"window must be >= 1 step, got {window}")
    if window > T:
        return np.zeros(k)
    held = sliding_window_view(force, window, axis=1).min(axis=2)  # (k, T - W + 1)
    moved = progress[:, window:] - progress[:, :-window]  # window starting after step i
    start = np.arange(T - window + 1)
    counts = (
        (moved >= min_progress)
        & (start[None, :] + window <= np.asarray(steps)[:, None])
        & (start[None, :] >= first_start)
    )
    return np.where(counts, held, 0.0).max(axis=1, initial=0.0)
