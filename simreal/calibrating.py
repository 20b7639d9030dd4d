"""Wiring for `simreal calibrate ROUTINE`: a typed request to the calibration routines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROUTINES = ("excite", "joint-offsets", "actuators", "imu", "extrinsics", "stance-offsets")


@dataclass(frozen=True)
class CalibrateRequest:
    """The options of `simreal calibrate`: one routine on one log. Fields a routine does
    not use are ignored by it (the `calibrate` help says which routine reads which)."""

    routine: str
    log: Path
    robot: str
    overlay: Path | None = None
    """Overlay YAML to write or update (every routine but excite)."""
    group: str = "left_leg"
    amplitude: float = 0.2
    perturb: Path | None = None
    chirp_s: float = 3.0
    gain_scale: float | None = None
    dds_domain: int | None = None
    """excite: run on the robot over DDS on this domain (None: an in-process virtual robot)."""
    rt_priority: int | None = None
    """excite over DDS: SCHED_FIFO priority of the client's loop."""
    allow_disturbed: bool = False
    """Fit a DDS log with more than 2 % disturbed ticks anyway, with a warning."""
    lowpass_hz: float | None = None
    report: Path | None = None
    topic_a: str = "/imu/pose"
    topic_b: str = "/camera/pose"
    parent: str | None = None
    child: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.routine not in ROUTINES:
            raise ValueError(f"unknown calibration routine {self.routine!r}; known: {ROUTINES}")
        if self.routine != "excite" and self.overlay is None:
            raise ValueError(f"calibrate {self.routine}: give --overlay FILE for the overlay")


def calibrate(request: CalibrateRequest) -> int:
    from simreal.calibration import routines
    from simreal.calibration.excite import ExcitationConfig
    from simreal.calibration.stance import STANCE, StanceConfig
    from simreal.robots.g1.overlay import load_overlay

    r = request
    if r.robot != "g1":
        raise ValueError(f"robot {r.robot!r}: only g1 has calibration routines so far")
    if r.routine == "excite" and r.group == STANCE:
        perturb = load_overlay(r.perturb) if r.perturb else None
        result = routines.excite(StanceConfig(), r.log, perturb, r.dds_domain, r.rt_priority)
    elif r.routine == "excite":
        cfg = ExcitationConfig(
            group=r.group, amplitude=r.amplitude, chirp_s=r.chirp_s, gain_scale=r.gain_scale
        )
        perturb = load_overlay(r.perturb) if r.perturb else None
        result = routines.excite(cfg, r.log, perturb, r.dds_domain, r.rt_priority)
    elif r.routine == "joint-offsets":
        result = routines.joint_offsets(
            r.log, r.group, r.overlay, r.report, r.lowpass_hz, r.allow_disturbed
        )
    elif r.routine == "extrinsics":
        cfg = routines.ExtrinsicsConfig(
            topic_a=r.topic_a, topic_b=r.topic_b, parent=r.parent, child=r.child, name=r.name
        )
        result = routines.extrinsics(r.log, cfg, r.overlay, r.report)
    elif r.routine == "stance-offsets":
        result = routines.stance_offsets(r.log, r.group, r.overlay, r.allow_disturbed)
    elif r.routine == "actuators":
        result = routines.actuators(
            r.log, r.group, r.overlay, r.report, r.lowpass_hz, r.allow_disturbed
        )
    else:
        result = routines.imu(r.log, r.overlay, r.report, r.allow_disturbed)
    print(routines.summary_table(result))
    if r.routine != "excite":
        print(f"wrote {r.overlay}" + (f" and {r.report}" if r.report else ""))
    return 0
