"""The `simreal calibrate` routines: each reads a log (or runs one), fits, updates the
overlay, and returns its summary rows and a PNG report."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simreal.calibration.dynamics import (
    Estimate,
    fit_dynamics,
    fit_gains,
    resimulate,
    smoothed,
)
from simreal.calibration.excite import GROUPS, ExcitationConfig, excitation, run_hung
from simreal.calibration.imu import fit_imu
from simreal.calibration.logdata import CalibrationError, check_loop, load_hung_log
from simreal.calibration.overlay_file import update_overlay
from simreal.calibration.report import plot_joint_responses
from simreal.calibration.stance import (
    SIDES,
    STANCE,
    StanceConfig,
    fit_stance_offsets,
    run_standing,
    stance_excitation,
)
from simreal.robots.g1.overlay import JointOverlay, Overlay, load_overlay

JOINT_SERIES = ("joint_position", "joint_velocity", "joint_effort", "command")
UNIDENTIFIED_BY_EXCITATION = ("torque_limit_scale",)
"""Torques stay far below the limits during excitation, so their scale is not seen."""
GOALS: dict[str, tuple[float, bool, str]] = {
    "kp_scale": (0.15, True, "larger tracking errors: a faster chirp or steps"),
    "kd_scale": (0.15, True, "faster motion: a faster or larger chirp"),
    "armature": (0.15, True, "larger accelerations: a faster chirp, sharper steps"),
    "friction_coulomb": (0.30, True, "slower and faster sweeps (a wider velocity range)"),
    "friction_viscous": (0.30, True, "slower and faster sweeps (a wider velocity range)"),
    "latency_ms": (2.0, False, "sharper command changes (steps)"),
}
"""Per fitted parameter: the accuracy goal (relative, or absolute in the parameter's
unit), and the excitation that would pin it down better. A parameter fitted with a std
above its goal is reported as unidentifiable from the log and not written: the overlay
would claim an accuracy the log does not give. (Encoder offsets: `MAX_OFFSET_STD`.)"""


def beyond_goal(key: str, e: Estimate) -> str | None:
    """Why `e` is too uncertain to write (its std above the goal), or None."""
    goal, relative, better = GOALS[key]
    limit = goal * abs(e.value) if relative else goal
    if e.std <= limit and np.isfinite(e.std):
        return None
    where = f"{100 * goal:g} % of the value" if relative else f"{goal:g}"
    return f"fitted {e.value:.4g} +- {e.std:.2g}: std above the goal ({where}); needs {better}"


@dataclass
class Result:
    rows: list[tuple[str, str, float, float]] = field(default_factory=list)
    """(joint or sensor, parameter, value, std)."""
    notes: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    unidentifiable: list[str] = field(default_factory=list)
    """`joint.parameter` the log cannot pin down: reported, not fitted, not written."""


def excite(
    cfg: ExcitationConfig | StanceConfig,
    log_dir: Path,
    perturb: Overlay | None,
    dds_domain: int | None = None,
    rt_priority: int | None = None,
) -> Result:
    """Run the excitation on the in-process virtual robot (`perturb` its hidden truth), or,
    with `dds_domain`, on the robot behind rt/lowstate and rt/lowcmd on that DDS domain
    (the client's loop at SCHED_FIFO `rt_priority` if given)."""
    start = time.perf_counter()
    exc = stance_excitation(cfg) if isinstance(cfg, StanceConfig) else excitation(cfg)
    result = Result()
    if dds_domain is None:
        run = run_standing if exc.kind == STANCE else run_hung
        run(exc, perturb or Overlay(), log_dir)
    else:
        if perturb is not None:
            raise ValueError("excite over DDS: --perturb belongs to `simreal sim-robot g1`")
        from simreal.calibration.excite_dds import DdsExcitation, run_dds
        from simreal.calibration.logdata import MAX_DISTURBED

        stats = run_dds(exc, log_dir, DdsExcitation(dds_domain, rt_priority=rt_priority))
        result.notes.append(f"client loop: {stats.pop('scheduling')}")
        result.metrics = {k: float(v) for k, v in stats.items()}
        if stats["disturbed_fraction"] > MAX_DISTURBED:
            result.notes.append(
                f"WARNING: {stats['disturbed_ticks']} of {stats['steps']} ticks disturbed "
                f"(> {100 * MAX_DISTURBED:g} %): the fits will refuse this log"
            )
    if exc.kind == STANCE:
        result.notes.append(f"wrote {log_dir} ({exc.t[-1]:.1f} s standing in the default pose)")
        result.seconds = time.perf_counter() - start
        return result
    result.notes.append(f"wrote {log_dir} ({exc.t[-1]:.1f} s, group {cfg.group})")
    result.rows = [(name, "amplitude_rad", cfg.amplitude, 0.0) for name in exc.joints]
    result.seconds = time.perf_counter() - start
    return result


def _group_of(log_joints: tuple[str, ...] | None, group: str) -> tuple[str, ...]:
    if group not in GROUPS:
        raise ValueError(f"unknown joint group {group!r}; known: {', '.join(GROUPS)}")
    return GROUPS[group] if log_joints is None else log_joints


def _fit_joints(
    log_path: Path,
    joints: tuple[str, ...],
    routine: str,
    lowpass_hz: float | None,
    out: Path,
    result: Result,
    allow_disturbed: bool = False,
):
    """Gains and dynamics of `joints`; the encoder offsets the overlay at `out` already
    holds for other joints (groups calibrated before into the same file) place the rest
    of the body in the rigid-body model. A DDS log with too many disturbed ticks is
    refused (`check_loop`), or fitted with a warning in `result` (`allow_disturbed`)."""
    if lowpass_hz is not None and not lowpass_hz > 0:
        raise ValueError(f"lowpass_hz {lowpass_hz!r}: expected a frequency > 0 Hz or none")
    log = load_hung_log(log_path, JOINT_SERIES, routine)
    if log.excitation != "hung":
        raise CalibrationError(
            f"{log_path}: a {log.excitation!r} excitation log; `{routine}` fits the hung "
            f"robot's dynamics (the {STANCE} log is for `stance-offsets`)"
        )
    _check_loop(log, result, allow_disturbed)
    # The gain fit reads the same low-passed signals: with sensor noise its residual
    # barely tells a one-step robot from a continuous one (u, `fit_gains`), and a wrong
    # pick cost up to 14 % in kd; low-passed, the pick was right on every log tried.
    gains = fit_gains(smoothed(log, lowpass_hz), joints)
    known = known_offsets(out, joints)
    dyn = fit_dynamics(log, joints, gains, cutoff_hz=lowpass_hz, known_offsets=known)
    return log, gains, dyn


def known_offsets(out: Path, joints: tuple[str, ...]) -> dict[str, float]:
    """Encoder offsets in the overlay at `out` (if it exists) of joints outside `joints`."""
    if not Path(out).is_file():
        return {}
    overlay = load_overlay(out)
    return {
        name: joint.encoder_offset
        for name, joint in overlay.joints.items()
        if name not in joints and joint.encoder_offset != 0.0
    }


def _check_loop(log, result: Result, allow_disturbed: bool) -> None:
    warning = check_loop(log, allow_disturbed)
    if warning:
        print(warning, flush=True)
        result.notes.append(warning)


def _overlay_from(joint_fields: dict[str, dict[str, Estimate]], latency_ms: float) -> Overlay:
    joints = {
        n: JointOverlay(**{k: e.value for k, e in f.items()}) for n, f in joint_fields.items()
    }
    return Overlay(latency_ms=latency_ms, joints=joints)


def _compare(log, joints, calibrated: Overlay, report: Path | None, title: str) -> dict:
    idx = [log_index(n) for n in joints]
    nominal_q = resimulate(log, Overlay())[:, idx]
    calibrated_q = resimulate(log, calibrated)[:, idx]
    logged = log.q[:, idx]
    rmse_nom = float(np.sqrt(np.mean((nominal_q - logged) ** 2)))
    rmse_cal = float(np.sqrt(np.mean((calibrated_q - logged) ** 2)))
    if report:
        plot_joint_responses(report, log.t, joints, logged, nominal_q, calibrated_q, title)
    return {"resim_rmse_nominal_rad": rmse_nom, "resim_rmse_calibrated_rad": rmse_cal}


def log_index(name: str) -> int:
    from simreal.robots.g1 import JOINT_NAMES

    return JOINT_NAMES.index(name)


def _report_unidentifiable(result: Result, dyn) -> None:
    result.unidentifiable += list(dyn.unidentifiable)
    result.notes += [
        f"unidentifiable from this log (not written): {key} ({why})"
        for key, why in dyn.unidentifiable.items()
    ]


def joint_offsets(
    log_path: Path,
    group: str,
    out: Path,
    report: Path | None,
    lowpass_hz: float | None = None,
    allow_disturbed: bool = False,
) -> Result:
    """`lowpass_hz`: zero-phase low-pass on the logged joint signals before the dynamics
    fit (for a robot's noisy encoders; None for the noise-free virtual robot).
    `allow_disturbed`: fit a DDS log with too many disturbed ticks, with a warning."""
    start = time.perf_counter()
    joints = _group_of(None, group)
    result = Result()
    log, _gains, dyn = _fit_joints(
        log_path, joints, "joint-offsets", lowpass_hz, out, result, allow_disturbed
    )
    fields = {n: {"encoder_offset": e} for n, e in dyn.encoder_offset.items()}
    update_overlay(out, joints=fields)
    result.rows = [(n, "encoder_offset", e.value, e.std) for n, e in dyn.encoder_offset.items()]
    _report_unidentifiable(result, dyn)
    calibrated = _overlay_from(fields, 0.0)
    result.metrics = _compare(log, joints, calibrated, report, "joint offsets")
    result.seconds = time.perf_counter() - start
    return result


def actuators(
    log_path: Path,
    group: str,
    out: Path,
    report: Path | None,
    lowpass_hz: float | None = None,
    allow_disturbed: bool = False,
) -> Result:
    """The actuators' parameters of `group`, with `lowpass_hz` and `allow_disturbed` as in
    `joint_offsets`. A parameter whose std exceeds its goal (`GOALS`) is reported, not
    written."""
    start = time.perf_counter()
    joints = _group_of(None, group)
    result = Result()
    log, gains, dyn = _fit_joints(
        log_path, joints, "actuators", lowpass_hz, out, result, allow_disturbed
    )
    latency = Estimate(gains.latency_ticks * log.dt * 1e3, gains.latency_std_ticks * log.dt * 1e3)
    fitted = {
        n: {
            "kp_scale": gains.kp_scale[n],
            "kd_scale": gains.kd_scale[n],
            "armature": dyn.armature[n],
            "friction_coulomb": dyn.friction_coulomb[n],
            "friction_viscous": dyn.friction_viscous[n],
        }
        for n in joints
    }
    fields = {n: {} for n in joints}
    for n, f in fitted.items():
        result.rows += [(n, key, e.value, e.std) for key, e in f.items()]
        for key, e in f.items():
            why = beyond_goal(key, e)
            if why:
                result.unidentifiable.append(f"{n}.{key}")
                result.notes.append(
                    f"unidentifiable from this log (not written): {n}.{key} ({why})"
                )
            else:
                fields[n][key] = e
    result.rows.append(("motors", "latency_ms", latency.value, latency.std))
    why = beyond_goal("latency_ms", latency)
    if why:
        result.unidentifiable.append("motors.latency_ms")
        result.notes.append(f"unidentifiable from this log (not written): latency_ms ({why})")
    update_overlay(out, joints=fields, latency_ms=None if why else latency)
    result.notes.append(
        "unidentifiable from this excitation (not fitted): "
        + ", ".join(f"{p} of {group}" for p in UNIDENTIFIED_BY_EXCITATION)
    )
    _report_unidentifiable(result, dyn)
    offsets = {n: {"encoder_offset": e} for n, e in dyn.encoder_offset.items()}
    calibrated = _overlay_from(
        {n: {**fields[n], **offsets.get(n, {})} for n in joints}, 0.0 if why else latency.value
    )
    result.metrics = _compare(log, joints, calibrated, report, "actuators")
    result.seconds = time.perf_counter() - start
    return result


STANCE_SERIES = ("joint_position", "joint_velocity", "joint_effort", "imu_angular_velocity")


def stance_offsets(log_path: Path, group: str, out: Path, allow_disturbed: bool = False) -> Result:
    """Ankle encoder offsets of `group` (left_leg, right_leg or legs) from a stance log
    (`calibration.stance`), the rest of each leg's offsets read from the overlay at
    `out`. An offset whose std exceeds the goal is reported, not written; one the overlay
    already holds with a std no larger (a hung fit's) is kept."""
    from simreal.calibration.overlay_file import offset_estimates

    start = time.perf_counter()
    legs = {"left_leg": ("left",), "right_leg": ("right",), "legs": SIDES}
    if group not in legs:
        raise ValueError(f"stance-offsets: group {group!r}; expected one of {', '.join(legs)}")
    log = load_hung_log(log_path, STANCE_SERIES, "stance-offsets")
    result = Result()
    _check_loop(log, result, allow_disturbed)
    known = offset_estimates(out)
    fit = fit_stance_offsets(log, legs[group], known)
    better = {}
    for n, e in fit.encoder_offset.items():
        if n in known and known[n].std <= e.std:
            result.notes.append(
                f"{n}: kept the overlay's encoder offset {known[n].value:.5f} +- "
                f"{known[n].std:.2g} rad (the stance fit's {e.value:.5f} +- {e.std:.2g} is "
                "no more certain)"
            )
        else:
            better[n] = e
    update_overlay(out, joints={n: {"encoder_offset": e} for n, e in better.items()})
    result.rows = [(n, "encoder_offset", e.value, e.std) for n, e in better.items()]
    result.unidentifiable = [f"{n}.encoder_offset" for n in fit.unidentifiable]
    result.notes += [
        f"unidentifiable from this log (not written): {n}.encoder_offset ({why})"
        for n, why in fit.unidentifiable.items()
    ]
    result.metrics = {"imu_tilt_rad": fit.imu_tilt_rad, "samples": float(fit.samples)}
    result.seconds = time.perf_counter() - start
    return result


def imu(log_path: Path, out: Path, report: Path | None, allow_disturbed: bool = False) -> Result:
    start = time.perf_counter()
    log = load_hung_log(
        log_path, ("imu_angular_velocity", "imu_linear_acceleration", "imu_orientation"), "imu"
    )
    result = Result()
    _check_loop(log, result, allow_disturbed)
    fit = fit_imu(log)
    keys = [k for k in ("gyro_bias", "accel_bias") if k in fit]
    update_overlay(out, imu={k: fit[k] for k in keys})
    for key in keys:
        result.rows += [
            ("imu", f"{key}_{a}", e.value, e.std) for a, e in zip("xyz", fit[key], strict=True)
        ]
    if "tilt" in fit:
        result.rows.append(("imu", "mounting_tilt_rad", fit["tilt"][0].value, 0.0))
    else:
        result.notes.append("accelerometer reads no gravity: accel_bias and tilt unidentifiable")
    if report:
        from simreal.calibration.report import plot_imu

        plot_imu(report, log, fit)
    result.seconds = time.perf_counter() - start
    return result


@dataclass(frozen=True)
class ExtrinsicsConfig:
    """Which two PoseStamped topics of the log, and the names the overlay entry gets."""

    topic_a: str = "/imu/pose"
    """Parent sensor's pose in its own world (e.g. IMU/odometry)."""
    topic_b: str = "/camera/pose"
    """Child sensor's pose in its own world (e.g. camera or LiDAR odometry)."""
    parent: str | None = None
    """Frame names; default: the topics' first path component (imu, camera)."""
    child: str | None = None
    name: str | None = None
    """Overlay key; default `PARENT_to_CHILD`."""

    def frames(self) -> tuple[str, str, str]:
        parent = self.parent or self.topic_a.strip("/").split("/")[0]
        child = self.child or self.topic_b.strip("/").split("/")[0]
        return parent, child, self.name or f"{parent}_to_{child}"


def extrinsics(log_path: Path, cfg: ExtrinsicsConfig, out: Path, report: Path | None) -> Result:
    """Fit the child sensor's pose in the parent's frame (hand-eye AX = XB); a degenerate
    motion raises DegenerateMotionError naming the unidentifiable directions, and nothing
    is written."""
    from scipy.spatial.transform import Rotation

    from simreal.calibration.extrinsics import (
        fit_hand_eye,
        interpolate,
        map_into_a,
        world_offset,
    )
    from simreal.calibration.overlay_file import extrinsic_entry
    from simreal.calibration.pose_log import read_pose_topics

    start = time.perf_counter()
    parent, child, name = cfg.frames()
    poses = read_pose_topics(log_path, (cfg.topic_a, cfg.topic_b))
    a, b = poses[cfg.topic_a], poses[cfg.topic_b]
    fit = fit_hand_eye(a, b)
    xyzw = fit.rotation.as_quat(canonical=True)
    wxyz = np.r_[xyzw[3], xyzw[:3]]
    std = fit.std
    entry = extrinsic_entry(parent, child, fit.translation, std[3:], wxyz, std[:3])
    update_overlay(out, extrinsics={name: entry})
    result = Result()
    result.rows += [
        (name, f"translation_{a_}_m", v, s)
        for a_, v, s in zip("xyz", fit.translation, std[3:], strict=True)
    ]
    rotvec = fit.rotation.as_rotvec()
    result.rows += [
        (name, f"rotvec_{a_}_rad", v, s) for a_, v, s in zip("xyz", rotvec, std[:3], strict=True)
    ]
    # Alignment quality on the overlap: A's logged position against B's mapped into A's
    # world, with the fitted X and with the identity (the "nominal": no calibration).
    t = a.t[(a.t >= b.t[0]) & (a.t <= b.t[-1])]
    pa, qa = interpolate(a, t)
    pb, qb = interpolate(b, t)
    aligned, _ = map_into_a(pb, qb, fit.rotation, fit.translation, fit.world)
    ident = (Rotation.identity(), np.zeros(3))
    nominal, _ = map_into_a(pb, qb, *ident, world_offset(pa, qa, pb, qb, *ident))
    result.metrics = {
        "pairs": float(fit.pairs),
        "rms_rotation_residual_rad": fit.rms_rotation_rad,
        "rms_translation_residual_m": fit.rms_translation_m,
        "position_rmse_identity_m": float(np.sqrt(np.mean(np.sum((nominal - pa) ** 2, 1)))),
        "position_rmse_calibrated_m": float(np.sqrt(np.mean(np.sum((aligned - pa) ** 2, 1)))),
        "min_singular_ratio": float(fit.singular_ratios.min()),
    }
    result.notes.append(
        f"{name}: pose of {child} ({cfg.topic_b}) in {parent}'s frame ({cfg.topic_a}); "
        f"quaternion wxyz {np.round(wxyz, 6).tolist()}"
    )
    if report:
        from simreal.calibration.report import plot_trajectories

        plot_trajectories(report, t, pa, nominal, aligned, (parent, child))
    result.seconds = time.perf_counter() - start
    return result


def summary_table(result: Result) -> str:
    lines = [f"{'joint / sensor':<28} {'parameter':<20} {'value':>12} {'std':>10}"]
    lines += [f"{a:<28} {b:<20} {v:>12.5g} {s:>10.2g}" for a, b, v, s in result.rows]
    lines += [f"{k}: {v:.5g}" for k, v in result.metrics.items()]
    lines += [*result.notes, f"took {result.seconds:.1f} s"]
    return "\n".join(lines)
