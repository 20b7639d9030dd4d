"""Time-parameterized reference trajectories for `quad-track`, batched over simulations.

A reference is a shape (figure-eight, circle or smooth random curve) plus per-simulation
parameters; `position(kind, params, t)` evaluates it at times t (N,) or (N, K) in
seconds. All shapes start at rest-compatible points (the drone starts on the curve)
and stay inside a 1.2 m box around the centre, so the episode box of the task is never
the limit. Velocity is the analytic time derivative, for the preview's feed-forward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("figure8", "circle", "spline")
RANDOM = "random"
"""Evaluation only: a new random smooth curve ("spline") per episode."""
EVAL_KINDS = (*KINDS, RANDOM)
NUM_HARMONICS = 3


@dataclass
class ReferenceParams:
    """Per-simulation reference parameters; arrays lead with num_envs."""

    kind: np.ndarray
    """(N,) index into KINDS."""
    centre: np.ndarray
    """(N, 3) centre of the curve (m)."""
    radius: np.ndarray
    """(N,) half-width of the figure-eight or circle radius (m)."""
    period_s: np.ndarray
    """(N,) time for one lap (s)."""
    phase: np.ndarray
    """(N,) starting phase (rad)."""
    spline_amp: np.ndarray
    """(N, 3, NUM_HARMONICS) amplitudes of the random smooth curve per axis (m)."""
    spline_freq: np.ndarray
    """(N, 3, NUM_HARMONICS) its angular frequencies (rad/s)."""
    spline_phase: np.ndarray
    """(N, 3, NUM_HARMONICS) its phases (rad)."""


def sample_params(
    rng: np.random.Generator,
    n: int,
    kinds: tuple[str, ...],
    radius: tuple[float, float],
    period_s: tuple[float, float],
    centre: tuple[float, float, float],
) -> ReferenceParams:
    """Random references of the given kinds; sizes and speeds drawn from the ranges."""
    kind = rng.choice([KINDS.index(k) for k in kinds], n)
    omega_max = 2 * np.pi / period_s[0]
    amp = rng.uniform(0.05, 1.0, (n, 3, NUM_HARMONICS))
    # (sin(.) - sin(phase)) spans twice the amplitude: half the radius keeps it inside.
    amp *= (0.5 * radius[1] / amp.sum(axis=2, keepdims=True)) * np.array([1.0, 1.0, 0.4])[:, None]
    return ReferenceParams(
        kind=kind,
        centre=np.broadcast_to(np.asarray(centre, dtype=np.float64), (n, 3)).copy(),
        radius=rng.uniform(*radius, n),
        period_s=rng.uniform(*period_s, n),
        phase=rng.uniform(0, 2 * np.pi, n),
        spline_amp=amp,
        spline_freq=rng.uniform(0.2, 1.0, (n, 3, NUM_HARMONICS)) * omega_max,
        spline_phase=rng.uniform(0, 2 * np.pi, (n, 3, NUM_HARMONICS)),
    )


def position(p: ReferenceParams, t: np.ndarray) -> np.ndarray:
    """Reference positions (N, ..., 3) at times t of shape (N,) or (N, K)."""
    return _evaluate(p, t, derivative=False)


def velocity(p: ReferenceParams, t: np.ndarray) -> np.ndarray:
    """Reference velocities (N, ..., 3) at times t."""
    return _evaluate(p, t, derivative=True)


def _expand(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape + (1,) * (t.ndim - 1))


def _evaluate(p: ReferenceParams, t: np.ndarray, derivative: bool) -> np.ndarray:
    w = _expand(2 * np.pi / p.period_s, t)
    theta = w * t + _expand(p.phase, t)
    r = _expand(p.radius, t)
    out = np.zeros((*t.shape, 3))
    if derivative:
        # figure-eight (Gerono lemniscate): x = r sin(th), y = r sin(th) cos(th) = r/2 sin(2th)
        fig = np.stack([r * w * np.cos(theta), r * w * np.cos(2 * theta), 0 * theta], axis=-1)
        circ = np.stack([-r * w * np.sin(theta), r * w * np.cos(theta), 0 * theta], axis=-1)
    else:
        fig = np.stack([r * np.sin(theta), 0.5 * r * np.sin(2 * theta), 0 * theta], axis=-1)
        circ = np.stack([r * np.cos(theta), r * np.sin(theta), 0 * theta], axis=-1)
        centre = p.centre.reshape(p.centre.shape[:1] + (1,) * (t.ndim - 1) + (3,))
        out += centre
    spline = _spline(p, t, derivative)
    kind = _expand(p.kind, t)[..., None]
    out += np.where(kind == 0, fig, np.where(kind == 1, circ, spline))
    return out


def _spline(p: ReferenceParams, t: np.ndarray, derivative: bool) -> np.ndarray:
    """Sum of sinusoids per axis, shifted so that it starts at the centre."""
    tt = t[..., None, None]  # (N, [K,] 1, 1)
    shape = p.spline_amp.shape[:1] + (1,) * (t.ndim - 1) + p.spline_amp.shape[1:]
    amp, freq, phase = (x.reshape(shape) for x in (p.spline_amp, p.spline_freq, p.spline_phase))
    if derivative:
        return (amp * freq * np.cos(freq * tt + phase)).sum(axis=-1)
    return (amp * (np.sin(freq * tt + phase) - np.sin(phase))).sum(axis=-1)
