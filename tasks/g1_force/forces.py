"""External-force schedules of `g1-force`: random events per body, a curriculum on the
force cap, and the evaluation push. All state is (num_sims, 3 bodies, ...) arrays."""

from __future__ import annotations

import numpy as np

from simreal.tasks.curriculum import make_curriculum
from simreal.tasks.g1_force.config import EvalPushConfig, ForceConfig

NUM_BODIES = 3


def sustained_directions(n: int) -> np.ndarray:
    """(n,) x direction of the sustained push per simulation: -1 (backward) in even ones,
    +1 (forward) in odd ones."""
    return np.where(np.arange(n) % 2 == 0, -1.0, 1.0)


def sustained_magnitudes(n: int, max_n: float) -> np.ndarray:
    """(n,) the k-th simulation of a direction (of that direction's count) pushes with
    max_n * (k + 1) / count."""
    sims = np.arange(n)
    k = sims // 2
    count = np.where(sims % 2 == 0, (n + 1) // 2, n // 2)
    return max_n * (k + 1) / np.maximum(count, 1)


def sagittal_azimuth(azimuth: np.ndarray, halfwidth: float) -> np.ndarray:
    """Azimuths uniform on the circle (rad, [-pi, pi)) mapped onto the two sectors within
    `halfwidth` of straight ahead (0) and straight behind (pi), each uniform, the front
    half of the circle onto the front sector: no draw more, so the same random stream
    gives the same events elsewhere. At pi / 2 the azimuths are returned as they are."""
    if halfwidth >= np.pi / 2:
        return azimuth
    front = np.abs(azimuth) < np.pi / 2
    offset = np.where(front, azimuth, azimuth - np.copysign(np.pi, azimuth))
    return offset * (halfwidth / (np.pi / 2)) + np.where(front, 0.0, np.pi)


class ForceSchedule:
    """Per simulation and body: the current event (onset, ramp, hold, magnitude, direction),
    evaluated at episode time t as magnitude * ramp profile * direction."""

    def __init__(self, cfg: ForceConfig, num_sims: int, rng: np.random.Generator):
        self.cfg = cfg
        self.rng = rng
        shape = (num_sims, NUM_BODIES)
        self.onset_s = np.full(shape, np.inf)
        self.ramp_s = np.zeros(shape)
        self.hold_s = np.zeros(shape)
        self.magnitude_n = np.zeros(shape)
        self.direction = np.zeros((*shape, 3))
        self.curriculum = make_curriculum(
            cfg.curriculum,
            cfg.cap_start_n,
            cfg.cap_max_n,
            cfg.cap_step_n,
            num_sims,
            cfg.raise_below_fall_rate,
            cfg.lower_above_fall_rate,
            minimum=cfg.cap_min_n,
            failure_share=cfg.failure_share,
        )

    @property
    def cap_n(self) -> float:
        """Torso force cap of the curriculum, the mean over simulations when each has its
        own (hands: hand_cap_fraction of it)."""
        return self.curriculum.level

    def sim_caps_n(self) -> np.ndarray:
        """(num_sims,) each simulation's torso force cap."""
        return self.curriculum.levels_of(np.arange(self.onset_s.shape[0]))

    @property
    def body_caps_n(self) -> np.ndarray:
        """(num_sims, 3) force caps of torso, left and right hand."""
        f = self.cfg.hand_cap_fraction
        return self.sim_caps_n()[:, None] * np.array([1.0, f, f])

    def reset(self, sims: np.ndarray) -> None:
        """New episodes in `sims` start with a pause, then their first events."""
        mask = np.zeros(self.onset_s.shape, dtype=bool)
        mask[sims] = True
        self._sample(mask, np.zeros(self.onset_s.shape))

    def set_eval_push(self, cfg: EvalPushConfig) -> None:
        """The evaluation protocol (EvalPushConfig): a torso step push of
        max_n * (i + 1) / N in sim i, or sustained pushes alternating backward / forward."""
        n = self.onset_s.shape[0]
        self.onset_s[:] = np.inf
        self.magnitude_n[:] = 0.0
        self.onset_s[:, 0] = cfg.onset_s
        if cfg.mode == "sustained":
            self.ramp_s[:, 0] = cfg.ramp_s
            self.hold_s[:, 0] = cfg.hold_s
            self.magnitude_n[:, 0] = sustained_magnitudes(n, cfg.max_n)
            self.direction[:, 0] = 0.0
            self.direction[:, 0, 0] = sustained_directions(n)
            return
        self.ramp_s[:, 0] = 0.0
        self.hold_s[:, 0] = cfg.duration_s
        self.magnitude_n[:, 0] = cfg.max_n * np.arange(1, n + 1) / n
        direction = np.asarray(cfg.direction, dtype=float)
        self.direction[:, 0] = direction / np.linalg.norm(direction)

    def forces(self, t: np.ndarray, resample: bool = True) -> np.ndarray:
        """(num_sims, 3, 3) world-frame forces at episode times t (num_sims,) in s; events
        that have ended are replaced by new ones when `resample`."""
        t = t[:, None]
        end = self.onset_s + self.ramp_s + self.hold_s
        if resample:
            ended = t >= end
            if ended.any():
                self._sample(ended, np.broadcast_to(t, ended.shape))
                end = self.onset_s + self.ramp_s + self.hold_s
        with np.errstate(divide="ignore", invalid="ignore"):
            rising = np.where(
                self.ramp_s > 0, np.clip((t - self.onset_s) / self.ramp_s, 0.0, 1.0), 1.0
            )
        on = (t >= self.onset_s) & (t < end)
        return (self.magnitude_n * np.where(on, rising, 0.0))[..., None] * self.direction

    def record_outcomes(self, sims: np.ndarray, fell: np.ndarray, window: int) -> None:
        """Training episodes of simulations `sims` ended: move their caps (per_sim) or the
        shared cap (by the fall rate of the latest `window` episodes)."""
        self.curriculum.record_episodes(sims, fell, window)

    def _sample(self, mask: np.ndarray, now: np.ndarray) -> None:
        c, rng = self.cfg, self.rng
        k = int(mask.sum())
        if k == 0:
            return
        caps = np.broadcast_to(self.body_caps_n, mask.shape)[mask]
        active = rng.random(k) < np.broadcast_to(np.asarray(c.active_prob), mask.shape)[mask]
        self.onset_s[mask] = now[mask] + rng.uniform(*c.gap_s, k)
        self.ramp_s[mask] = np.where(rng.random(k) < c.step_prob, 0.0, rng.uniform(*c.ramp_s, k))
        self.hold_s[mask] = rng.uniform(*c.hold_s, k)
        self.magnitude_n[mask] = np.where(
            active, rng.uniform(c.magnitude_min_fraction, 1.0, k) * caps, 0.0
        )
        azimuth = sagittal_azimuth(rng.uniform(-np.pi, np.pi, k), c.sagittal_halfwidth_rad)
        elevation = rng.uniform(-c.max_elevation_rad, c.max_elevation_rad, k)
        self.direction[mask] = np.stack(
            [
                np.cos(elevation) * np.cos(azimuth),
                np.cos(elevation) * np.sin(azimuth),
                np.sin(elevation),
            ],
            axis=1,
        )
