"""How results are handed back and shown: the JSON a command prints (`emit`), and the
tables of README.md and docs/results.md, generated from the committed eval JSONs under
results/<task>/ (`simreal report`, `python -m simreal.reports`).

The numbers in those tables are typed by nobody: each table sits between marker comments
(`<!-- report:NAME -->` ... `<!-- /report:NAME -->`) and `simreal report` rewrites it from
the JSONs, so a re-evaluated policy changes its row and `simreal report --check` (and
tests/cli/test_reports.py) fails while the committed text is stale. Which file and which
fields make a row is data (`HEADLINES`, `DETAILS`); how a condition reads is one function
per JSON field (`CONDITIONS`), shared by every task.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

CELL_LIMIT = 250
"""Characters a headline cell may take: the README table stays a table, not a page."""


def emit(report: dict, path: Path | str | None = None) -> None:
    """Print `report` as JSON, and write it to `path` too when given."""
    text = json.dumps(report, indent=2)
    if path:
        Path(path).write_text(text + "\n")
    print(text)


# ---------------------------------------------------------------------------- conditions


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:g} ms"


def _policy(value: str, data: dict) -> str:
    if value.startswith("baseline:"):
        return value.split(":", 1)[1].replace("_", " ")
    return "ONNX" if value.endswith(".onnx") else "checkpoint"


def _engine(value: str, data: dict) -> str:
    """The engine, with the integrator and physics step where the JSON states them."""
    if "integrator" in data and "physics_dt" in data:
        return f"{value} {data['integrator']} {_ms(data['physics_dt'])}"
    return value


def _randomized(value: bool, data: dict) -> str:
    return "randomized" if value else "nominal model, no noise"


def _randomization(value: dict, data: dict) -> str:
    """A quadcopter's randomization block, in the words that matter for the number."""
    mass = value["mass_scale"]
    lag = value["motor_lag_s"]
    latency = value["latency_physics_steps"][1] * data["physics_dt"]
    return (
        f"obs noise {value['obs_noise_std']:g}, mass ±{(mass[1] - 1) * 100:.0f} %, "
        f"motor lag ≤{_ms(lag[1])}, latency ≤{latency * 1000:.0f} ms, wind"
    )


def _terrain(value: str | dict, data: dict) -> str:
    if isinstance(value, str):
        return f"{value} ground"
    return (
        f"{value['kind']} ground (slopes ≤{value['slope_max_deg']:g}°, "
        f"steps ≤{value['step_max_m'] * 100:g} cm)"
    )


def _reference(value: dict, data: dict) -> str:
    return {"random": "random curves", "figure8": "figure-eight"}.get(value["kind"], value["kind"])


def _range(value: float | list, unit: str = "") -> str:
    if isinstance(value, list):
        return f"{value[0]:g}-{value[1]:g}{unit}"
    return f"{value:g}{unit}"


CONDITIONS: dict[str, Callable[[object, dict], str]] = {
    "policy": _policy,
    "engine": _engine,
    "seed": lambda v, d: f"eval seed {v}",
    "episodes": lambda v, d: f"{v} episode" + ("" if v == 1 else "s"),
    "foot_friction": lambda v, d: f"friction {v}",
    "self_collision": lambda v, d: "self-collision " + ("on" if v else "off"),
    "motor_envelope": lambda v, d: "motor envelope " + ("on" if v else "off"),
    "terrain": _terrain,
    "push_frame": lambda v, d: f"{v}-frame pushes",
    "push_test": lambda v, d: (
        "no pushes" if v is None else f"pushes to {v['max_m_s']:g} m/s at {v['at_s']:g} s"
    ),
    "randomized": _randomized,
    "randomization": _randomization,
    "reference": _reference,
    "num_drones": lambda v, d: f"{v} drones",
    "eval_density": lambda v, d: f"density {v * 100:.0f} %",
    "goal_assignment": lambda v, d: {"random": "random goals", "lanes": "goals kept in lanes"}.get(
        v, f"{v} goals"
    ),
    "road_set": lambda v, d: v.replace("_", "-") + " roads",
    "lane_state_source": lambda v, d: {
        "perception": "lane from LiDAR perception",
        "ground_truth": "ground-truth lane",
    }.get(v, f"lane from {v}"),
    "lane_estimate_delay_s": lambda v, d: f"{_ms(v)} late",
    "lidar_noise_m": lambda v, d: f"LiDAR noise {v:g} m",
    "road_friction": lambda v, d: f"road friction {_range(v)}",
}
"""How each condition field of an eval JSON reads in a table: one function of the value
(and the whole JSON, for fields that need a neighbour), the same for every task."""


def conditions_text(data: dict, keys: tuple[str, ...], source: str) -> str:
    """The named condition fields of one eval JSON, in a few words each."""
    words = []
    for key in keys:
        if key not in CONDITIONS:
            raise KeyError(f"{source}: no wording for the condition field {key!r} (CONDITIONS)")
        if key not in data:
            raise KeyError(f"{source}: the eval JSON has no condition field {key!r}")
        words.append(CONDITIONS[key](data[key], data))
    return ", ".join(words)


# ------------------------------------------------------------------------------ the data


@dataclasses.dataclass(frozen=True)
class Headline:
    """One task's row of the README table: the number, its conditions, a link."""

    task: str
    does: str
    """What the task is, in a few words."""
    doc: str
    """The task's reference page, relative to the repository root."""
    json: str
    """The eval JSON of the headline, under results/<task>/."""
    number: str
    """`str.format` template over the JSON's fields: the headline number (bold) and
    what it counts, e.g. `held **{peak_pull_force_backward_n:.1f} N** backward`."""
    conditions: tuple[str, ...]
    """Condition fields of the JSON named in the cell (`CONDITIONS` words them)."""
    pool: tuple[str, ...] = ()
    """More eval JSONs under the same conditions but another seed: numeric fields are then
    the episode-weighted mean over all of them (a pooled rate), seeds and episodes are
    listed and summed."""
    note: str = ""
    """A condition the JSON does not record (written here, shown after the others)."""


@dataclasses.dataclass(frozen=True)
class Column:
    header: str
    cell: str
    """`str.format` template over the row's JSON fields."""


@dataclasses.dataclass(frozen=True)
class Detail:
    """One table of docs/results.md: every eval JSON of a task matching `files`, a row
    each, with its conditions and the columns."""

    task: str
    title: str
    files: tuple[str, ...]
    """Glob patterns under results/<task>/; rows in file-name order."""
    conditions: tuple[str, ...]
    columns: tuple[Column, ...]


G1_CONDITIONS = ("engine", "foot_friction", "self_collision", "seed", "episodes")

HEADLINES: tuple[Headline, ...] = (
    Headline(
        task="quad-hover",
        does="Crazyflie rises to and holds (0, 0, 1) m with per-motor thrusts",
        doc="docs/quadcopters.md",
        json="eval_onnx.json",
        number="return **{return_mean:.2f}** of 480 (threshold 474)",
        conditions=("randomized", "engine", "seed", "episodes"),
    ),
    Headline(
        task="quad-track",
        does="Crazyflie follows a reference curve",
        doc="docs/quadcopters.md",
        json="eval_randomized_random.json",
        number="position RMSE **{position_rmse_m:.3f} m**",
        conditions=("reference", "randomization", "engine", "seed", "episodes"),
    ),
    Headline(
        task="quad-swarm",
        does="up to 32 Crazyflies cross a room of columns, one shared attention policy",
        doc="docs/quad-swarm.md",
        json="eval_seed3_random_32drones_density80.json",
        pool=(
            "eval_seed4_random_32drones_density80.json",
            "eval_seed5_random_32drones_density80.json",
        ),
        number="swarm success **{success:.1%}**",
        conditions=("num_drones", "eval_density", "goal_assignment", "engine", "seed", "episodes"),
    ),
    Headline(
        task="lane-keep",
        does="a car keeps its lane from a perceived lane, LiDAR and captions",
        doc="docs/lane-keep.md",
        json="eval.json",
        number="lateral RMSE **{lateral_rmse_pooled_m:.3f} m**, {collision_rate:.0%} collisions",
        conditions=(
            "lane_state_source",
            "lidar_noise_m",
            "road_set",
            "engine",
            "seed",
            "episodes",
        ),
    ),
    Headline(
        task="g1-force",
        does="the G1 stands while forces push its torso and hands",
        doc="docs/g1.md",
        json="eval_sustained200_mu0.7.json",
        number=(
            "survives **{max_sustained_push_backward_n:.0f} N** back / "
            "{max_sustained_push_forward_n:.0f} N fwd torso push "
            "(in place {max_sustained_push_backward_in_place_n:.0f} / "
            "{max_sustained_push_forward_in_place_n:.0f} N)"
        ),
        conditions=G1_CONDITIONS,
    ),
    Headline(
        task="g1-pull",
        does="the G1 tows a cart on rails, walking backward or forward",
        doc="docs/g1-pull.md",
        json="eval_mu0.7.json",
        number=(
            "holds **{peak_pull_force_backward_n:.1f} N** back / "
            "{peak_pull_force_forward_n:.1f} N fwd, {fall_rate:.0%} falls"
        ),
        conditions=G1_CONDITIONS,
    ),
    Headline(
        task="g1-walk",
        does="the G1 tracks a commanded planar velocity on rough ground",
        doc="docs/g1-walk.md",
        json="eval_rough_mu0.7.json",
        number=(
            "velocity error **{lin_vel_tracking_rmse_m_s:.3f} m/s**, "
            "yaw {yaw_rate_tracking_rmse_rad_s:.3f} rad/s, {fall_rate:.0%} falls"
        ),
        conditions=("terrain", "engine", "foot_friction", "self_collision", "seed", "episodes"),
    ),
    Headline(
        task="dex-track",
        does="an Allegro-like hand makes an object follow hand-object references",
        doc="docs/dex-track.md",
        json="eval_onnx.json",
        number="success **{success_rate:.1%}** on held-out references",
        conditions=("engine", "episodes"),
        note="object pose from the simulator",
    ),
)
"""The README's task table, one row per task, in this order."""

DETAILS: tuple[Detail, ...] = (
    Detail(
        task="quad-hover",
        title="quad-hover: HoverAviary's task",
        files=("eval_*.json",),
        conditions=("policy", "engine", "episodes"),
        columns=(
            Column("return", "{return_mean:.2f}"),
            Column("final position error (m)", "{final_position_error_m:.3f}"),
            Column("mean position error (m)", "{mean_position_error_m:.3f}"),
        ),
    ),
    Detail(
        task="quad-track",
        title="quad-track: tracking error",
        files=("eval_*.json",),
        conditions=("reference", "randomized", "engine", "seed", "episodes"),
        columns=(
            Column("position RMSE (m)", "{position_rmse_m:.4f}"),
            Column("worst episode (m)", "{worst_position_rmse_m:.4f}"),
            Column("max error (m)", "{max_error_m:.4f}"),
            Column("completed", "{completed:.0%}"),
        ),
    ),
    Detail(
        task="quad-swarm",
        title="quad-swarm: swarm success with 95 % Wilson intervals",
        files=("eval_*.json",),
        conditions=("policy", "num_drones", "eval_density", "goal_assignment", "seed"),
        columns=(
            Column("success", "{success:.1%} ({success_ci95[0]:.1%}-{success_ci95[1]:.1%})"),
            Column("collision", "{collision:.1%}"),
            Column("crash", "{crash:.1%}"),
            Column("arrived (drones)", "{arrived_fraction:.1%}"),
            Column("time to goal (s)", "{time_to_goal_s:.1f}"),
        ),
    ),
    Detail(
        task="lane-keep",
        title="lane-keep: the policy and the classical baselines on the same roads",
        files=("eval*.json",),
        conditions=("policy", "lane_state_source", "road_set", "seed", "episodes"),
        columns=(
            Column("lateral RMSE pooled (m)", "{lateral_rmse_pooled_m:.3f}"),
            Column("per-episode mean (m)", "{lateral_rmse_m:.3f}"),
            Column("p95 (m)", "{lateral_error_p95_m:.3f}"),
            Column("collisions", "{collision_rate:.0%}"),
            Column("off road", "{off_road_rate:.0%}"),
        ),
    ),
    Detail(
        task="g1-force",
        title="g1-force: sustained torso pushes (2 s ramp, 4 s hold)",
        files=("eval_sustained*.json", "sim2sim_*.json"),
        conditions=("engine", "foot_friction", "self_collision", "seed", "episodes"),
        columns=(
            Column(
                "survived back / fwd (N)",
                "{max_sustained_push_backward_n:.0f} / {max_sustained_push_forward_n:.0f}",
            ),
            Column(
                "in place back / fwd (N)",
                "{max_sustained_push_backward_in_place_n:.0f} / "
                "{max_sustained_push_forward_in_place_n:.0f}",
            ),
            Column("pelvis drift (m)", "{hold_drift_m:.2f}"),
            Column("falls", "{fall_rate:.1%}"),
            Column("self-penetration (m)", "{self_penetration_m:.4f}"),
        ),
    ),
    Detail(
        task="g1-force",
        title="g1-force: backward shoves of 1 s",
        files=("eval_push*.json",),
        conditions=("engine", "foot_friction", "self_collision", "seed", "episodes"),
        columns=(
            Column("largest shove resisted (N)", "{max_push_resisted_n:.0f}"),
            Column("falls", "{fall_rate:.1%}"),
        ),
    ),
    Detail(
        task="g1-pull",
        title="g1-pull: force held for 2 s while the cart moves 0.2 m (carts of 15-300 N)",
        files=("eval_*.json", "sim2sim_*.json"),
        conditions=(
            "engine",
            "foot_friction",
            "self_collision",
            "motor_envelope",
            "seed",
            "episodes",
        ),
        columns=(
            Column("backward (N)", "{peak_pull_force_backward_n:.1f}"),
            Column("forward (N)", "{peak_pull_force_forward_n:.1f}"),
            Column("falls", "{fall_rate:.1%}"),
            Column("self-penetration (m)", "{self_penetration_m:.4f}"),
        ),
    ),
    Detail(
        task="g1-walk",
        title="g1-walk: velocity tracking over 20 s episodes",
        files=("eval_*.json", "sim2sim_*.json"),
        conditions=("terrain", "push_test", "engine", "foot_friction", "seed", "episodes"),
        columns=(
            Column("linear RMSE (m/s)", "{lin_vel_tracking_rmse_m_s:.3f}"),
            Column("yaw RMSE (rad/s)", "{yaw_rate_tracking_rmse_rad_s:.3f}"),
            Column("falls", "{fall_rate:.0%}"),
            Column("self-penetration (m)", "{self_penetration_m:.4f}"),
        ),
    ),
    Detail(
        task="dex-track",
        title="dex-track: the generalist, the coupled baseline and the replay baselines",
        files=("eval_*.json",),
        conditions=("policy", "episodes"),
        columns=(
            Column("success", "{success_rate:.1%}"),
            Column("held-out types", "{success_rate_heldout_types:.1%}"),
            Column("object position error (m)", "{object_pos_err_mean_m:.4f}"),
            Column("object rotation error (deg)", "{object_rot_err_mean_deg:.2f}"),
        ),
    ),
)
"""docs/results.md: the longer tables, one or more per task, in this order."""


# ----------------------------------------------------------------------------- rendering


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: no such eval JSON (named in simreal/reports.py)"
        ) from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from err
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an eval JSON is an object, got {type(data).__name__}")
    return data


def _format(template: str, data: dict, source: str) -> str:
    """`template` over the JSON's fields; a percentage gets the space the docs write (95.3 %)."""
    try:
        text = template.format_map(data)
    except (KeyError, IndexError) as err:
        raise KeyError(f"{source}: the eval JSON has no field {err} ({template!r})") from None
    return re.sub(r"(\d)%", r"\1 %", text)


def _pooled(files: list[tuple[Path, dict]]) -> dict:
    """The episode-weighted mean of every numeric field over eval JSONs of one condition."""
    if len(files) == 1:
        return files[0][1]
    weights = [data["episodes"] for _, data in files]
    out = dict(files[0][1])
    for key in files[0][1]:
        values = [data.get(key) for _, data in files]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if numeric and len(set(values)) > 1:
            out[key] = sum(w * v for w, v in zip(weights, values, strict=True)) / sum(weights)
    out["seed"] = ", ".join(str(data["seed"]) for _, data in files)
    out["episodes"] = sum(weights)
    return out


def headline_cell(row: Headline, root: Path) -> str:
    """The number, its conditions in a few words and the link to the task's results."""
    folder = root / "results" / row.task
    files = [(folder / name, _load(folder / name)) for name in (row.json, *row.pool)]
    data = _pooled(files)
    source = ", ".join(str(path.relative_to(root)) for path, _ in files)
    number = _format(row.number, data, source)
    conditions = conditions_text(data, row.conditions, source)
    if row.pool:
        conditions = conditions.replace("seed ", "seeds ", 1) + " pooled"
    if row.note:
        conditions += ", " + row.note
    return f"{number}; {conditions} ([results](results/{row.task}/README.md))"


def tasks_table(root: Path) -> str:
    """The README's task table."""
    lines = ["| task | what it does | headline number, its conditions |", "|---|---|---|"]
    for row in HEADLINES:
        cell = headline_cell(row, root)
        if len(cell) > CELL_LIMIT:
            raise ValueError(
                f"simreal/reports.py: {row.task}'s headline cell is {len(cell)} characters, "
                f"over {CELL_LIMIT}: {cell}"
            )
        lines.append(f"| [`{row.task}`]({row.doc}) | {row.does} | {cell} |")
    return "\n".join(lines)


def _detail_rows(detail: Detail, root: Path) -> list[Path]:
    folder = root / "results" / detail.task
    found = sorted({path for pattern in detail.files for path in folder.glob(pattern)})
    if not found:
        raise FileNotFoundError(f"{folder}: no eval JSON matches {list(detail.files)}")
    return found


def detail_table(detail: Detail, root: Path) -> str:
    """One table of docs/results.md: a row per matching eval JSON."""
    headers = ["file", "conditions", *(column.header for column in detail.columns)]
    lines = [
        f"**{detail.title}**",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
    ]
    for path in _detail_rows(detail, root):
        data = _load(path)
        source = str(path.relative_to(root))
        link = f"[{path.name}](../{path.relative_to(root).as_posix()})"
        cells = [link, conditions_text(data, detail.conditions, source)]
        cells += [_format(column.cell, data, source) for column in detail.columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def results_tables(root: Path) -> dict[str, str]:
    """docs/results.md's tables, one block per task (its tables joined)."""
    blocks: dict[str, list[str]] = {}
    for detail in DETAILS:
        blocks.setdefault(f"results/{detail.task}", []).append(detail_table(detail, root))
    return {name: "\n\n".join(tables) for name, tables in blocks.items()}


def generate(root: Path) -> dict[str, dict[str, str]]:
    """Every generated table: file (relative to `root`) -> marker name -> table text."""
    return {"README.md": {"tasks": tasks_table(root)}, "docs/results.md": results_tables(root)}


# -------------------------------------------------------------------------- the markers

_BLOCK = re.compile(
    r"(?P<open><!-- report:(?P<name>[\w./-]+) -->\n)(?P<body>.*?)(?P<close><!-- /report:(?P=name) -->)",
    re.S,
)


def rewrite(text: str, tables: dict[str, str], source: str) -> str:
    """`text` with each marked block replaced by its table. A table without its markers in
    the file, or markers naming no table, is an error naming the file and the table."""
    seen = set()

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in tables:
            raise KeyError(f"{source}: marker report:{name} names no generated table")
        seen.add(name)
        return match["open"] + tables[name] + "\n" + match["close"]

    out = _BLOCK.sub(replace, text)
    missing = [name for name in tables if name not in seen]
    if missing:
        raise KeyError(
            f"{source}: no <!-- report:NAME --> ... <!-- /report:NAME --> markers for "
            f"{', '.join(missing)}"
        )
    return out


def report(root: Path, check: bool = False) -> list[str]:
    """Rewrite the generated tables in place, or with `check` only compare: returns one
    message per file and table whose committed text differs from what the JSONs give."""
    root = Path(root)
    if not (root / "results").is_dir():
        raise FileNotFoundError(f"{root}: no results/ folder here (run from the repository root)")
    problems = []
    for name, tables in generate(root).items():
        path = root / name
        text = path.read_text()
        new = rewrite(text, tables, name)
        if new == text:
            continue
        old_blocks = {m["name"]: m["body"] for m in _BLOCK.finditer(text)}
        for table, body in tables.items():
            if old_blocks.get(table) != body + "\n":
                diff = difflib.unified_diff(
                    old_blocks.get(table, "").splitlines(),
                    body.splitlines(),
                    f"{name} (committed)",
                    f"{name} (generated)",
                    lineterm="",
                    n=0,
                )
                problems.append(f"{name}: table {table!r} differs\n" + "\n".join(diff))
        if not check:
            path.write_text(new)
    return problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check",
        action="store_true",
        help="only compare: exit 1 naming each file and table that differs from the JSONs",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="repository root holding results/, README.md and docs/ (default: this folder)",
    )


def run(args: argparse.Namespace) -> int:
    """`simreal report [--check]`: what it changed, or (with --check) what differs."""
    problems = report(args.root or Path.cwd(), check=args.check)
    for problem in problems:
        if args.check:
            print(problem, file=sys.stderr)
        else:  # the first line names the file and the table
            print(problem.splitlines()[0].replace(" differs", " rewritten"))
    if args.check:
        if problems:
            print("run `simreal report` to regenerate them", file=sys.stderr)
        return 1 if problems else 0
    if not problems:
        print("tables up to date")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simreal.reports", description=__doc__.split("\n\n")[0]
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
