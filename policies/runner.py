"""The training loop: collect, update, log, evaluate, checkpoint, repeat."""

from __future__ import annotations

import signal
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from simreal.policies.checkpoint import newest_readable, save_checkpoint
from simreal.policies.config import TrainConfig
from simreal.policies.dagger import DAgger
from simreal.policies.distributed import Distributed
from simreal.policies.evaluate import evaluate, model_policy
from simreal.policies.logger import TrainingLogger
from simreal.policies.models import ActorCritic
from simreal.policies.ppo import PPO
from simreal.policies.storage import RolloutStorage
from simreal.policies.vecenv import StepResult, VecEnv


def _stop_on_sigterm():
    """Treat SIGTERM (a scheduler or `kill` stopping the run) like Ctrl-C, so the run ends
    with a fresh checkpoint; returns the handler it replaced (None off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


class OnPolicyRunner:
    """Trains an ActorCritic with PPO on `env`, evaluating on `eval_env` when given.

    Under torchrun (`distributed` with several ranks) every rank runs this loop on its
    own `env`; rank 0 alone evaluates, logs, checkpoints and decides when to stop, and
    step counts are totals over ranks.
    """

    def __init__(
        self,
        env: VecEnv,
        cfg: TrainConfig,
        log_dir: Path,
        eval_env: VecEnv | None = None,
        reward_terms: list[str] | None = None,
        distributed: Distributed | None = None,
    ):
        cfg.validate()
        self.distributed = distributed or Distributed()
        torch.manual_seed(cfg.seed)  # the same initial model everywhere; broadcast below too
        torch.set_num_threads(cfg.torch_threads)
        self.env, self.eval_env, self.cfg, self.log_dir = env, eval_env, cfg, log_dir
        self.structure = getattr(env, "observation_structure", None)
        self.device = torch.device(self.distributed.learner_device)
        if self.device.type != "cpu" and cfg.algorithm == "dagger":
            raise ValueError(
                "train.algorithm=dagger runs its learner on the CPU: set train.device=cpu"
            )
        if cfg.algorithm == "dagger" and estimate_columns(env):
            raise ValueError(
                "train.algorithm=dagger does not train a state estimator; the task's "
                "estimate_terms need train.algorithm=ppo"
            )
        self.model = ActorCritic(
            env.num_obs,
            env.num_critic_obs,
            env.action_groups,
            cfg.model,
            self.structure,
            estimate_columns(env),
        ).to(self.device)
        storage = RolloutStorage(
            cfg.ppo.num_steps_per_env,
            env.num_envs,
            env.num_obs,
            env.num_critic_obs,
            env.num_actions,
            self.device,
        )
        self._to_learner = HostToDevice(self.device)
        self.distributed.broadcast_parameters(self.model)
        self.ppo = PPO(
            self.model, cfg.ppo, storage, self.distributed.seed(cfg.seed), self.distributed
        )
        if self.distributed.enabled:  # from here on, every rank draws its own numbers
            torch.manual_seed(self.distributed.seed(cfg.seed))
        imitates = cfg.algorithm == "dagger" or cfg.ppo.imitation_coef > 0
        if imitates and not hasattr(env, "expert_action"):
            what = (
                "train.algorithm=dagger"
                if cfg.algorithm == "dagger"
                else f"train.ppo.imitation_coef={cfg.ppo.imitation_coef}"
            )
            raise ValueError(
                f"{what}: this environment has no expert to imitate (expert_action); "
                "tasks with one: quad-swarm, g1-force with task.teacher"
            )
        self.dagger = (
            DAgger(
                self.model,
                cfg.dagger,
                self.ppo.optimizer,
                env.num_obs,
                env.num_actions,
                self.distributed.seed(cfg.seed),
                self.distributed,
                env.num_envs,
            )
            if cfg.algorithm == "dagger"
            else None
        )
        self.algorithm: PPO | DAgger = self.dagger or self.ppo  # what the rollout drives
        self.reward_terms = reward_terms or []
        self.iteration = 0
        self.env_steps = 0
        self.wall_time_s = 0.0
        self.best_eval_return: float | None = None
        self.last_eval: dict[str, Any] | None = None
        self.stopped_by: str | None = None
        self._saved_at = time.monotonic()

    @property
    def checkpoint_dir(self) -> Path:
        return self.log_dir / "checkpoints"

    def model_spec(self) -> dict[str, Any]:
        """What it takes to rebuild the network without the environment."""
        return {
            "n_obs": self.env.num_obs,
            "n_critic_obs": self.env.num_critic_obs,
            "action_groups": {k: list(v) for k, v in self.env.action_groups.items()},
            "observation_structure": self.structure,
            "estimate_columns": estimate_columns(self.env),
        }

    def save(self) -> Path | None:
        """Write a checkpoint (rank 0 only; other ranks hold the same model)."""
        self._saved_at = time.monotonic()
        if not self.distributed.is_main:
            return None
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.ppo.optimizer.state_dict(),
            "learning_rate": self.algorithm.learning_rate,
            "generator": self.ppo.generator.get_state(),
            "torch_rng": torch.get_rng_state(),
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "wall_time_s": self.wall_time_s,
            "best_eval_return": self.best_eval_return,
            "model_spec": self.model_spec(),
            "curriculum": self.curriculum_checkpoint(),
            "model_cfg": self.cfg.model,
        }
        return save_checkpoint(self.checkpoint_dir, self.iteration, state)

    def resume(self) -> Path:
        path, state = newest_readable(self.checkpoint_dir)
        self.model.load_state_dict(state["model"])
        self.ppo.optimizer.load_state_dict(state["optimizer"])
        self.algorithm.set_learning_rate(state["learning_rate"])
        self.ppo.generator.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        self.iteration = state["iteration"]
        self.env_steps = state["env_steps"]
        self.wall_time_s = state["wall_time_s"]
        self.best_eval_return = state["best_eval_return"]
        if hasattr(self.env, "restore_curriculum"):
            self.env.restore_curriculum(state.get("curriculum", {}))
        if not self.distributed.is_main:  # its own noise again, not rank 0's
            self.ppo.generator.manual_seed(self.distributed.seed(self.cfg.seed) + self.iteration)
        return path

    def curriculum_state(self) -> dict[str, float]:
        """The task's curriculum levels; none for environments without one (Gymnasium)."""
        state = getattr(self.env, "curriculum_state", None)
        return state() if state is not None else {}

    def curriculum_checkpoint(self) -> dict:
        """The curriculum as checkpoints keep it (Env.curriculum_checkpoint)."""
        state = getattr(self.env, "curriculum_checkpoint", None)
        return state() if state is not None else self.curriculum_state()

    def policy_fn(self):
        """The deterministic policy as a callable on observations (one that carries its
        memory where the actor is recurrent)."""
        return model_policy(self.model, lambda array: self._to_learner(array)[0])

    def learn(self) -> None:
        """Train until the step or time budget is spent or evaluation reaches the target."""
        cfg = self.cfg
        main = self.distributed.is_main
        logger = (
            TrainingLogger(
                self.log_dir, self.reward_terms, tuple(self.curriculum_state()), self.iteration
            )
            if main
            else None
        )
        bar = tqdm(
            total=None if cfg.max_minutes else cfg.max_env_steps,  # no step rate known yet
            initial=self.env_steps,
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not main,
        )
        previous = _stop_on_sigterm()
        try:
            self._loop(logger, bar)
        except KeyboardInterrupt:
            self.stopped_by = "interrupted"
            raise
        finally:
            if previous is not None:  # a (repeated) SIGTERM must not cut the last save short
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                bar.close()
                self.save()
                if logger is not None:
                    logger.write_curve()
                    logger.close()
            finally:
                if previous is not None:
                    signal.signal(signal.SIGTERM, previous)

    def _loop(self, logger: TrainingLogger | None, bar: tqdm) -> None:
        cfg = self.cfg
        obs_np, critic_np = self.env.reset()
        obs, critic_obs = self._to_learner(obs_np, critic_np)
        recent_returns: deque[float] = deque(maxlen=100)
        recent_lengths: deque[float] = deque(maxlen=100)
        algorithm = self.algorithm
        batch_steps = (
            algorithm.steps_per_iteration * self.env.num_envs * self.distributed.world_size
        )
        start = time.perf_counter() - self.wall_time_s
        self._saved_at = time.monotonic()
        while self.stopped_by is None:
            t0 = time.perf_counter()
            algorithm.begin_iteration(self.iteration, self._progress())
            time_env_s, physics_start = 0.0, _physics_time(self.env)
            tally = _Tally(self.reward_terms, recent_returns, recent_lengths)
            torch.set_num_threads(cfg.rollout_torch_threads)
            with torch.inference_mode():
                overlapped = None
                if self._acts_per_group():
                    obs, critic_obs, overlapped = self._collect_per_group(obs, critic_obs, tally)
                else:
                    for _ in range(algorithm.steps_per_iteration):
                        expert = (
                            self._to_learner(self.env.expert_action())[0]
                            if algorithm.wants_expert
                            else None
                        )
                        actions = algorithm.act(obs, critic_obs, expert)
                        t_env = time.perf_counter()
                        step = self.env.step(actions.cpu().numpy())
                        time_env_s += time.perf_counter() - t_env
                        algorithm.record(step)
                        obs, critic_obs = self._to_learner(step.obs, step.critic_obs)
                        tally.add(step)
                algorithm.finish_rollout(critic_obs)
            t_update = time.perf_counter()
            torch.set_num_threads(cfg.torch_threads)
            losses = algorithm.update()
            time_update_s = time.perf_counter() - t_update
            self.iteration += 1
            self.env_steps += batch_steps
            self.wall_time_s = time.perf_counter() - start
            eval_return = self._maybe_evaluate()
            row = {
                "iteration": self.iteration,
                "env_steps": self.env_steps,
                "wall_time_s": round(self.wall_time_s, 3),
                "steps_per_s": round(batch_steps / (time.perf_counter() - t0), 1),
                # physics, task layer and policy inference / the learning update
                "time_collect_s": round(t_update - t0, 4),
                "time_update_s": round(time_update_s, 4),
                **_collect_split(t_update - t0, time_env_s, physics_start, self.env, overlapped),
                "train_return": float(np.mean(recent_returns)) if recent_returns else None,
                "train_episode_length": float(np.mean(recent_lengths)) if recent_lengths else None,
                "eval_return": eval_return,
                "unstable_resets": tally.unstable,
                **losses,
                **{f"reward/{k}": float(np.mean(v)) for k, v in tally.terms.items()},
                **{f"episode/{k}": float(np.nanmean(v)) for k, v in tally.outcomes.items() if v},
                **{f"curriculum/{k}": v for k, v in self.curriculum_state().items()},
            }
            if logger is not None:
                logger.log(row)
                if eval_return is not None:
                    logger.log_evaluation(self.env_steps, self.last_eval)
            bar.total = budget_end_steps(
                self.env_steps, self.wall_time_s, cfg.max_env_steps, cfg.max_minutes
            )
            bar.update(batch_steps)
            postfix = {"sps": f"{row['steps_per_s']:.0f}", "ret": f"{row['train_return'] or 0:.1f}"}
            if self.best_eval_return is not None:  # nothing to show before the first one
                postfix["eval"] = f"{self.best_eval_return:.1f}"
            bar.set_postfix(postfix, refresh=False)
            if self.iteration % cfg.checkpoint_interval == 0 or self._checkpoint_time():
                self.save()
                if logger is not None:
                    logger.write_curve()
            self._check_budget()
            self.stopped_by = self.distributed.stop_together(self.stopped_by)

    def _acts_per_group(self) -> bool:
        """Whether the rollout acts group by group (`train.env_groups` > 1 and plain PPO;
        an expert to query or DAgger steps all groups at once)."""
        return (
            hasattr(self.env, "start_physics")
            and self.algorithm is self.ppo
            and (not self.ppo.wants_expert)
        )

    def _collect_per_group(
        self, obs: torch.Tensor, critic_obs: torch.Tensor, tally: _Tally
    ) -> tuple[torch.Tensor, torch.Tensor, tuple[float, float]]:
        """One rollout from an `OverlappedEnv`, each group acting as soon as its own
        previous step has ended: while the worker thread runs one group's physics, the
        main thread finishes the previous group's step (task layer, rollout storage) and
        samples and prepares the next group's actions, so neither the task layer nor the
        policy waits for the other groups. Group k's step t goes into rollout step t at
        its rows. Returns the final observations and the main thread's time in the task
        layer and in the policy (physics ran beside them on the worker)."""
        env, ppo = self.env, self.ppo
        rows = env.group_rows()
        groups = len(rows)
        obs_g = [obs[r] for r in rows]
        critic_g = [critic_obs[r] for r in rows]
        spent = {"task": 0.0, "policy": 0.0}
        running, ended = None, None

        def timed(what: str, fn, *args):
            t_start = time.perf_counter()
            out = fn(*args)
            spent[what] += time.perf_counter() - t_start
            return out

        def finish(t: int, g: int) -> None:
            step = timed("task", env.groups[g].finish_step)
            timed("policy", ppo.record_rows, t, rows[g], step)
            obs_g[g], critic_g[g] = timed("policy", self._to_learner, step.obs, step.critic_obs)
            tally.add(step)

        for slot in range(ppo.steps_per_iteration * groups):
            t, g = divmod(slot, groups)
            actions = timed("policy", ppo.act_rows, t, rows[g], obs_g[g], critic_g[g])
            timed("task", env.groups[g].begin_step, timed("policy", actions.cpu).numpy())
            if running is not None:
                running.result()
            running = env.start_physics(g)
            if ended is not None:
                finish(*ended)
            ended = (t, g)
        running.result()
        finish(*ended)
        ppo.storage.filled()
        return torch.cat(obs_g), torch.cat(critic_g), (spent["task"], spent["policy"])

    def _checkpoint_time(self) -> bool:
        """Whether `checkpoint_every_s` of wall time passed since the last checkpoint (a
        run killed between iteration checkpoints keeps its progress)."""
        return time.monotonic() - self._saved_at >= self.cfg.checkpoint_every_s

    def _maybe_evaluate(self) -> float | None:
        if (
            self.eval_env is None
            or self.iteration % self.cfg.eval_interval
            or not self.distributed.is_main
        ):
            return None
        self.model.eval()
        self.last_eval = evaluate(self.eval_env, self.policy_fn())
        self.model.train()
        value = self.last_eval["return_mean"]
        if self.best_eval_return is None or value > self.best_eval_return:
            self.best_eval_return = value
        target = self.cfg.stop_at_return
        if target is not None and value >= target:
            self.stopped_by = f"evaluation return {value:.1f} >= {target:g}"
        return value

    def _progress(self) -> float:
        """Fraction of the run's budget spent: steps or minutes, whichever is further on."""
        done = self.env_steps / self.cfg.max_env_steps
        if self.cfg.max_minutes > 0:
            done = max(done, self.wall_time_s / (60.0 * self.cfg.max_minutes))
        return min(done, 1.0)

    def _check_budget(self) -> None:
        if self.stopped_by:
            return
        if self.env_steps >= self.cfg.max_env_steps:
            self.stopped_by = f"step budget {self.cfg.max_env_steps}"
        elif self.cfg.max_minutes and self.wall_time_s >= 60.0 * self.cfg.max_minutes:
            self.stopped_by = f"time budget {self.cfg.max_minutes:g} min"


def estimate_columns(env) -> list[int]:
    """The critic columns the environment's state estimator infers (none for environments
    that declare none, e.g. Gymnasium's)."""
    columns = getattr(env, "estimate_columns", None)
    return list(columns()) if columns is not None else []


def budget_end_steps(
    env_steps: int, wall_time_s: float, max_env_steps: int, max_minutes: float | None
) -> int:
    """The env-step count at which training will stop: the step budget, or, when the time
    budget ends first at the rate so far, the steps it will have reached by then; never
    less than the steps taken (the last iteration may overshoot a budget). The progress
    bar's total, so its ETA counts to whichever budget ends first."""
    end = float(max_env_steps)
    if max_minutes and wall_time_s > 0.0:
        rate = env_steps / wall_time_s
        end = min(end, env_steps + rate * max(0.0, 60.0 * max_minutes - wall_time_s))
    return int(max(env_steps, end))


class _Tally:
    """What an iteration's steps report for the log: unstable resets, and the ended
    episodes' returns, lengths (into the running windows), reward terms and outcomes."""

    def __init__(self, reward_terms: list[str], returns: deque, lengths: deque) -> None:
        self.reward_terms, self.returns, self.lengths = reward_terms, returns, lengths
        self.terms: dict[str, list[float]] = {}
        self.outcomes: dict[str, list[float]] = {}
        self.unstable = 0

    def add(self, step: StepResult) -> None:
        self.unstable += int(step.info.get("unstable_resets", 0))
        episode = step.info.get("episode")
        if not episode:
            return
        self.returns.extend(np.asarray(episode["return"]).tolist())
        self.lengths.extend(np.asarray(episode["length"]).tolist())
        for name in self.reward_terms:
            self.terms.setdefault(name, []).extend(episode[f"reward/{name}"].tolist())
        for name, values in episode.items():
            if name not in ("return", "length") and "/" not in name:
                self.outcomes.setdefault(name, []).extend(np.ravel(values).tolist())


class HostToDevice:
    """The simulations' numpy arrays as tensors on the learner's device.

    On the CPU the tensors share the arrays' memory (no copy). On a GPU a step's arrays
    are packed into one pinned host buffer and sent in one asynchronous transfer, then
    split there: one copy per step instead of one per array, and no pageable staging."""

    def __init__(self, device: torch.device):
        self.device = device
        self._pinned: torch.Tensor | None = None

    def __call__(self, *arrays: np.ndarray) -> list[torch.Tensor]:
        if self.device.type == "cpu":
            return [torch.from_numpy(np.asarray(a, dtype=np.float32)) for a in arrays]
        flat = [torch.from_numpy(np.asarray(a, dtype=np.float32)).reshape(-1) for a in arrays]
        total = sum(f.numel() for f in flat)
        if self._pinned is None or self._pinned.numel() < total:
            self._pinned = torch.empty(total, dtype=torch.float32).pin_memory()
        torch.cat(flat, out=self._pinned[:total])
        moved = self._pinned[:total].to(self.device, non_blocking=True)
        out, start = [], 0
        for a, f in zip(arrays, flat, strict=True):
            out.append(moved[start : start + f.numel()].view(np.shape(a)))
            start += f.numel()
        return out


def _physics_time(env) -> float | None:
    """The environment's running total of time inside its engine's step calls, if it keeps
    one (simreal's tasks do; a Gymnasium environment does not)."""
    return getattr(env, "physics_time_s", None)


def _collect_split(
    collect_s: float,
    env_s: float,
    physics_start: float | None,
    env,
    overlapped: tuple[float, float] | None = None,
) -> dict[str, float | None]:
    """An iteration's collection time split three ways: physics (the engine's step calls),
    the task layer (the rest of the environment's step: actions to controls, observations,
    rewards, resets) and the policy (inference, device transfers, rollout storage).
    Without an engine clock the first two are unknown (None) and `time_task_s` is blank.
    `overlapped`: the main thread's (task, policy) time of a rollout whose physics ran on
    a worker thread beside them (`train.env_groups`); then the three overlap and their
    sum exceeds the collection time by what the overlap saved."""
    physics_end = _physics_time(env)
    physics = None if physics_start is None else physics_end - physics_start
    if overlapped is not None:
        return {
            "time_physics_s": None if physics is None else round(physics, 4),
            "time_task_s": round(overlapped[0], 4),
            "time_policy_s": round(overlapped[1], 4),
        }
    return {
        "time_physics_s": None if physics is None else round(physics, 4),
        "time_task_s": None if physics is None else round(env_s - physics, 4),
        "time_policy_s": round(collect_s - env_s, 4),
    }
