"""Wiring for `simreal calibrate ROUTINE`: arguments to the calibration routines."""

from __future__ import annotations

import argparse

ROUTINES = ("excite", "joint-offsets", "actuators", "imu", "extrinsics")


def calibrate(args: argparse.Namespace) -> int:
    from simreal.calibration import routines
    from simreal.calibration.excite import ExcitationConfig
    from simreal.robots.g1.overlay import load_overlay

    if args.robot != "g1":
        raise ValueError(f"robot {args.robot!r}: only g1 has calibration routines so far")
    if args.routine == "excite":
        cfg = ExcitationConfig(
            group=args.group,
            amplitude=args.amplitude,
            chirp_s=args.chirp_s,
            gain_scale=args.gain_scale,
        )
        perturb = load_overlay(args.perturb) if args.perturb else None
        result = routines.excite(cfg, args.log, perturb, args.domain if args.dds else None)
    elif args.routine == "joint-offsets":
        result = routines.joint_offsets(
            args.log, args.group, args.out, args.report, args.lowpass_hz
        )
    elif args.routine == "extrinsics":
        cfg = routines.ExtrinsicsConfig(
            topic_a=args.topic_a,
            topic_b=args.topic_b,
            parent=args.parent,
            child=args.child,
            name=args.name,
        )
        result = routines.extrinsics(args.log, cfg, args.out, args.report)
    elif args.routine == "actuators":
        result = routines.actuators(args.log, args.group, args.out, args.report, args.lowpass_hz)
    else:
        result = routines.imu(args.log, args.out, args.report)
    print(routines.summary_table(result))
    if args.routine != "excite":
        print(f"wrote {args.out}" + (f" and {args.report}" if args.report else ""))
    return 0
