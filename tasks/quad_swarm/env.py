"""`quad-swarm` environment: one shared policy flies every drone of every simulation.

Each simulation holds `num_drones` Crazyflies; PPO sees one row per drone. A drone that
crashes (floor, ceiling, walls, tilting over) ends its own episode and restarts from
its start slot while the others fly on, so no drone is cut short by a neighbour's
crash; the simulation restarts when its time runs out. Collisions between drones or
with columns are penalized, counted and (by default) end the colliding drones' episodes
like crashes. The swarm succeeds when, at the end, every
drone is at its goal and none collided or crashed during the episode.
"""

from __future__ import annotations

import numpy as np

from simreal.robots.crazyflie import CrazyflieParams, motor_thrust
from simreal.tasks.env import TaskEnv
from simreal.tasks.episodes import wilson_interval
from simreal.tasks.quad_swarm import expert, rewards
from simreal.tasks.quad_swarm import observations as obs_terms
from simreal.tasks.quad_swarm.config import QuadSwarmConfig
from simreal.tasks.quad_swarm.geodesic import FloorGrid, path_distance
from simreal.tasks.quad_swarm.scene import PARKED_Z, build_scene
from simreal.tasks.quadrotor import airframe
from simreal.tasks.quadrotor.controller import mixer_matrix, rotor_thrusts
from simreal.tasks.quadrotor.env import motor_metadata
from simreal.tasks.rotations import roll_pitch
from simreal.tasks.terms import EventTerm, TerminationTerm, layout, noise_scale, observe

CRASH_HEIGHT = 0.05
SLOT_XS = np.linspace(-3.0, 3.0, 11)
SLOT_DEPTHS = np.array([0.4, 0.9, 1.4])
"""Start and goal slots: 11 across by 3 deep at each end of the room (33 drones at most)."""


def randomize_airframes(env, ids: np.ndarray) -> None:
    """New airframe and motor scales, motor lag and command latency for every drone of
    simulations `ids` (`airframe.sample`), written into their model."""
    drawn = airframe.sample(env.rng, env.cfg.randomization, (ids.size, env.agents_per_sim))
    env.kf_scale[ids] = drawn["kf_scale"]
    env.latency_steps[ids] = drawn["latency_steps"]
    env._airframe.write(env.engine, ids, drawn)


def crashed(env) -> np.ndarray:
    """(num_envs,) the drones that crashed this step (`simulate` judges them, so that the
    step's rewards see them): in training each ends its own episode and respawns. In
    evaluation none does: every drone's episode runs to the end, so the swarm's outcome
    is judged once, at the end, for all of its drones; a crashed drone drops out with
    motors off (`after_step`)."""
    if env.cfg.evaluation:
        return np.zeros(env.num_envs, dtype=bool)
    return env.crashed_now.ravel()


class QuadSwarmEnv(TaskEnv):
    robot = "crazyflie"
    agents_end_together = False
    cfg: QuadSwarmConfig
    reward_terms = rewards.REWARDS
    termination_terms = (TerminationTerm("crashed", crashed),)
    event_terms = (EventTerm("airframe", randomize_airframes, "reset", randomization=True),)
    """Airframe randomization (task.randomization), per drone, at resets in training."""

    def __init__(
        self,
        cfg: QuadSwarmConfig,
        num_envs: int,
        engine: str = "mjbatch",
        seed: int = 0,
        num_threads: int = 0,
    ):
        cfg.validate()
        if cfg.num_drones > SLOT_XS.size * SLOT_DEPTHS.size:
            raise ValueError(
                f"num_drones: at most {SLOT_XS.size * SLOT_DEPTHS.size} fit the start zone"
            )
        self.cfg = cfg
        self.params = CrazyflieParams()
        self.agents_per_sim = n = cfg.num_drones
        self.decimation = cfg.decimation
        self.max_episode_steps = cfg.max_episode_steps
        self.velocity_control = cfg.action_type == "velocity"
        self.action_groups = (
            {"velocity": (0, 1, 2)} if self.velocity_control else {"motors": (0, 1, 2, 3)}
        )
        a = self.num_actions
        self.policy_terms = obs_terms.policy_terms(
            cfg.neighbours, cfg.obstacles_seen, a, cfg.obstacle_path_frame
        )
        self.critic_observation_layout = layout(self.policy_terms)
        self.observation_structure = obs_terms.observation_structure(
            cfg.neighbours, cfg.obstacles_seen, a, cfg.obstacle_path_frame
        )
        self.speed_scale = np.array([cfg.max_speed_xy, cfg.max_speed_xy, cfg.max_speed_z])
        self.mixer_inverse = np.linalg.inv(mixer_matrix(self.params))
        cells = cfg.obstacle_grid
        grid = (np.arange(cells) - (cells - 1) / 2) * 1.0
        self.cell_xy = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1).reshape(-1, 2)
        s = num_envs
        self.columns_xy = np.zeros((s, cells * cells, 2))
        self.column_present = np.zeros((s, cells * cells), dtype=bool)
        self.goal = np.zeros((s, n, 3))
        self.density = np.zeros(s)
        self.level = 0
        self.level_outcomes: list[float] = []
        mjcf = build_scene(
            self.params, n, cells, cfg.obstacle_radius, cfg.ceiling, 1.0 / cfg.physics_hz
        )
        super().__init__(mjcf, num_envs, engine, seed, num_threads)
        self.action = np.zeros((s, n, a))
        self.last_action = np.zeros((s, n, a))
        self.prev_goal_dist = np.zeros((s, n))
        self.floor: FloorGrid | None = None
        """The goal maps round the columns (geodesic.py), built only for the path_progress
        reward or the expert: about 50 ms per simulation reset at 80 % density."""
        if cfg.reward_weights.get("path_progress", 0.0) != 0.0:
            self._build_path_maps()
        self.collisions = np.zeros((s, n), dtype=bool)
        self.near_miss = np.zeros((s, n))
        self.collided = np.zeros(s, dtype=bool)
        self.time_to_goal = np.full(s, np.nan)
        self.crashed_any = np.zeros(s, dtype=bool)
        self.crashed_now = np.zeros((s, n), dtype=bool)
        self.down = np.zeros((s, n), dtype=bool)
        """Evaluation only: drones out of the episode after a crash or collision (motors off)."""
        self.start_pos = np.zeros((s, n, 3))
        model = self.engine.model
        self._column_geoms = np.array([model.geom(f"column{j}").id for j in range(cells * cells)])
        self.randomize = not cfg.evaluation and cfg.randomization.enabled
        self._airframe = airframe.Nominal(
            self.engine, np.array([model.body(f"drone{i}").id for i in range(n)])
        )
        self.kf_scale = np.ones((s, n))
        self.latency_steps = np.zeros((s, n), dtype=np.int64)
        self.action_queue = np.zeros((cfg.randomization.latency_steps[1] + 1, s, n, a))
        """Past actions, newest first: row k is what the policy sent k control steps ago."""
        self._noisy = _continuous_columns(self.observation_structure, self.num_obs)

    # -- state views: (num_sims, num_drones, ...) --------------------------------------
    @property
    def pos(self) -> np.ndarray:
        return self.engine.qpos.reshape(self.num_sims, -1, 7)[:, :, 0:3]

    @property
    def quat(self) -> np.ndarray:
        return self.engine.qpos.reshape(self.num_sims, -1, 7)[:, :, 3:7]

    @property
    def lin_vel(self) -> np.ndarray:
        return self.engine.qvel.reshape(self.num_sims, -1, 6)[:, :, 0:3]

    @property
    def ang_vel(self) -> np.ndarray:
        return self.engine.qvel.reshape(self.num_sims, -1, 6)[:, :, 3:6]

    @property
    def goal_dist(self) -> np.ndarray:
        return np.linalg.norm(self.goal - self.pos, axis=-1)

    @property
    def density_high(self) -> float:
        levels = (self.cfg.density[1], *self.cfg.curriculum)
        return levels[min(self.level, len(levels) - 1)]

    def path_dist(self) -> np.ndarray:
        """(num_sims, num_drones) metres to the goal along the shortest path round the
        columns (needs the path maps)."""
        return path_distance(self.path_maps, self.floor, self.pos, self.goal)

    def after_step(self) -> None:
        """Keep the distances the next step's progress terms difference against, and the
        swarm's outcomes so far (crashes, first arrival; in evaluation a crashed drone
        drops out)."""
        if self._step_weights.get("progress", 0.0) != 0.0:
            self.prev_goal_dist = self.goal_dist
        if self._step_weights.get("path_progress", 0.0) != 0.0:
            self.prev_path_dist = self.path_dist()
        self.crashed_any |= self.crashed_now.any(axis=1)
        arrived = (self.goal_dist < self.cfg.goal_radius).all(axis=1)
        first = arrived & np.isnan(self.time_to_goal)
        self.time_to_goal[first] = self.sim_step[first] * self.control_dt
        if self.cfg.evaluation:
            self.down |= self.crashed_now

    def _build_path_maps(self) -> None:
        s, n = self.num_sims, self.agents_per_sim
        self.floor = FloorGrid(self.cfg.room_half_size, self.cfg.path_cell_m)
        self.path_maps = np.zeros((s, n, self.floor.n**2), dtype=np.float32)
        self.prev_path_dist = np.zeros((s, n))

    def expert_velocity(self) -> np.ndarray:
        """(S, N, 3) world velocity (m/s) the privileged expert (expert.py) commands now;
        the first call builds the goal maps of every simulation, later resets keep them."""
        if self.floor is None:
            self._build_path_maps()
            self._reset_path_maps(np.arange(self.num_sims))
        c, pos = self.cfg, self.pos
        clearance = c.obstacle_radius + self.params.collision_radius
        e = c.expert
        direction = self.goal[..., :2] - pos[..., :2]
        direction /= np.maximum(np.linalg.norm(direction, axis=-1, keepdims=True), 1e-9)
        blocked = ~expert.clear_line(
            pos, self.goal, self.columns_xy, self.column_present, clearance + e.column_margin
        )
        # The map's gradient (four lookups per drone) only where the straight line is blocked.
        direction[blocked] = expert.path_direction(
            self.path_maps[blocked], self.floor, pos[blocked], self.goal[blocked]
        )
        to_other, dist = expert.active_neighbours(pos, ~self.down)
        orca = e.avoidance == "orca"
        velocity = expert.expert_velocity(
            e,
            pos,
            self.goal,
            direction,
            expert.column_push(
                pos, self.columns_xy, self.column_present, clearance, e.column_margin, e.column_gain
            ),
            0.0
            if orca
            else expert.drone_push(
                to_other, dist, c.collision_distance, e.drone_margin, e.drone_gain, e.drone_yield
            ),
            c.max_speed_xy,
            c.max_speed_z,
            expert.cruise_height(e, pos, self.goal, self.start_pos),
            expert.crowd_speed_cap(e, dist),
        )
        if not orca:
            return velocity
        velocity = expert.reciprocal_avoidance(
            e,
            velocity,
            pos,
            self.lin_vel,
            to_other,
            dist,
            self.control_dt,
            (self.columns_xy, self.column_present, clearance),
        )
        return expert.speed_limited(velocity, c.max_speed_xy, c.max_speed_z)

    def expert_action(self) -> np.ndarray:
        """(num_envs, 3) float32: the expert's command as the policy's action, i.e. the
        residual on the goal prior that `velocity_command` turns back into it (what
        `train.algorithm=dagger` teaches the policy)."""
        if not self.velocity_control:
            raise ValueError("quad-swarm: the expert flies velocity actions (task.action_type)")
        target = self.expert_velocity() / self.speed_scale
        return (target - self.goal_prior()).reshape(self.num_envs, -1).astype(np.float32)

    def _reset_path_maps(self, sim_ids: np.ndarray) -> None:
        """Each drone's goal map around its room's columns (geodesic.py); a column blocks
        cells within its radius, the drone's and 5 cm."""
        clearance = self.cfg.obstacle_radius + self.params.collision_radius + 0.05
        for i in sim_ids:
            blocked = self.floor.blocked(self.columns_xy[i], self.column_present[i], clearance)
            self.path_maps[i] = self.floor.distance_maps(blocked, self.goal[i, :, :2])
        self.prev_path_dist[sim_ids] = path_distance(
            self.path_maps[sim_ids], self.floor, self.start_pos[sim_ids], self.goal[sim_ids]
        )

    def apply_action(self, action: np.ndarray) -> None:
        s, n = self.num_sims, self.agents_per_sim
        self.last_action[:] = self.action
        self.action[:] = action.reshape(s, n, -1)
        self.action_queue = np.roll(self.action_queue, 1, axis=0)
        self.action_queue[0] = self.action
        if self.velocity_control:
            return  # the controller turns the command into thrusts every physics step
        rpm = self.params.hover_rpm * (1.0 + self.cfg.action_rpm_scale * self.delayed_action())
        rpm = np.clip(rpm, 0.0, self.params.max_rpm)
        kf = self.params.kf * self.kf_scale[..., None]
        self.engine.ctrl[:] = motor_thrust(rpm, kf).reshape(s, n * 4)

    def delayed_action(self) -> np.ndarray:
        """(S, N, A) the action each drone acts on: sent latency_steps control steps ago."""
        return np.take_along_axis(self.action_queue, self.latency_steps[None, ..., None], 0)[0]

    def velocity_command(self, action: np.ndarray | None = None) -> np.ndarray:
        """(S, N, 3) world velocity (m/s) the controller flies: the policy's residual
        (`action`, default the latest sent) on the goal-seeking prior
        (config.goal_prior_gain), within the speed limits."""
        action = self.action if action is None else action
        return np.clip(self.goal_prior() + action, -1.0, 1.0) * self.speed_scale

    def goal_prior(self) -> np.ndarray:
        """(S, N, 3) the goal-seeking prior in action units (config.goal_prior_gain)."""
        want = self.cfg.goal_prior_gain * (self.goal - self.pos)  # m/s
        speed = np.linalg.norm(want, axis=-1, keepdims=True)
        want *= np.minimum(1.0, self.cfg.max_speed_xy / np.maximum(speed, 1e-9))
        # Within the unit box, so that a residual of -1..1 can cancel it (brake) anywhere.
        return np.clip(want / self.speed_scale, -1.0, 1.0)

    def simulate(self) -> None:
        """Step the physics, then judge collisions and crashes at once, so that the reward
        of this step (computed before `terminated`) sees them."""
        if self.velocity_control:
            command = self.velocity_command(self.delayed_action()).reshape(-1, 3)
            for _ in range(self.decimation):
                thrusts = rotor_thrusts(
                    self.params,
                    self.cfg.controller,
                    self.quat.reshape(-1, 4),
                    self.lin_vel.reshape(-1, 3),
                    self.ang_vel.reshape(-1, 3),
                    command,
                    self.mixer_inverse,
                )
                # The controller assumes the nominal thrust constant; the rotors deliver
                # what the drone's own (randomized) constant gives.
                thrusts = thrusts.reshape(self.num_sims, -1, 4) * self.kf_scale[..., None]
                thrusts[self.down] = 0.0
                self.engine.ctrl[:] = thrusts.reshape(self.num_sims, -1)
                self.step_physics(1)
        else:
            self.engine.ctrl.reshape(self.num_sims, -1, 4)[self.down] = 0.0
            self.step_physics(self.decimation)
        self._detect_collisions()
        self._detect_crashes()

    def _detect_collisions(self) -> None:
        c, pos = self.cfg, self.pos
        drone_gap = rewards.nearest_drone_gap(pos)
        column_gap = rewards.nearest_column_gap(
            pos, self.columns_xy, self.column_present, c.obstacle_radius
        )
        radius = self.params.collision_radius
        self.collisions = (drone_gap < c.collision_distance) | (column_gap < radius)
        self.collisions &= ~self.down
        self.collided |= self.collisions.any(axis=1)
        self.near_miss = rewards.clearance(
            drone_gap, column_gap, c.collision_distance, radius, c.clearance_margin
        )

    def _detect_crashes(self) -> None:
        """Floor, ceiling, walls, tilting over."""
        pos = self.pos
        roll, pitch = roll_pitch(self.quat.reshape(-1, 4))
        tilt = np.maximum(np.abs(roll), np.abs(pitch)).reshape(pos.shape[:2])
        h = self.cfg.room_half_size
        self.crashed_now = (
            (pos[..., 2] < CRASH_HEIGHT)
            | (pos[..., 2] > self.cfg.ceiling)
            | (np.abs(pos[..., 0]) > h)
            | (np.abs(pos[..., 1]) > h)
            | (tilt > self.cfg.max_tilt)
        )
        if self.cfg.collision_ends_episode:
            self.crashed_now |= self.collisions
        self.crashed_now &= ~self.down

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        c = self.cfg
        pos, vel = self.pos, self.lin_vel
        reading = obs_terms.SwarmReading(
            pos,
            self.quat,
            vel,
            self.ang_vel,
            self.goal,
            self.action,
            obs_terms.neighbour_tokens(pos, vel, c.neighbours),
            obs_terms.obstacle_tokens(
                pos,
                self.columns_xy,
                self.column_present,
                c.obstacle_radius,
                c.obstacles_seen,
                self.goal if c.obstacle_path_frame else None,
            ),
        )
        obs = observe(self.policy_terms, reading)
        if not (self.randomize and c.randomization.obs_noise_std > 0):
            return obs, obs
        scale = noise_scale(self.policy_terms, c.randomization) * self._noisy  # flags stay 0/1
        return obs + (self.rng.normal(size=obs.shape) * scale).astype(np.float32), obs

    def episode_metrics(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """Swarm outcomes of each drone's simulation so far: success needs every drone at
        its goal at the end with no collision and no crash in the whole episode."""
        sims = ids // self.agents_per_sim
        at_goal = (self.goal_dist < self.cfg.goal_radius) & ~self.down
        arrived = at_goal.all(axis=1)
        success = arrived & ~self.collided & ~self.crashed_any
        elapsed = self.sim_step * self.control_dt
        ttg = np.where(np.isnan(self.time_to_goal), elapsed, self.time_to_goal)
        outcome = {
            "success": success[sims].astype(float),
            "arrived_fraction": at_goal.mean(axis=1)[sims],
            "collision": self.collided[sims].astype(float),
            "crash": self.crashed_any[sims].astype(float),
            "time_to_goal_s": ttg[sims],
            "density": self.density[sims],
        }
        ended = np.unique(sims[self.sim_step[sims] >= self.max_episode_steps])
        if not self.cfg.evaluation and ended.size:
            self._advance_curriculum(success[ended])
        return outcome

    def summarize_episodes(self, ended: dict[str, list[float]]) -> dict:
        """95 % confidence intervals of the swarm rates over swarm episodes. Every drone row
        of a simulation carries its swarm's outcome, so the rows' sum over num_drones
        counts the swarms (evaluation: first episodes only, all drones end together)."""
        out = {}
        for key in ("success", "collision", "crash"):
            values = np.asarray(ended[key])
            swarms = values.size // self.agents_per_sim
            hits = round(values.sum() / self.agents_per_sim)
            out[f"{key}_ci95"] = list(wilson_interval(hits, swarms))
        return out

    def evaluation_conditions(self) -> dict:
        c = self.cfg
        return {
            **super().evaluation_conditions(),
            "num_drones": c.num_drones,
            "eval_density": c.eval_density,
            "goal_assignment": c.goal_assignment,
        }

    def respawn_agents(self, agent_ids: np.ndarray) -> None:
        """Crashed drones restart at rest from their start slots; the others fly on."""
        n = self.agents_per_sim
        sims, drones = agent_ids // n, agent_ids % n
        qpos_cols = 7 * drones[:, None] + np.arange(7)
        qvel_cols = 6 * drones[:, None] + np.arange(6)
        act_cols = 4 * drones[:, None] + np.arange(4)  # motor filter states
        start = np.zeros((agent_ids.size, 7))
        start[:, 0:3] = self.start_pos[sims, drones]
        start[:, 3] = 1.0
        self.engine.qpos[sims[:, None], qpos_cols] = start
        self.engine.qvel[sims[:, None], qvel_cols] = 0.0
        self.engine.act[sims[:, None], act_cols] = 0.0
        self.action[sims, drones] = 0.0
        self.last_action[sims, drones] = 0.0
        self.action_queue[:, sims, drones] = 0.0
        self.prev_goal_dist[sims, drones] = np.linalg.norm(
            self.goal[sims, drones] - self.start_pos[sims, drones], axis=-1
        )
        if self.floor is not None:
            self.prev_path_dist[sims, drones] = path_distance(
                self.path_maps[sims, drones],
                self.floor,
                self.start_pos[sims, drones],
                self.goal[sims, drones],
            )

    def curriculum_state(self) -> dict[str, float]:
        return {} if self.cfg.evaluation else {"density_high": self.density_high}

    def restore_curriculum(self, state: dict[str, float]) -> None:
        """Back at the level whose upper density the checkpoint recorded."""
        if "density_high" in state:
            levels = np.array((self.cfg.density[1], *self.cfg.curriculum))
            self.level = int(np.argmin(np.abs(levels - state["density_high"])))
            self.level_outcomes.clear()

    def _advance_curriculum(self, successes: np.ndarray) -> None:
        """Unlock the next density once recent training episodes mostly succeed."""
        if self.level >= len(self.cfg.curriculum):
            return
        self.level_outcomes.extend(successes.tolist())
        window = 4 * self.num_sims
        if (
            len(self.level_outcomes) >= window
            and np.mean(self.level_outcomes[-window:]) >= self.cfg.curriculum_success
        ):
            self.level += 1
            self.level_outcomes.clear()

    def baseline_policy(self, name: str):
        """`prior`: zero residuals, the goal-seeking prior alone (velocity actions with
        goal_prior_gain > 0): how far flying straight home gets without avoidance.
        `expert`: the privileged teacher (expert.py), which reads the whole column layout
        and every drone's state from the simulation, not the observation."""
        if self.velocity_control and name == "expert":
            return lambda obs: self.expert_action()
        if name != "prior" or not self.velocity_control or self.cfg.goal_prior_gain == 0:
            raise ValueError(
                f"quad-swarm: unknown baseline {name!r}; available: prior (velocity actions "
                "with goal_prior_gain > 0), expert (velocity actions)"
            )
        return self.zero_action_policy()

    def deployment_metadata(self) -> dict:
        meta = {
            **super().deployment_metadata(),
            **motor_metadata(self.params, self.cfg),
            "observation_structure": self.observation_structure,
            "action_type": self.cfg.action_type,
        }
        if self.velocity_control:
            # The policy's "joints" are the three axes of the commanded world velocity.
            meta["joint_names"] = ["velocity_x", "velocity_y", "velocity_z"]
            meta["default_joint_pos"] = [0.0, 0.0, 0.0]
            meta["action_scale"] = self.speed_scale.tolist()
            meta["velocity_controller"] = self.cfg.controller.as_metadata()
            meta["goal_prior_gain"] = self.cfg.goal_prior_gain
        return meta

    def reset_state(self, sim_ids: np.ndarray) -> None:
        c = self.cfg
        k, n = sim_ids.size, self.agents_per_sim
        if c.evaluation:
            density = np.full(k, c.eval_density)
        else:
            density = self.rng.uniform(c.density[0], max(c.density[0], self.density_high), k)
        self.density[sim_ids] = density
        cells = self.cell_xy.shape[0]
        count = np.round(density * cells).astype(int)
        order = np.argsort(self.rng.random((k, cells)), axis=1)
        present = np.zeros((k, cells), dtype=bool)
        np.put_along_axis(present, order, np.arange(cells)[None, :] < count[:, None], axis=1)
        self.column_present[sim_ids] = present
        self.columns_xy[sim_ids] = self.cell_xy
        geom_pos = self.engine.model_field("geom_pos")
        z = np.where(present, c.ceiling / 2, PARKED_Z)
        geom_pos[sim_ids[:, None], self._column_geoms[None, :], 0:2] = self.cell_xy
        geom_pos[sim_ids[:, None], self._column_geoms[None, :], 2] = z

        starts = self._slots(k, n, -1.0)
        goals = self._slots(k, n, 1.0)
        if c.goal_assignment == "lanes":
            order = np.argsort(np.argsort(starts[..., 0], axis=1), axis=1)  # rank by x
            goals = np.take_along_axis(goals, np.argsort(goals[..., 0], axis=1)[..., None], 1)
            goals = np.take_along_axis(goals, order[..., None], axis=1)
        goals[..., 2] = self.rng.uniform(0.7, 1.6, (k, n))
        self.goal[sim_ids] = goals
        self.start_pos[sim_ids] = starts
        qpos = np.zeros((k, n, 7))
        qpos[..., 0:3] = starts
        qpos[..., 3] = 1.0
        self.engine.reset(sim_ids, qpos.reshape(k, -1), np.zeros((k, n * 6)))
        self.action[sim_ids] = 0.0
        self.last_action[sim_ids] = 0.0
        self.action_queue[:, sim_ids] = 0.0
        self.prev_goal_dist[sim_ids] = np.linalg.norm(goals - starts, axis=-1)
        if self.floor is not None:
            self._reset_path_maps(sim_ids)
        self.collisions[sim_ids] = False
        self.down[sim_ids] = False
        self.collided[sim_ids] = False
        self.crashed_any[sim_ids] = False
        self.time_to_goal[sim_ids] = np.nan

    def _slots(self, k: int, n: int, side: float) -> np.ndarray:
        """(k, n, 3) distinct start (side -1) or goal (side +1) points at the room's ends."""
        h = self.cfg.room_half_size
        xs, ys = np.meshgrid(SLOT_XS, side * (h - SLOT_DEPTHS), indexing="ij")
        slots = np.stack([xs.ravel(), ys.ravel()], axis=1)
        pick = np.argsort(self.rng.random((k, slots.shape[0])), axis=1)[:, :n]
        xy = slots[pick] + self.rng.uniform(-0.05, 0.05, (k, n, 2))
        z = self.rng.uniform(0.8, 1.2, (k, n, 1))
        return np.concatenate([xy, z], axis=-1)


def _continuous_columns(structure: dict, width: int) -> np.ndarray:
    """(width,) 1 for every observation column but the tokens' presence flags (0), which
    observation noise must leave exactly 0 or 1 (they mask the attention)."""
    mask = np.ones(width)
    start = structure["self"]
    for _, count, size, flag in structure["tokens"]:
        mask[start + flag : start + count * size : size] = 0.0
        start += count * size
    return mask
