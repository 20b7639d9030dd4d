"""Wiring for `simreal sim-robot` and `simreal deploy`: arguments to the deploy parts."""

from __future__ import annotations

import argparse
import sys


def _only_g1(robot: str) -> None:
    if robot != "g1":
        raise ValueError(f"robot {robot!r}: only g1 has a DDS interface so far")


def sim_robot(args: argparse.Namespace) -> int:
    from simreal.deploy.g1 import virtual_robot
    from simreal.deploy.g1.sim_robot import PushSchedule
    from simreal.robots.g1.overlay import Overlay, load_overlay

    _only_g1(args.robot)
    cfg = virtual_robot.VirtualRobotConfig(
        rate_hz=args.rate,
        domain_id=args.domain,
        overlay=load_overlay(args.perturb) if args.perturb else Overlay(),
        hang=args.hang,
        band=args.band,
        duration_s=args.duration,
        interface=args.interface,
        band_release_s=args.band_release,
        rt_priority=args.rt_priority,
        pushes=PushSchedule(
            force_n=args.push_force,
            every_s=args.push_every,
            duration_s=args.push_duration,
            first_s=args.push_first,
        ),
    )
    return virtual_robot.main(cfg)


def deploy(args: argparse.Namespace) -> int:
    from simreal.deploy.g1 import node
    from simreal.deploy.g1.safety import SafetyConfig

    _only_g1(args.robot)
    cfg = node.DeployConfig(
        domain_id=args.domain,
        rate_hz=args.rate,
        duration_s=args.duration,
        log_dir=args.log,
        interactive=node.keys_available(),
        auto_start=args.auto_start,
        transport=args.transport,
        rt_priority=args.rt_priority,
        safety=SafetyConfig(state_timeout_s=args.state_timeout / 1e3),
    )
    if args.transport == "ros2" and not args.no_rclpy:
        from simreal.deploy.g1 import rclpy_node

        if rclpy_node.available():
            return rclpy_node.main(args.policy, cfg)
        print("rclpy is not importable: ROS 2 topics over CycloneDDS", file=sys.stderr)
    return node.main(args.policy, cfg)
