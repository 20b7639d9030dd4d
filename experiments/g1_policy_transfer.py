"""Policy transfer to a perturbed virtual G1, with and without calibration.

A hidden whole-body perturbation (`random_perturbation`, all 29 joints, one seed) stands
for the real robot. Two steps:

`calibrate`: every joint group is excited on the virtual robot carrying the hidden
perturbation, and `joint-offsets`, `actuators` (and once `imu`) fit one overlay from
those logs alone, as `simreal calibrate` does on a robot. Each fit places the rest of the
body at the offsets already in the overlay, so the groups are fitted in `--passes`
rounds over the same logs (the waist and arms load each other). Writes
FOLDER/truth.yaml (the hidden robot, for evaluation only), FOLDER/overlay.yaml (what the
routines found) and FOLDER/calibration.json (worst errors after each pass).

`evaluate`: the nominal policy (trained without an overlay) and the calibrated policy
(trained with `--calibration FOLDER/overlay.yaml`, same budget) are each evaluated
twice with `simreal eval`: on the model they were trained on (their simulated peak) and
on the perturbed robot (`--calibration FOLDER/truth.yaml`). Printed and written: both
peaks per direction and how much of its simulated peak each policy keeps.

    python experiments/g1_policy_transfer.py calibrate FOLDER [--seed 7] [--passes 3] [--scale 1]
    python experiments/g1_policy_transfer.py evaluate FOLDER --nominal RUN --calibrated RUN
        [--episodes 32] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import yaml

from simreal.calibration import routines
from simreal.calibration.excite import GROUPS, ExcitationConfig
from simreal.calibration.perturbation import random_perturbation
from simreal.reports import emit
from simreal.robots.g1 import JOINT_NAMES
from simreal.robots.g1.overlay import load_overlay, parse_overlay

PEAKS = ("peak_pull_force_backward_n", "peak_pull_force_forward_n")
FIELDS = ("kp_scale", "kd_scale", "armature", "friction_coulomb", "friction_viscous")


def calibrate(folder: Path, seed: int, passes: int, scale: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    truth = random_perturbation(seed, JOINT_NAMES, scale)
    (folder / "truth.yaml").write_text(yaml.safe_dump(truth, sort_keys=False))
    hidden = parse_overlay(truth)
    out = folder / "overlay.yaml"
    out.unlink(missing_ok=True)
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        logs = {}
        for group in GROUPS:
            logs[group] = Path(tmp) / group
            routines.excite(ExcitationConfig(group=group), logs[group], hidden)
        routines.imu(logs["left_leg"], out, None)
        for k in range(passes):
            for group, log in logs.items():
                routines.joint_offsets(log, group, out, None)
                routines.actuators(log, group, out, None)
            errors.append({"pass": k + 1, **worst_errors(truth, out)})
            print(json.dumps(errors[-1]), flush=True)
    report = {
        "command": "python experiments/g1_policy_transfer.py " + " ".join(sys.argv[1:]),
        "seed": seed,
        "scale": scale,
        "passes": errors,
    }
    (folder / "calibration.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {folder / 'truth.yaml'} (hidden) and {out} (fitted)")


def worst_errors(truth: dict, out: Path) -> dict:
    """Largest error per quantity over the joints the overlay at `out` wrote it for
    (offsets in rad, the rest relative), the offsets also per group, and what the
    routines left unwritten as unidentifiable."""
    written = yaml.safe_load(out.read_text())["joints"]
    fit = load_overlay(out)
    report = {"latency_error_ms": abs(fit.latency_ms - truth["latency_ms"]), "unwritten": []}

    def error(name: str, key: str) -> float | None:
        if key not in written.get(name, {}):
            report["unwritten"].append(f"{name}.{key}")
            return None
        got, want = getattr(fit.joint(name), key), truth["joints"][name][key]
        return abs(got - want) if key == "encoder_offset" else abs(got / want - 1)

    errors = {(n, k): error(n, k) for n in truth["joints"] for k in ("encoder_offset", *FIELDS)}
    for key in ("encoder_offset", *FIELDS):
        report[f"max_{key}_error"] = max(
            e for (_, k), e in errors.items() if k == key and e is not None
        )
    for group, joints in GROUPS.items():
        found = [errors[n, "encoder_offset"] for n in joints]
        report[f"max_offset_error_{group}"] = max(e for e in found if e is not None)
    return report


def simreal_eval(run: str, episodes: int, calibration: Path | None) -> dict:
    """`simreal eval RUN --episodes N [--calibration FILE]`, in process; its JSON."""
    from simreal.cli import main as simreal

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "eval.json"
        args = ["eval", run, "--episodes", str(episodes), "--json", str(out)]
        if calibration is not None:
            args += ["--calibration", str(calibration)]
        print("$ simreal", " ".join(args), flush=True, file=sys.stderr)
        with contextlib.redirect_stdout(io.StringIO()):
            if simreal(args) != 0:
                raise SystemExit(f"simreal {' '.join(args)} failed")
        return json.loads(out.read_text())


def evaluate(folder: Path, nominal: str, calibrated: str, episodes: int) -> dict:
    truth = folder / "truth.yaml"
    report = {}
    for name, run in (("nominal", nominal), ("calibrated", calibrated)):
        sim = simreal_eval(run, episodes, None)
        robot = simreal_eval(run, episodes, truth)
        entry = {"run": run}
        for key in (*PEAKS, "fall_rate"):
            entry[f"sim_{key}"] = sim[key]
            entry[f"robot_{key}"] = robot[key]
        for key in PEAKS:
            entry[f"kept_{key}"] = robot[key] / sim[key] if sim[key] > 0 else None
            entry[f"lost_{key}"] = sim[key] - robot[key]
        report[name] = entry
    return report


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="step", required=True)
    c = sub.add_parser("calibrate")
    c.add_argument("folder", type=Path)
    c.add_argument("--seed", type=int, default=7)
    c.add_argument("--passes", type=int, default=3)
    c.add_argument(
        "--scale", type=float, default=1.0, help="widen the perturbation's ranges (x this)"
    )
    e = sub.add_parser("evaluate")
    e.add_argument("folder", type=Path)
    e.add_argument("--nominal", required=True, help="run (or ONNX) trained without an overlay")
    e.add_argument("--calibrated", required=True, help="run trained with FOLDER/overlay.yaml")
    e.add_argument("--episodes", type=int, default=32)
    e.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if args.step == "calibrate":
        calibrate(args.folder, args.seed, args.passes, args.scale)
        return
    report = {
        "command": "python experiments/g1_policy_transfer.py " + " ".join(sys.argv[1:]),
        **evaluate(args.folder, args.nominal, args.calibrated, args.episodes),
    }
    emit(report, args.json)


if __name__ == "__main__":
    main()
