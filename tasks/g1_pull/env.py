"""`g1-pull` environment: the walking G1 (`G1GaitEnv`) tows a cart by a rope handle,
walking backward (the cart in front) or forward (the cart behind), against a rolling
resistance that rises with a curriculum; this class adds the scene, the command, the
load and the pulling-force metrics. MuJoCo sensors give the rope tension T and where the
grips and the hitch are: each hand is pulled with T towards the hitch, their sum is the
handle force, and FAT2 takes the two hand forces as the external forces.
"""

from __future__ import annotations

from typing import ClassVar

import mujoco
import numpy as np

from simreal.sim.engine import sensor_view
from simreal.tasks.curriculum import checkpoint_state, make_curriculum, restore_state
from simreal.tasks.g1.events import CALIBRATION, PUSH, PUSH_SCHEDULE, ROBOT
from simreal.tasks.g1.gait import WALKING_SPEED_M_S
from simreal.tasks.g1.sensing import ROBOT_QPOS
from simreal.tasks.g1.walking_env import G1GaitEnv
from simreal.tasks.g1_pull import rewards
from simreal.tasks.g1_pull.config import CommandConfig, G1PullConfig
from simreal.tasks.g1_pull.metrics import held_force
from simreal.tasks.g1_pull.observations import (
    COMMAND_TERMS,
    GAIT_TERMS,
    LOAD_TERMS,
    PULL_CRITIC_OBSERVATION,
    PULL_POLICY_TERMS,
    PullReading,
    walking_command,
)
from simreal.tasks.g1_pull.scene import (
    CART_JOINT,
    GRIP_SITES,
    HITCH_SITE,
    ROPE_SENSOR,
    build_pull_scene,
)
from simreal.tasks.terms import EventTerm, observe


def start_cart(env, ids: np.ndarray) -> None:
    """New episodes' loads in simulations `ids`: the pull direction, speed and cart
    (evaluation: alternate directions, each direction's carts from light to
    `eval_pull.max_resistance_n`; training: drawn, the resistance from the curriculum),
    the cart at its start and the traces cleared."""
    cfg, n, rng = env.cfg, ids.size, env.rng
    if cfg.evaluation:
        ev = cfg.eval_pull
        env.direction[ids] = np.where(ids % 2 == 0, -1.0, 1.0)
        per_direction = np.array([(env.num_sims + 1) // 2, env.num_sims // 2])
        rank = ids // 2
        count = per_direction[ids % 2]
        env.resistance[ids] = ev.max_resistance_n * (rank + 1) / count
        env.speed[ids] = ev.speed_m_s
        env.damping[ids] = 0.0
        env.stiffness[ids] = 0.0
    else:
        load, command = cfg.load, cfg.command
        env.direction[ids] = np.where(rng.random(n) < command.forward_prob, 1.0, -1.0)
        env.speed[ids] = rng.uniform(*command.speed_m_s, n)
        level = env.curriculum.levels_of(ids)
        env.resistance[ids] = level * rng.uniform(*load.resistance_spread, n)
        env.damping[ids] = rng.uniform(*load.damping_n_s_m, n)
        env.stiffness[ids] = rng.uniform(*load.spring_n_m, n)
    cart_x = env.cart_start_x(env.direction[ids])
    env.engine.qpos[ids, env.cart_q] = cart_x
    env.engine.qvel[ids, env.cart_dof] = 0.0
    field = env.engine.model_field
    field("dof_frictionloss")[ids, env.cart_dof] = env.resistance[ids]
    field("dof_damping")[ids, env.cart_dof] = env.damping[ids]
    field("jnt_stiffness")[ids, env.cart_jnt] = env.stiffness[ids]
    field("qpos_spring")[ids, env.cart_q] = cart_x
    env.tension[ids] = 0.0
    env.handle_force_n[ids] = 0.0
    env.start_x[ids] = env.direction[ids] * env.engine.qpos[ids, 0]
    env.force_trace[ids] = 0.0
    env.progress_trace[ids] = 0.0
    env.cart_trace[ids] = 0.0
    env.command[ids] = 0.0


class G1PullEnv(G1GaitEnv):
    policy_terms = PULL_POLICY_TERMS
    critic_observation_layout = PULL_CRITIC_OBSERVATION
    reward_terms = rewards.REWARDS
    event_terms = (CALIBRATION, ROBOT, EventTerm("cart", start_cart, "reset"), PUSH_SCHEDULE, PUSH)
    metric_reductions: ClassVar[dict[str, str]] = {
        **G1GaitEnv.metric_reductions,
        "peak_pull_force_backward_n": "max",
        "peak_pull_force_forward_n": "max",
    }
    """`simreal eval` reports the largest of these over its episodes, not the mean."""

    def __init__(
        self,
        cfg: G1PullConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
    ):
        super().__init__(cfg, num_envs, engine, seed, num_threads)
        self.tension_sensor = sensor_view(self.engine, ROPE_SENSOR, "g1-pull")
        self.grip_sensors = [
            sensor_view(self.engine, f"{site}_pos", "g1-pull") for site in GRIP_SITES
        ]
        self.hitch_sensor = sensor_view(self.engine, f"{HITCH_SITE}_pos", "g1-pull")
        s, steps = num_envs, self.max_episode_steps
        self.direction = np.full(s, -1.0)
        self.speed = np.zeros(s)
        self.resistance = np.zeros(s)
        self.damping = np.zeros(s)
        self.stiffness = np.zeros(s)
        self.tension = np.zeros(s)
        self.handle_force_n = np.zeros(s)
        self.start_x = np.zeros(s)
        self.force_trace = np.zeros((s, steps))
        self.progress_trace = np.zeros((s, steps + 1))
        self.cart_trace = np.zeros((s, steps + 1))
        """Cart travel along the pull direction after each step (the held-force metric)."""
        load = cfg.load
        self.curriculum = make_curriculum(
            load.curriculum,
            load.resistance_start_n,
            load.resistance_max_n,
            load.resistance_step_n,
            s,
            load.raise_below_fall_rate,
            load.lower_above_fall_rate,
        )
        self.hold_steps = max(1, round(cfg.eval_pull.hold_s / self.control_dt))

    @property
    def gait_start_s(self) -> float:
        """The clock starts with the walk command, after the standing start."""
        return self.cfg.command.start_delay_s

    def scene_mjcf(self, cfg: G1PullConfig) -> str:
        scene = build_pull_scene(
            cfg.load,
            cfg.physics_dt,
            visual_geoms=cfg.evaluation,
            integrator=cfg.integrator,
            self_collision=cfg.self_collision,
            native_motors=self.native_motors,
            motor_envelope=cfg.motor_envelope,
        )
        self.scene_hand_pos = scene.hand_pos
        self.hands_x = float(scene.hand_pos[:, 0].mean())
        self.cart_offset_m = scene.cart_offset_m
        return scene.mjcf

    def _read_model(self, model: mujoco.MjModel) -> None:
        super()._read_model(model)
        self.cart_q = int(model.jnt_qposadr[model.joint(CART_JOINT).id])
        self.cart_dof = int(model.jnt_dofadr[model.joint(CART_JOINT).id])
        self.cart_jnt = int(model.joint(CART_JOINT).id)
        if self.cart_q < ROBOT_QPOS.stop:
            raise ValueError("g1-pull scene: the robot's joints must lead qpos")

    def cart_start_x(self, direction: np.ndarray) -> np.ndarray:
        """Where the cart starts: ahead of the hands when pulling backward (direction -1),
        behind them when pulling forward (+1), the rope `rope_slack_m` short of taut."""
        return self.hands_x - direction * self.cart_offset_m

    def steady_tow_force(self) -> np.ndarray:
        """(N,) the rope force that keeps each cart rolling at its current speed without
        accelerating: rolling resistance + damping x speed + spring x distance from the
        start (where the spring is anchored)."""
        start = self.cart_start_x(self.direction)
        travel = np.abs(self.engine.qpos[:, self.cart_q] - start)
        speed = np.abs(self.engine.qvel[:, self.cart_dof])
        return self.resistance + self.damping * speed + self.stiffness * travel

    # -- the load -----------------------------------------------------------------------
    def curriculum_state(self) -> dict[str, float]:
        return {} if self.cfg.evaluation else {"load_resistance_n": self.curriculum.level}

    def curriculum_checkpoint(self) -> dict:
        if self.cfg.evaluation:
            return {}
        return checkpoint_state(self.curriculum, "load_resistance_n")

    def restore_curriculum(self, state: dict) -> None:
        restore_state(self.curriculum, state, "load_resistance_n")

    def after_physics(self) -> None:
        super().after_physics()
        self.measure_handle_force()
        step = self.episode_step
        rows = np.flatnonzero(step < self.max_episode_steps)
        self.force_trace[rows, step[rows]] = self.handle_force_n[rows]
        progress = self.direction * self.engine.qpos[:, 0] - self.start_x
        self.progress_trace[rows, step[rows] + 1] = progress[rows]
        cart_x = self.engine.qpos[:, self.cart_q]
        cart = self.direction * (cart_x - self.cart_start_x(self.direction))
        self.cart_trace[rows, step[rows] + 1] = cart[rows]

    def measure_handle_force(self) -> None:
        """The rope's pull on each hand from the sensors: tension T towards the hitch.
        `external_force` holds them (torso entry zero); handle_force_n is the magnitude
        of their sum, the force the robot exerts on the load."""
        self.tension = np.maximum(self.tension_sensor[:, 0], 0.0)
        hitch = self.hitch_sensor
        self.external_force = np.zeros_like(self.external_force)
        for k, grip in enumerate(self.grip_sensors, start=1):
            strand = hitch - grip
            length = np.linalg.norm(strand, axis=1, keepdims=True)
            self.external_force[:, k] = self.tension[:, None] * strand / np.maximum(length, 1e-9)
        self.handle_force_n = np.linalg.norm(self.external_force.sum(axis=1), axis=1)
        self.record_external_force()

    # -- commands, observations, rewards -----------------------------------------------
    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        c = self.cfg.command
        self.command = walking_command(
            self.episode_step * self.control_dt,
            self.direction,
            self.speed,
            self.yaw(),
            c.start_delay_s,
            c.heading_gain,
            c.max_yaw_rate,
        )
        obs, critic = super().observe()
        pull = PullReading(
            command=self.command,
            phase=self.phase(),
            walking=self.walking(),
            direction=self.direction,
        )
        command, clock = observe(COMMAND_TERMS, pull), observe(GAIT_TERMS, pull)
        load = observe(LOAD_TERMS, self)
        return (
            np.concatenate([obs, command, clock], axis=1, dtype=np.float32),
            np.concatenate([critic, command, load, clock], axis=1, dtype=np.float32),
        )

    @staticmethod
    def command_ranges(task_config: dict, direction: float) -> tuple[tuple[float, ...], ...]:
        """(low, high) of the (vx, vy, yaw_rate) commands a policy trained under
        `task_config` (plain data, as exported in its `task_config` metadata) saw while
        pulling in `direction`: what a deployment clips its commands to."""
        plain = task_config.get("command", {})
        command = CommandConfig(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in plain.items()}
        )
        command.validate()
        return command.velocity_ranges(direction)

    # -- metrics --------------------------------------------------------------------------
    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """fall_rate, peak_force_n (largest handle force), pull_force_held_n (metrics.py;
        0 after a fall), pull_resistance_n, per direction peak_pull_force_{backward,
        forward}_n (0 for the other direction; `simreal eval` takes their maximum) and
        pulls_forward (1 or 0). Training also reports load_resistance_level_n and feeds
        the curriculum the outcomes."""
        fell = self.ended_in_fall(ids)
        ev = self.cfg.eval_pull
        held = held_force(
            self.force_trace[ids],
            self.cart_trace[ids],
            self.episode_step[ids],
            self.hold_steps,
            ev.moving_speed_m_s * self.hold_steps * self.control_dt,
            first_start=round(self.cfg.command.start_delay_s / self.control_dt),
        )
        held[fell] = 0.0
        direction = self.direction[ids]
        out = {
            "fall_rate": fell.astype(float),
            "peak_force_n": self.peak_force_n[ids].copy(),
            "pull_force_held_n": held,
            "pull_resistance_n": self.resistance[ids].copy(),
            "peak_pull_force_backward_n": np.where(direction < 0, held, 0.0),
            "peak_pull_force_forward_n": np.where(direction > 0, held, 0.0),
            "pulls_forward": (direction > 0).astype(float),
        }
        if self.cfg.evaluation:
            out["self_penetration_m"] = self.self_penetration_m[ids].copy()
        else:
            out["load_resistance_level_n"] = self.curriculum.levels_of(ids)
            failed = fell | self.fell_short(ids)
            self.curriculum.record_episodes(ids, failed, window=self.num_sims)
        return out

    @staticmethod
    def summarize_episodes(ended: dict[str, list[float]]) -> dict:
        """Per direction: the fall rate and every episode's cart and held force, lightest
        cart first. The peak metrics keep only the best episode; this shows where the
        policy stops towing, and whether it fails by falling or by a jerky pull."""
        forward = np.asarray(ended["pulls_forward"]) > 0.5
        resistance = np.asarray(ended["pull_resistance_n"])
        held = np.asarray(ended["pull_force_held_n"])
        fell = np.asarray(ended["fall_rate"]) > 0.5
        out: dict = {}
        for name, rows in (("backward", ~forward), ("forward", forward)):
            order = np.flatnonzero(rows)[np.argsort(resistance[rows], kind="stable")]
            out[f"fall_rate_{name}"] = float(fell[rows].mean()) if rows.any() else 0.0
            out[f"episodes_{name}"] = [
                {
                    "resistance_n": round(float(resistance[i]), 1),
                    "held_n": round(float(held[i]), 1),
                    "fell": bool(fell[i]),
                }
                for i in order
            ]
        return out

    def fell_short(self, ids: np.ndarray) -> np.ndarray:
        """Walking episodes of `ids` whose pelvis covered less than min_progress_fraction
        of the commanded distance along the pull direction (the cart held it back)."""
        steps = self.episode_step[ids]
        walk_s = np.maximum(steps * self.control_dt - self.cfg.command.start_delay_s, 0.0)
        commanded = self.speed[ids] * walk_s
        progress = self.progress_trace[ids, np.minimum(steps, self.max_episode_steps)]
        walking = self.speed[ids] > WALKING_SPEED_M_S
        return walking & (progress < self.cfg.load.min_progress_fraction * commanded)
