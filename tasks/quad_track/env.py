"""`quad-track` environment: a Crazyflie follows a time-parameterized reference."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from simreal.tasks.quad_track import references as ref
from simreal.tasks.quad_track.config import QuadTrackConfig
from simreal.tasks.quad_track.observations import TrackReading, policy_terms
from simreal.tasks.quad_track.rewards import REWARDS
from simreal.tasks.quadrotor import PRIVILEGED_OBSERVATION, QuadrotorEnv
from simreal.tasks.terms import TerminationTerm, layout

CRASH_HEIGHT = 0.05


def off_track(env) -> np.ndarray:
    """(N,) bool: the drone is more than `max_error` (m) from its reference."""
    return env.tracking_error() > env.cfg.max_error


def crashed(env) -> np.ndarray:
    """(N,) bool: the drone is below `CRASH_HEIGHT` or tilted over."""
    return (env.state.base_pos[:, 2] < CRASH_HEIGHT) | env.tilted_over()


TERMINATIONS = (TerminationTerm("off_track", off_track), TerminationTerm("crashed", crashed))


class QuadTrackEnv(QuadrotorEnv):
    cfg: QuadTrackConfig
    reward_terms = REWARDS
    termination_terms = TERMINATIONS

    def __init__(self, cfg: QuadTrackConfig, num_envs: int, **kwargs):
        self.policy_terms = policy_terms(cfg.preview_steps)
        self.critic_observation_layout = layout(self.policy_terms) + PRIVILEGED_OBSERVATION
        self.error_sq_sum = np.zeros(num_envs)
        self.error_max = np.zeros(num_envs)
        self.preview_offsets = cfg.preview_dt_s * np.arange(1, cfg.preview_steps + 1)
        self.cfg = cfg
        self.reference = self._fixed_reference(num_envs, "figure8")
        super().__init__(cfg, num_envs, **kwargs)

    def _eval_reference(self, n: int) -> ref.ReferenceParams:
        c = self.cfg
        if c.eval_kind == ref.RANDOM:
            return ref.sample_params(self.rng, n, ("spline",), c.radius, c.period_s, c.centre)
        return self._fixed_reference(n, c.eval_kind)

    def _fixed_reference(self, n: int, kind: str) -> ref.ReferenceParams:
        c = self.cfg
        return ref.ReferenceParams(
            kind=np.full(n, ref.KINDS.index(kind)),
            centre=np.broadcast_to(np.asarray(c.centre, dtype=np.float64), (n, 3)).copy(),
            radius=np.full(n, c.eval_radius),
            period_s=np.full(n, c.eval_period_s),
            phase=np.zeros(n),
            spline_amp=np.full((n, 3, ref.NUM_HARMONICS), 0.5 * c.eval_radius / ref.NUM_HARMONICS)
            * np.array([1.0, 1.0, 0.4])[:, None],
            spline_freq=np.tile(np.array([0.3, 0.55, 0.8]), (n, 3, 1))
            * 2
            * np.pi
            / c.eval_period_s,
            spline_phase=np.tile(np.array([0.0, 1.0, 2.0]), (n, 3, 1)),
        )

    @property
    def time_s(self) -> np.ndarray:
        return self.episode_step * self.control_dt

    def tracking_error(self) -> np.ndarray:
        return np.linalg.norm(
            ref.position(self.reference, self.time_s) - self.state.base_pos, axis=1
        )

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        t = self.time_s
        preview_t = t[:, None] + self.preview_offsets[None, :]
        reading = TrackReading(
            self.state,
            ref.position(self.reference, t),
            ref.position(self.reference, preview_t),
            ref.velocity(self.reference, t),
            self.action,
        )
        return self.observe_with(reading)

    def after_step(self) -> None:
        error = self.tracking_error()
        self.error_sq_sum += error**2
        self.error_max = np.maximum(self.error_max, error)

    def evaluation_conditions(self) -> dict:
        c = self.cfg
        if c.eval_kind == ref.RANDOM:
            reference = {"kind": ref.RANDOM, "radius_m": c.radius, "period_s": c.period_s}
        else:
            reference = {
                "kind": c.eval_kind,
                "radius_m": c.eval_radius,
                "period_s": c.eval_period_s,
            }
        return {**super().evaluation_conditions(), "reference": reference}

    metric_reductions: ClassVar[dict[str, str]] = {"worst_position_rmse_m": "max"}
    """The worst episode's RMSE beside the mean: a mean over episodes hides a heavy tail."""

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """RMSE and maximum of the distance to the reference over the episode's steps, and
        whether it flew to the time limit: an episode that fails (lost the reference,
        crashed, tilted over) ends early, and its RMSE covers only the steps it flew."""
        steps = np.maximum(self.episode_step[ids], 1)
        rmse = np.sqrt(self.error_sq_sum[ids] / steps)
        return {
            "position_rmse_m": rmse,
            "worst_position_rmse_m": rmse,
            "max_error_m": self.error_max[ids].copy(),
            "completed": (self.episode_step[ids] >= self.max_episode_steps).astype(float),
        }

    def start_pose(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """On the reference at t = 0, moving with it (a flying start), level."""
        p = self._pending
        t0 = np.zeros(n)
        qpos = np.zeros((n, 7))
        qpos[:, 0:3] = ref.position(p, t0)
        qpos[:, 3] = 1.0
        qvel = np.zeros((n, 6))
        qvel[:, 0:3] = ref.velocity(p, t0)
        if not self.cfg.evaluation:
            noise = self.cfg.start_noise
            qpos[:, 0:3] += self.rng.uniform(-noise, noise, (n, 3))
            qvel[:, 0:3] += self.rng.uniform(-noise, noise, (n, 3))
        return qpos, qvel

    def random_pose(self, qpos: np.ndarray, qvel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Farther off the reference, tilted and spinning: recovery practice."""
        n = qpos.shape[0]
        qpos, qvel = qpos.copy(), np.zeros((n, 6))
        qpos[:, 0:3] += self.rng.uniform(-0.3, 0.3, (n, 3))
        qpos[:, 3:7] = self.random_tilted_quat(n)
        qvel[:, 0:3] = self.rng.uniform(-0.5, 0.5, (n, 3))
        qvel[:, 3:6] = self.rng.uniform(-0.5, 0.5, (n, 3))
        return qpos, qvel

    def reset_state(self, ids: np.ndarray) -> None:
        c = self.cfg
        if c.evaluation:
            self._pending = self._eval_reference(ids.size)
        else:
            self._pending = ref.sample_params(
                self.rng, ids.size, c.train_kinds, c.radius, c.period_s, c.centre
            )
        _assign(self.reference, ids, self._pending)
        super().reset_state(ids)
        self.error_sq_sum[ids] = 0.0
        self.error_max[ids] = 0.0


def _assign(target: ref.ReferenceParams, ids: np.ndarray, source: ref.ReferenceParams) -> None:
    for name in ref.ReferenceParams.__dataclass_fields__:
        getattr(target, name)[ids] = getattr(source, name)
