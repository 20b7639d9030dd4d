"""Wiring for `simreal sim-robot` and `simreal deploy`: requests to the deploy parts.

Both take a typed request, so a script starts the virtual robot or the policy node as
the command line does: `deploy(DeployRequest(policy=Path("policy.onnx"), robot="g1"))`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SimRobotRequest:
    """The options of `simreal sim-robot`."""

    robot: str
    perturb: Path | None = None
    """Calibration-overlay YAML applied as the hidden truth."""
    rate: float = 500.0
    hang: bool = False
    band: bool = False
    band_release: float | None = None
    domain: int = 0
    duration: float | None = None
    interface: str = "unitree"
    push_force: float = 0.0
    push_every: float = 4.0
    push_duration: float = 0.2
    push_first: float = 3.0
    rt_priority: int | None = None
    log: Path | None = None
    """Write the ground truth (odometry, external wrench) as a rosbag2 log here."""
    physics_hz: float | None = None
    """The robot's own physics rate (a whole multiple of `rate`); None: = rate."""
    integrator: str = "implicitfast"


@dataclass(frozen=True)
class DeployRequest:
    """The options of `simreal deploy`."""

    policy: Path
    robot: str
    transport: str = "dds"
    no_rclpy: bool = False
    log: Path | None = None
    rate: float = 500.0
    state_timeout_ms: float = 50.0
    domain: int | None = None
    """DDS domain; None: 0, or under `transport="ros2"` ROS_DOMAIN_ID where it is set
    (a given one that differs from ROS_DOMAIN_ID is refused, naming both)."""
    duration: float | None = None
    auto_start: bool = False
    rt_priority: int | None = None
    pull_direction: str = "backward"
    ros_args: tuple[str, ...] = ()
    """`--ros-args ...` for rclpy (parameters, remapping, namespace); `transport="ros2"`
    through rclpy only."""


def _only_g1(robot: str) -> None:
    if robot != "g1":
        raise ValueError(f"robot {robot!r}: only g1 has a DDS interface so far")


def sim_robot(request: SimRobotRequest) -> int:
    from simreal.deploy.g1 import virtual_robot
    from simreal.deploy.g1.sim_robot import PushSchedule
    from simreal.robots.g1.perturbation import Perturbation, load_perturbation

    _only_g1(request.robot)
    truth = load_perturbation(request.perturb) if request.perturb else Perturbation()
    cfg = virtual_robot.VirtualRobotConfig(
        rate_hz=request.rate,
        domain_id=request.domain,
        overlay=truth.overlay,
        noise=truth.noise,
        physics_hz=request.physics_hz,
        integrator=request.integrator,
        hang=request.hang,
        band=request.band,
        duration_s=request.duration,
        interface=request.interface,
        band_release_s=request.band_release,
        rt_priority=request.rt_priority,
        log_dir=request.log,
        pushes=PushSchedule(
            force_n=request.push_force,
            every_s=request.push_every,
            duration_s=request.push_duration,
            first_s=request.push_first,
        ),
    )
    return virtual_robot.main(cfg)


def deploy(request: DeployRequest) -> int:
    from simreal.deploy.g1 import node, ros2_state
    from simreal.deploy.g1.safety import SafetyConfig, check_state_timeout

    _only_g1(request.robot)
    ros2 = request.transport == "ros2"
    if request.ros_args and not ros2:
        raise ValueError("--ros-args: only --transport ros2 runs a ROS 2 node (through rclpy)")
    if request.ros_args and request.no_rclpy:
        raise ValueError("--ros-args go to rclpy, and --no-rclpy runs without it")
    domain = ros2_state.ros_domain_id(request.domain, os.environ) if ros2 else request.domain
    cfg = node.DeployConfig(
        domain_id=0 if domain is None else domain,
        rate_hz=request.rate,
        duration_s=request.duration,
        log_dir=request.log,
        interactive=node.keys_available(),
        auto_start=request.auto_start,
        transport=request.transport,
        rt_priority=request.rt_priority,
        pull_direction=request.pull_direction,
        safety=SafetyConfig(
            state_timeout_s=check_state_timeout(request.state_timeout_ms / 1e3, "--state-timeout")
        ),
    )
    if ros2 and not request.no_rclpy:
        from simreal.deploy.g1 import rclpy_node

        missing = rclpy_node.import_error()
        if missing is None:
            rclpy_node.check_ros2_config()
            return rclpy_node.main(request.policy, cfg, request.ros_args)
        if request.ros_args:
            raise ValueError(
                f"--ros-args need rclpy, which is not importable ({missing}): {rclpy_node.EXTRA}"
            )
        print(
            f"rclpy is not importable ({missing}): ROS 2 topics over CycloneDDS; "
            f"{rclpy_node.EXTRA} runs node simreal_policy through rclpy",
            file=sys.stderr,
        )
    return node.main(request.policy, cfg)
