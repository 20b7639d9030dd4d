"""`g1-walk` environment: the G1 tracks a commanded planar velocity (vx, vy, yaw rate) on
rough ground, standing still when the command is zero.

Everything about the robot comes from the G1 base (`tasks/g1/`: actions, calibration,
randomization with its random pushes, self-collision, the motor envelope, falls) and the
walking G1 (`G1GaitEnv`: the gait clock and its stepping reference, air time). This class
adds the commands, the ground (`terrain.py`: a periodic height field; a robot leaving its
middle tile is carried back by one period, onto the same ground) and the tracking, fall
and push metrics.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from simreal.tasks.g1.events import CALIBRATION, PUSH, PUSH_SCHEDULE, ROBOT
from simreal.tasks.g1.walking_env import G1GaitEnv
from simreal.tasks.g1.walking_terms import GaitReading
from simreal.tasks.g1_walk import rewards
from simreal.tasks.g1_walk.config import G1WalkConfig, WalkCommandConfig
from simreal.tasks.g1_walk.observations import (
    WALK_CRITIC_OBSERVATION,
    WALK_POLICY_TERMS,
    WALK_TERMS,
)
from simreal.tasks.g1_walk.terrain import HeightField
from simreal.tasks.rotations import quat_from_axis_angle
from simreal.tasks.terms import EventTerm, observe

UP = np.array([0.0, 0.0, 1.0])
SPAWN_CLEARANCE_M = 0.005
FOOTPRINT_M = np.stack(
    np.meshgrid(np.linspace(-0.3, 0.3, 5), np.linspace(-0.3, 0.3, 5)), axis=-1
).reshape(-1, 2)
"""Points around a spawn point whose highest ground sets the robot's starting height
(the soles reach about 0.15 m from the pelvis' vertical, at any heading)."""


def draw_commands(rng: np.random.Generator, n: int, cfg: WalkCommandConfig) -> np.ndarray:
    """(n, 3) commands: uniform in the ranges, a `single_axis_prob` share of them along one
    axis only and a `standing_prob` share zero."""
    ranges = np.array([cfg.vx_m_s, cfg.vy_m_s, cfg.yaw_rate_rad_s])
    command = rng.uniform(ranges[:, 0], ranges[:, 1], (n, 3))
    if cfg.single_axis_prob > 0.0:
        single = rng.random(n) < cfg.single_axis_prob
        kept = rng.integers(0, 3, n)
        command[single[:, None] & (np.arange(3) != kept[:, None])] = 0.0
    command[rng.random(n) < cfg.standing_prob] = 0.0
    return command


def push_test(env, t: np.ndarray) -> None:
    """The evaluation push test's one push per episode, at push_at_s, in a random
    direction (nothing outside the push test)."""
    if not (env.cfg.evaluation and env.cfg.eval_walk.push_test):
        return
    due = np.flatnonzero(~env.pushed & (t >= env.cfg.eval_walk.push_at_s))
    if due.size:
        angle = env.rng.uniform(-np.pi, np.pi, due.size)
        kick = env.push_m_s[due, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
        env.engine.qvel[due, 0:2] += kick
        env.pushed[due] = True


def start_commands(env, ids: np.ndarray) -> None:
    """New episodes start with a fresh command, their tracking sums cleared (and, under
    the push test, their push magnitude: simulation i of N at max_push_m_s * i / (N - 1))."""
    env._new_commands(ids, np.zeros(ids.size))
    env.lin_vel_sq_error[ids] = 0.0
    env.yaw_rate_sq_error[ids] = 0.0
    env.tracked_steps[ids] = 0.0
    env.pushed[ids] = False
    if env.cfg.evaluation and env.cfg.eval_walk.push_test:
        env.push_m_s[ids] = env.cfg.eval_walk.max_push_m_s * ids / max(env.num_envs - 1, 1)
    else:
        env.push_m_s[ids] = 0.0


class G1WalkEnv(G1GaitEnv):
    policy_terms = WALK_POLICY_TERMS
    critic_observation_layout = WALK_CRITIC_OBSERVATION
    reward_terms = rewards.REWARDS
    event_terms = (
        EventTerm("push_test", push_test, "interval"),
        CALIBRATION,
        ROBOT,
        EventTerm("command", start_commands, "reset"),
        PUSH_SCHEDULE,
        PUSH,
    )
    walking_rule = "planar"
    metric_reductions: ClassVar[dict[str, str]] = {
        **G1GaitEnv.metric_reductions,
        "max_push_recovered_m_s": "max",
    }
    """`simreal eval` reports the largest push any episode recovered from, not the mean."""

    def __init__(
        self,
        cfg: G1WalkConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
    ):
        self.heightfield = HeightField(cfg.terrain) if cfg.terrain.kind == "rough" else None
        s = num_envs
        self.next_command_s = np.zeros(s)
        self.command_start_s = np.zeros(s)
        self.lin_vel_sq_error = np.zeros(s)
        self.yaw_rate_sq_error = np.zeros(s)
        self.tracked_steps = np.zeros(s)
        """Per episode: summed squared tracking errors and how many steps they cover."""
        self.last_sq_error = np.zeros((s, 2))
        self.push_m_s = np.zeros(s)
        self.pushed = np.zeros(s, dtype=bool)
        super().__init__(cfg, num_envs, engine, seed, num_threads)

    def terrain_mjcf(self) -> tuple[str, str] | None:
        if self.heightfield is None:
            return None
        return self.heightfield.mjcf_asset(), self.heightfield.mjcf_geom_pos()

    def evaluation_conditions(self) -> dict:
        t = self.cfg.terrain
        terrain = (
            {
                "kind": "rough",
                "slope_max_deg": t.slope_max_deg,
                "step_max_m": t.step_max_m,
                "period_m": t.period_m,
                "seed": t.seed,
            }
            if t.kind == "rough"
            else "flat"
        )
        ev = self.cfg.eval_walk
        return {
            **super().evaluation_conditions(),
            "terrain": terrain,
            "commands": {
                "vx_m_s": list(self.cfg.command.vx_m_s),
                "vy_m_s": list(self.cfg.command.vy_m_s),
                "yaw_rate_rad_s": list(self.cfg.command.yaw_rate_rad_s),
                "standing_prob": self.cfg.command.standing_prob,
                "single_axis_prob": self.cfg.command.single_axis_prob,
            },
            "tracking_settle_s": ev.settle_s,
            "push_test": {"at_s": ev.push_at_s, "max_m_s": ev.max_push_m_s}
            if ev.push_test
            else None,
        }

    # -- the ground ---------------------------------------------------------------------
    def ground_height(self, xy: np.ndarray) -> np.ndarray:
        if self.heightfield is None:
            return super().ground_height(xy)
        return self.heightfield.height_at(xy)

    def place_on_ground(self, ids: np.ndarray, qpos: np.ndarray) -> None:
        """Anywhere on the middle tile of the ground, facing any way, the soles just clear
        of the highest ground around."""
        n, rng = ids.size, self.rng
        qpos[:, 3:7] = quat_from_axis_angle(UP, rng.uniform(-np.pi, np.pi, n))
        if self.heightfield is None:
            return
        half = self.cfg.terrain.period_m / 2.0
        xy = rng.uniform(-half, half, (n, 2))
        ground = self.heightfield.height_at(xy[:, None, :] + FOOTPRINT_M).max(axis=1)
        qpos[:, 0:2] = xy
        qpos[:, 2] += ground + SPAWN_CLEARANCE_M

    def _wrap_to_middle_tile(self) -> None:
        """Carry robots that left the middle tile back by whole periods (the same ground)."""
        qpos = self.engine.qpos
        shift = self.heightfield.wrap(qpos[:, 0:2])
        rows = np.flatnonzero(np.any(shift != 0.0, axis=1))
        if rows.size:
            qpos[rows, 0:2] += shift[rows]
            self.foot_pos[rows, :, 0:2] += shift[rows, None, :]

    # -- commands, pushes, metrics ------------------------------------------------------
    def _new_commands(self, ids: np.ndarray, t: np.ndarray) -> None:
        c = self.cfg.command
        self.command[ids] = draw_commands(self.rng, ids.size, c)
        self.command_start_s[ids] = t
        self.next_command_s[ids] = t + self.rng.uniform(*c.hold_s, ids.size)

    def simulate(self) -> None:
        super().simulate()
        if self.heightfield is not None:
            self._wrap_to_middle_tile()

    def after_step(self) -> None:
        """Count this step's tracking errors (past the settling time of the command), then
        draw new commands where theirs ran out."""
        super().after_step()
        t = self.episode_step * self.control_dt
        vel = self.to_heading(self.engine.qvel[:, 0:3])
        lin = np.sum(np.square(vel[:, :2] - self.command[:, :2]), axis=1)
        yaw = np.square(self.base_yaw_rate() - self.command[:, 2])
        counted = (t - self.command_start_s >= self.cfg.eval_walk.settle_s) & ~self.fell
        self.lin_vel_sq_error += np.where(counted, lin, 0.0)
        self.yaw_rate_sq_error += np.where(counted, yaw, 0.0)
        self.tracked_steps += counted
        self.last_sq_error = np.stack([lin, yaw], axis=1)
        due = np.flatnonzero(t >= self.next_command_s)
        if due.size:
            self._new_commands(due, t[due])

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        obs, critic = super().observe()
        walk = observe(WALK_TERMS, GaitReading(self.command, self.phase(), self.walking()))
        return (
            np.concatenate([obs, walk], axis=1, dtype=np.float32),
            np.concatenate([critic, walk], axis=1, dtype=np.float32),
        )

    @staticmethod
    def command_ranges(task_config: dict, direction: float = 0.0) -> tuple[tuple[float, ...], ...]:
        """(low, high) of the (vx, vy, yaw_rate) commands a policy trained under
        `task_config` (plain data, its `task_config` metadata) saw: what a deployment clips
        its commands to. `direction` (g1-pull's) does not apply."""
        plain = task_config.get("command", {})
        command = WalkCommandConfig(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in plain.items()}
        )
        command.validate()
        return command.velocity_ranges()

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """fall_rate; lin_vel_tracking_rmse_m_s (heading-frame vx, vy) and
        yaw_rate_tracking_rmse_rad_s over the episode's counted steps (EvalWalkConfig);
        under the push test, push_m_s and max_push_recovered_m_s (the push if the episode
        did not fall, else 0; `simreal eval` takes the largest)."""
        fell = self.ended_in_fall(ids)
        steps = self.tracked_steps[ids]
        # An episode that ended before any step counted (a fall within settle_s) is
        # judged by its last step.
        none = steps == 0
        lin = np.where(none, self.last_sq_error[ids, 0], self.lin_vel_sq_error[ids])
        yaw = np.where(none, self.last_sq_error[ids, 1], self.yaw_rate_sq_error[ids])
        steps = np.maximum(steps, 1.0)
        out = {
            "fall_rate": fell.astype(float),
            "lin_vel_tracking_rmse_m_s": np.sqrt(lin / steps),
            "yaw_rate_tracking_rmse_rad_s": np.sqrt(yaw / steps),
        }
        if self.cfg.evaluation:
            out["self_penetration_m"] = self.self_penetration_m[ids].copy()
            if self.cfg.eval_walk.push_test:
                out["push_m_s"] = self.push_m_s[ids].copy()
                out["max_push_recovered_m_s"] = np.where(fell, 0.0, self.push_m_s[ids])
        return out
