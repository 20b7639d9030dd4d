"""How many episodes `simreal eval` runs per task, and how many its headline metric needs.

An evaluation's episodes are its simulations, side by side. Several headline metrics are
read off a fixed protocol spread across them (a ladder of loads or pushes, one per
simulation; a set of held-out roads or references, one per simulation), so fewer
episodes do not give a noisier number but another one: g1-pull with 2 episodes tows two
300 N carts and nothing lighter. `simreal eval` runs `default` episodes when none are
asked for, and warns, saying how many are needed, when asked for fewer than `needed`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EpisodeBudget:
    default: int
    """Episodes run when none are asked for: the headline metric to its stated precision."""
    needed: int
    """Fewer than this and the headline metric is not the stated one."""
    why: str
    """What `needed` episodes cover, for the warning."""


DETERMINISTIC = "the evaluation start and the physics are fixed: every episode is the same"

G1_FORCE_STEP_N = 10.0
"""max_push_resisted_n to within this (N): the push ladder's rung spacing."""
G1_PULL_STEP_N = 15.0
"""peak_pull_force_{backward,forward}_n to within this (N): each direction's cart ladder."""
SWARM_EPISODES = 64
"""Swarm success to within about +-11 % (the 95 % confidence interval at 75 %)."""
RANDOM_QUAD_EPISODES = 64
"""quad-hover and quad-track under drawn airframes, wind or references: a mean over
this many draws (the eval JSON's return_std says how much they spread)."""


def quad_budget(cfg: Any) -> EpisodeBudget:
    drawn = getattr(cfg, "eval_randomize", False) or getattr(cfg, "eval_kind", "") == "random"
    if not drawn:
        return EpisodeBudget(1, 1, DETERMINISTIC)
    why = (
        f"randomized airframes, wind or references: a mean over {RANDOM_QUAD_EPISODES} "
        "draws of them"
    )
    return EpisodeBudget(RANDOM_QUAD_EPISODES, RANDOM_QUAD_EPISODES, why)


def quad_swarm_budget(cfg: Any) -> EpisodeBudget:
    why = (
        f"random column layouts and goals: the swarm success rate's 95 % confidence "
        f"interval to about +-11 % needs {SWARM_EPISODES} episodes"
    )
    return EpisodeBudget(SWARM_EPISODES, SWARM_EPISODES, why)


def g1_force_budget(cfg: Any) -> EpisodeBudget:
    n = math.ceil(cfg.eval_push.max_n / G1_FORCE_STEP_N)
    if cfg.eval_push.mode == "sustained":
        why = (
            f"sustained pushes alternate backward and forward, the k-th of n at "
            f"{cfg.eval_push.max_n:g} N * (k + 1) / n: each direction to "
            f"{G1_FORCE_STEP_N:g} N needs {n} rungs"
        )
        return EpisodeBudget(2 * n, 2 * n, why)
    why = (
        f"simulation i of N is pushed with {cfg.eval_push.max_n:g} N * (i + 1) / N: "
        f"max_push_resisted_n to {G1_FORCE_STEP_N:g} N needs {n} rungs"
    )
    return EpisodeBudget(n, n, why)


def g1_pull_budget(cfg: Any) -> EpisodeBudget:
    rungs = math.ceil(cfg.eval_pull.max_resistance_n / G1_PULL_STEP_N)
    why = (
        f"each direction tows carts of {cfg.eval_pull.max_resistance_n:g} N * (k + 1) / n: "
        f"the peak pull forces to {G1_PULL_STEP_N:g} N need {rungs} carts per direction"
    )
    return EpisodeBudget(2 * rungs, 2 * rungs, why)


G1_WALK_EPISODES = 100
"""g1-walk's fall rate: 0 falls in 100 episodes bounds it below 3.7 % (95 % Wilson)."""
G1_WALK_PUSH_STEP_M_S = 0.1
"""max_push_recovered_m_s to within this (m/s): the push test's rung spacing."""


def g1_walk_budget(cfg: Any) -> EpisodeBudget:
    rungs = 1 + math.ceil(cfg.eval_walk.max_push_m_s / G1_WALK_PUSH_STEP_M_S)
    needed = G1_WALK_EPISODES // 2
    why = f"fall_rate over random commands on rough ground: {needed} episodes at least"
    if cfg.eval_walk.push_test and rungs > needed:
        needed = rungs
        why = (
            f"the push test pushes simulation i of N by {cfg.eval_walk.max_push_m_s:g} m/s * "
            f"i / (N - 1): max_push_recovered_m_s to {G1_WALK_PUSH_STEP_M_S:g} m/s needs "
            f"{rungs} rungs"
        )
    return EpisodeBudget(max(G1_WALK_EPISODES, needed), needed, why)


def dex_track_budget(cfg: Any) -> EpisodeBudget:
    """Every held-out reference once (counted before infeasible ones are dropped, so
    possibly a few more simulations than references)."""
    directory = Path(cfg.references) if cfg.references else None
    if directory is not None and directory.is_dir():
        count = len(list((directory / "heldout").glob("*.npz")))
    else:
        count = cfg.heldout_references
    why = f"success_rate is over the held-out reference set, {count} references"
    return EpisodeBudget(count, count, why)


def lane_keep_budget(cfg: Any) -> EpisodeBudget:
    why = f"lateral_rmse_m is over the held-out road set, {cfg.eval_roads} roads"
    return EpisodeBudget(cfg.eval_roads, cfg.eval_roads, why)


REPLAN_EPISODES = 32
"""quad-replan: held-out waypoint sets per evaluation (one plan each)."""


def quad_replan_budget(cfg: Any) -> EpisodeBudget:
    why = f"completion_rate over {REPLAN_EPISODES} held-out waypoint sets (one plan each)"
    return EpisodeBudget(REPLAN_EPISODES, REPLAN_EPISODES, why)


BUDGETS: dict[str, Callable[[Any], EpisodeBudget]] = {
    "quad-hover": quad_budget,
    "quad-track": quad_budget,
    "quad-replan": quad_replan_budget,
    "quad-swarm": quad_swarm_budget,
    "g1-force": g1_force_budget,
    "g1-pull": g1_pull_budget,
    "g1-walk": g1_walk_budget,
    "dex-track": dex_track_budget,
    "lane-keep": lane_keep_budget,
}

DEFAULT_EPISODES = 10
"""A task without a budget (and a Gymnasium env)."""


def episode_budget(task: str, cfg: Any) -> EpisodeBudget:
    """The task's episode budget under its config `cfg`."""
    budget = BUDGETS.get(task)
    if budget is None:
        return EpisodeBudget(DEFAULT_EPISODES, 0, "")
    return budget(cfg)


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % confidence interval (z = 1.96) of a success rate from `successes` of
    `trials` independent episodes, by Wilson's score: unlike rate +- z * standard error it
    stays inside [0, 1] and does not shrink to nothing at 0 % or 100 %."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(
            f"wilson_interval: need 0 <= successes <= trials > 0, got {successes}, {trials}"
        )
    p = successes / trials
    denominator = 1.0 + z**2 / trials
    centre = (p + z**2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z**2 / (4 * trials**2)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def shortfall_warning(task: str, asked: int, budget: EpisodeBudget) -> str | None:
    """The warning for `asked` episodes, or None when they are enough."""
    if asked >= budget.needed:
        return None
    return (
        f"{task}: {asked} episodes are fewer than the {budget.needed} its headline metric "
        f"needs ({budget.why}); the result is not comparable with the stated one"
    )
