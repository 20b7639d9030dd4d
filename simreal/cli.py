"""The `simreal` command: parses, wires the parts together, prints."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from pathlib import Path
from typing import TypeVar

from simreal import __version__
from simreal.calibrating import ROUTINES
from simreal.reports import add_arguments as add_report_arguments
from simreal.reports import emit
from simreal.reports import run as cmd_report
from simreal.sim.engine import ENGINES, EngineUnavailableError

T = TypeVar("T")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, ros_args = split_ros_args(argv)
    args = parser.parse_args(ours)
    args.argv = argv  # what a run records as its command
    if ros_args:
        if args.command != "deploy":
            parser.error("--ros-args: only `simreal deploy --transport ros2` runs a ROS 2 node")
        args.ros_args = tuple(ros_args)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (
        ValueError,
        KeyError,
        FileNotFoundError,
        FileExistsError,
        EngineUnavailableError,
    ) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"simreal {args.command}: error: {message}", file=sys.stderr)
        return 2


def split_ros_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """simreal's own arguments, and ROS 2's as rclpy takes them: each `--ros-args` block
    (kept with its `--ros-args`) up to a lone `--` or the end, as a ROS 2 node reads
    `ros2 run PKG NODE --ros-args -p a:=1 -- other arguments`."""
    ours: list[str] = []
    ros: list[str] = []
    inside = False
    for arg in argv:
        if arg == "--ros-args":
            inside = True
            ros.append(arg)
        elif inside and arg == "--":
            inside = False
        else:
            (ros if inside else ours).append(arg)
    return ours, ros


def _add_rt_priority(parser: argparse.ArgumentParser) -> None:
    """`--rt-priority` of the commands that run a real-time loop (the node and the virtual
    robot), so that both say the same about it."""
    parser.add_argument(
        "--rt-priority",
        type=int,
        metavar="P",
        help="run the loop SCHED_FIFO at priority P (1-99; needs root or CAP_SYS_NICE)",
    )


def _add_domain_and_duration(
    parser: argparse.ArgumentParser, domain_help: str = "DDS domain id", domain_default=0
) -> None:
    """The DDS domain and run length of the commands that run as DDS processes."""
    parser.add_argument("--domain", type=int, default=domain_default, help=domain_help)
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")


class _OneLineCommands(argparse.HelpFormatter):
    """`simreal --help` lists every command with its summary on one line."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=24, width=100)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        # argparse sizes the name column before it indents the commands by two more
        # columns, so the longest names would wrap their summary onto a second line.
        if isinstance(action, argparse._SubParsersAction):
            longest = max(len(name) for name in action.choices)
            self._action_max_length = max(
                self._action_max_length, self._current_indent + 2 * self._indent_increment + longest
            )


SEED_HELP = "seed of every random draw (simulations, policy noise, initial weights)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="simreal",
        formatter_class=_OneLineCommands,
        description="Sim-to-real robot learning: train, evaluate, export, deploy, replay, "
        "calibrate. `simreal COMMAND --help` shows a command's options.",
    )
    p.add_argument("--version", action="version", version=f"simreal {__version__}")
    sub = p.add_subparsers(dest="command", title="commands", metavar="COMMAND")

    s = sub.add_parser("tasks", help="list registered tasks")
    s.set_defaults(func=cmd_tasks)

    s = sub.add_parser("robot", help="describe a robot; write its MuJoCo model and URDF")
    s.add_argument("robot", help="crazyflie or g1")
    s.add_argument("--mjcf", type=Path, help="write the MuJoCo model (MJCF) here")
    s.add_argument("--urdf", type=Path, help="write the URDF here (for ROS 2 tools)")
    s.set_defaults(func=cmd_robot)

    s = sub.add_parser("train", help="train a task (or a Gymnasium env) with PPO")
    s.add_argument("task", nargs="?", help="registered task name (see `simreal tasks`)")
    s.add_argument("--gym", metavar="ENV_ID", help="train on a Gymnasium environment instead")
    s.add_argument(
        "--envs", type=int, help="parallel simulations (default: the task's; 8 for --gym)"
    )
    s.add_argument(
        "--steps", type=int, help="env-step budget (training stops at whichever budget ends first)"
    )
    s.add_argument("--minutes", type=float, help="wall-time budget in minutes")
    s.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    s.add_argument("--engine", default="mjbatch", choices=ENGINES, help="simulation engine")
    s.add_argument(
        "--arch",
        choices=("decoupled", "coupled"),
        default=None,
        help="decoupled (default): one actor per action group of the task; coupled: one actor "
        "for all of them, the baseline (the same on a task with one group)",
    )
    s.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default=None,
        help="where the learner (actor-critic, rollout storage, update) runs: auto (default: "
        "a GPU when torch sees one), cpu or cuda; with --resume, moves a run to this device",
    )
    s.add_argument("--stop-at-return", type=float, help="stop once evaluation reaches this return")
    s.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="calibration overlay YAML: centre the robot model and randomization on it",
    )
    s.add_argument(
        "--out",
        type=Path,
        default=Path("runs"),
        metavar="DIR",
        help="folder the run directory goes in (default runs/)",
    )
    s.add_argument(
        "--resume", type=Path, metavar="RUN", help="continue a run from its last checkpoint"
    )
    s.add_argument(
        "--init-from",
        type=Path,
        metavar="RUN_OR_CHECKPOINT",
        help="warm start: copy a trained actor-critic where shapes allow (appended "
        "observation terms start at zero weight)",
    )
    s.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, e.g. task.action_rpm_scale=0.4 or train.ppo.gamma=0.98",
    )
    s.set_defaults(func=cmd_train)

    s = sub.add_parser("eval", help="evaluate a run or an exported policy; prints JSON")
    s.add_argument(
        "policy", type=Path, metavar="RUN_OR_ONNX", help="or baseline:NAME (e.g. baseline:pid)"
    )
    s.add_argument("--task", help="task (default: the one the policy was trained on)")
    s.add_argument(
        "--episodes",
        type=int,
        help="episodes side by side (default: as many as the task's headline metric needs, "
        "e.g. g1-pull's 40-cart ladder, lane-keep's 100 roads, dex-track's held-out "
        "references; fewer warn; a swarm's episode is one simulation of all its drones)",
    )
    s.add_argument("--engine", default="mjbatch", choices=ENGINES, help="simulation engine")
    s.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the evaluation's random draws; a fixed protocol (g1-pull's grid of carts, "
        "no randomization) gives the same numbers for every seed",
    )
    s.add_argument(
        "--video",
        type=Path,
        help="write an MP4 of the first episode, through the task's camera with its "
        "targets and references drawn (tasks/video.py)",
    )
    s.add_argument(
        "--log",
        type=Path,
        metavar="DIR",
        help="write the first episode as a rosbag2 log (a new directory)",
    )
    s.add_argument("--json", type=Path, help="also write the metrics to this file")
    s.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="calibration overlay YAML: evaluate on the calibrated robot (overrides the run's)",
    )
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="task.FIELD=VALUE",
        help="evaluate under a changed task config, e.g. task.num_drones=32",
    )
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser("replay", help="summarize, plot, render or re-simulate a rollout log")
    s.add_argument("log", type=Path, metavar="LOG", help="rosbag2 directory from --log")
    s.add_argument("--plot", type=Path, metavar="FILE", help="write a PNG of the rollout")
    s.add_argument("--video", type=Path, metavar="FILE", help="render the logged motion (MP4)")
    s.add_argument(
        "--video-fps",
        type=float,
        metavar="HZ",
        help="frames per second of --video (default: the log's control rate, every pose)",
    )
    s.add_argument(
        "--resim",
        action="store_true",
        help="replay the logged commands open loop in simulation; report the gap (RMSE)",
    )
    s.add_argument(
        "--engine",
        choices=ENGINES,
        help="simulation engine for --resim (default: the one the log came from)",
    )
    s.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="with --resim: also re-simulate with this calibration overlay; report both gaps",
    )
    s.add_argument("--json", type=Path, metavar="FILE", help="also write the report here")
    s.add_argument(
        "--recover",
        type=Path,
        metavar="DIR",
        help="write the readable part of a killed or truncated log as a finished bag at DIR",
    )
    s.set_defaults(func=cmd_replay)

    s = sub.add_parser("export", help="export a run's policy to ONNX")
    s.add_argument(
        "run", type=Path, metavar="RUN", help="run directory, or one of its checkpoints (.pt)"
    )
    s.add_argument(
        "--onnx", type=Path, metavar="FILE", help="ONNX file to write (default: RUN/policy.onnx)"
    )
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("sim-robot", help="run the virtual robot behind the robot's DDS interface")
    s.add_argument("robot", help="robot to simulate: g1")
    s.add_argument(
        "--perturb",
        type=Path,
        metavar="FILE",
        help="calibration-overlay YAML: the hidden truth, plus an optional `noise:` section "
        "(white noise on encoder_rad, joint_vel_rad_s, tau_est_nm, gyro_rad_s, accel_m_s2)",
    )
    s.add_argument("--rate", type=float, default=500.0, metavar="HZ", help="state and command rate")
    s.add_argument(
        "--physics-hz",
        type=float,
        metavar="HZ",
        help="the robot's own physics rate, a whole multiple of --rate (substeps per tick); "
        "default: --rate",
    )
    s.add_argument(
        "--integrator",
        choices=("implicitfast", "Euler", "RK4", "implicit"),
        default="implicitfast",
        help="MuJoCo integrator of the robot's physics",
    )
    s.add_argument("--hang", action="store_true", help="fix the pelvis in the air, as on a gantry")
    s.add_argument("--band", action="store_true", help="stand on the floor held by an elastic band")
    s.add_argument(
        "--band-release",
        type=float,
        metavar="S",
        help="with --band: let go at S s of simulated time (after the first command)",
    )
    _add_domain_and_duration(s)
    s.add_argument(
        "--interface",
        choices=("unitree", "ros2"),
        default="unitree",
        help="the robot's own low-level DDS topics, or ROS 2 joint states/IMU/joint commands",
    )
    s.add_argument(
        "--push-force", type=float, default=0.0, metavar="N", help="periodic torso pushes (N)"
    )
    _add_rt_priority(s)
    s.add_argument("--push-every", type=float, default=4.0, metavar="S", help="push period")
    s.add_argument("--push-duration", type=float, default=0.2, metavar="S", help="push length")
    s.add_argument(
        "--push-first", type=float, default=3.0, metavar="S", help="first push, after release"
    )
    s.add_argument(
        "--log",
        type=Path,
        metavar="DIR",
        help="write the ground truth (nav_msgs/Odometry on /sim/odom, external wrench) as a "
        "rosbag2 log (a new directory)",
    )
    s.set_defaults(func=cmd_sim_robot)

    s = sub.add_parser("deploy", help="run a policy on a robot (or the virtual robot)")
    s.add_argument("policy", type=Path, metavar="POLICY.onnx", help="exported policy (ONNX)")
    s.add_argument("--robot", required=True, help="robot to drive: g1")
    s.add_argument(
        "--transport",
        choices=("dds", "ros2"),
        default="dds",
        help="dds: the robot's own DDS interface (G1: rt/lowstate, rt/lowcmd); ros2: ROS 2 "
        "joint states, IMU and joint commands, as node simreal_policy through rclpy if it "
        "can be imported, else over CycloneDDS with ROS 2's wire conventions",
    )
    _add_rt_priority(s)
    s.add_argument(
        "--no-rclpy",
        action="store_true",
        help="with --transport ros2: CycloneDDS even if rclpy is there",
    )
    s.add_argument("--log", type=Path, metavar="DIR", help="write a rosbag2 log (a new directory)")
    s.add_argument("--rate", type=float, default=500.0, metavar="HZ", help="low-level command rate")
    s.add_argument(
        "--state-timeout",
        dest="state_timeout_ms",
        type=float,
        default=50.0,
        metavar="MS",
        help="watchdog: damp when the newest valid state is older than this",
    )
    _add_domain_and_duration(
        s,
        "DDS domain id (default 0; with --transport ros2 ROS_DOMAIN_ID where it is set, and a "
        "--domain that differs from it is refused)",
        domain_default=None,
    )
    s.add_argument(
        "--auto-start",
        action="store_true",
        help="turn the policy on once the robot holds its default pose (no start command)",
    )
    s.add_argument(
        "--pull-direction",
        choices=("backward", "forward"),
        default="backward",
        help="g1-pull: tow walking backward (the load in front) or forward (the load behind); "
        "the walking command comes from cmd_vel, the remote or keys (docs/deploy.md)",
    )
    s.add_argument(
        "--ros-args",
        nargs=argparse.REMAINDER,
        default=(),
        metavar="ARG",
        help="with --transport ros2 through rclpy: ROS 2 arguments up to a lone -- or the end "
        "(-p rate_hz:=250, -r __ns:=/g1, -r joint_states:=/robot/joint_states)",
    )
    s.set_defaults(func=cmd_deploy)

    s = sub.add_parser(
        "cmd-vel", help="publish a scripted walking command (ROS 2 Twist on cmd_vel)"
    )
    s.add_argument(
        "segments",
        nargs="+",
        metavar="VX,VY,YAW:S",
        help="velocities in turn (m/s, m/s, rad/s), each held S seconds; zeros follow",
    )
    s.add_argument("--rate", type=float, default=20.0, metavar="HZ", help="messages per second")
    s.add_argument("--domain", type=int, default=0, help="DDS domain id")
    s.add_argument(
        "--clock",
        choices=("wall", "robot"),  # cmd_vel_script.CLOCKS (not imported: DDS loads slowly)
        default="wall",
        help="time the segments by this host's clock or by the robot's own (LowState's tick: "
        "a simulated robot behind real time still walks each segment its whole length)",
    )
    s.set_defaults(func=cmd_cmd_vel)

    s = sub.add_parser("calibrate", help="run a calibration routine; writes the overlay YAML")
    s.add_argument(
        "routine",
        choices=ROUTINES,
        help="excite: record an excitation log; the others fit the overlay from a log "
        "(stance-offsets: the ankles' encoder offsets from a stance log, after joint-offsets)",
    )
    s.add_argument("log", type=Path, metavar="LOG", help="rosbag2 log (excite: a new one)")
    s.add_argument("--robot", required=True, help="robot: g1")
    s.add_argument(
        "--overlay",
        type=Path,
        metavar="FILE",
        help="overlay YAML to write or update (every routine but excite)",
    )
    s.add_argument(
        "--group",
        default="left_leg",
        help="joint group: left_leg, right_leg, waist, left_arm, right_arm; excite --group "
        "stance: stand in the default pose (the virtual robot on its band; over DDS, "
        "`simreal sim-robot g1 --band`); stance-offsets: left_leg, right_leg or legs",
    )
    s.add_argument("--amplitude", type=float, default=0.2, help="excite: rad around the default")
    s.add_argument("--perturb", type=Path, metavar="FILE", help="excite: virtual robot's truth")
    s.add_argument("--chirp-s", type=float, default=3.0, help="excite: chirp length per joint")
    s.add_argument(
        "--gain-scale",
        type=float,
        help="excite: commanded kp and kd of the group as multiples of nominal "
        "(default per group: 4 for the waist, which carries the upper body; else 1)",
    )
    s.add_argument(
        "--dds",
        action="store_true",
        help="excite: run on the robot over DDS (rt/lowstate, rt/lowcmd), e.g. a running "
        "`simreal sim-robot g1 --hang`, instead of an in-process virtual robot",
    )
    s.add_argument("--domain", type=int, default=0, help="excite --dds: DDS domain id")
    s.add_argument(
        "--rt-priority",
        type=int,
        metavar="P",
        help="excite --dds: run the client's loop SCHED_FIFO at priority P (1-99; needs root "
        "or CAP_SYS_NICE)",
    )
    s.add_argument(
        "--allow-disturbed",
        action="store_true",
        help="fit a DDS excitation log with more than 2 %% of its ticks disturbed (lost "
        "states, late or uncertain commands) anyway, with a warning; refused otherwise",
    )
    s.add_argument(
        "--lowpass-hz",
        type=float,
        help="joint-offsets, actuators: zero-phase low-pass (Hz) on the logged joint signals "
        "before the dynamics fit, for a real robot's noisy encoders (e.g. 20; the "
        "excitation stays below 3.5 Hz); default none (the virtual robot is noise-free)",
    )
    s.add_argument("--report", type=Path, metavar="PNG", help="write the PNG report here")
    s.add_argument(
        "--topic-a",
        default="/imu/pose",
        help="extrinsics: parent sensor's geometry_msgs/PoseStamped topic",
    )
    s.add_argument(
        "--topic-b",
        default="/camera/pose",
        help="extrinsics: child sensor's geometry_msgs/PoseStamped topic",
    )
    s.add_argument("--parent", help="extrinsics: parent frame name (default from --topic-a)")
    s.add_argument("--child", help="extrinsics: child frame name (default from --topic-b)")
    s.add_argument("--name", help="extrinsics: overlay key (default PARENT_to_CHILD)")
    s.set_defaults(func=cmd_calibrate)

    s = sub.add_parser(
        "dex",
        help="dex-track references: generate a dataset, check a file",
        formatter_class=_OneLineCommands,
    )
    dex = s.add_subparsers(dest="dex_command", title="commands", metavar="COMMAND")
    d = dex.add_parser("references", help="generate train and held-out reference sets")
    d.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="dataset directory to create"
    )
    d.add_argument("--count", type=int, default=512, help="training references to attempt")
    d.add_argument("--heldout-count", type=int, default=64, help="held-out references to attempt")
    d.add_argument("--seed", type=int, default=0, help="seed of the generator")
    d.add_argument(
        "--heldout-types", nargs="*", default=["bottle"], help="object types kept out of training"
    )
    d.add_argument("--rate", type=float, default=20.0, help="frames per second")
    d.add_argument("--frames", type=int, default=64, help="frames per reference")
    d.set_defaults(func=cmd_dex_references)
    d = dex.add_parser("check", help="load and check reference files (format, feasibility)")
    d.add_argument("files", nargs="+", type=Path, metavar="FILE", help="reference files (.npz)")
    d.add_argument("--rate", type=float, default=20.0, help="the task's control rate (Hz)")
    d.add_argument("--resample", action="store_true", help="resample files at another rate")
    d.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help="with one file: write it (resampled) to FILE",
    )
    d.set_defaults(func=cmd_dex_check)

    s = sub.add_parser("bench", help="list the benchmarks, or run one")
    s.add_argument("name", nargs="?", help="the benchmark to run (none: list them)")
    s.add_argument(
        "args",
        nargs=argparse.REMAINDER,
        help="options for that benchmark, e.g. scale --max-envs 512",
    )
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("report", help="regenerate README.md's and docs/results.md's tables")
    add_report_arguments(s)
    s.set_defaults(func=cmd_report)
    return p


def _request(cls: type[T], args: argparse.Namespace, ignore: tuple[str, ...] = (), **given) -> T:
    """A helper's typed request from the parsed options of the same names, plus `given`.
    An option that is neither a field of the request nor ignored is an error here, never
    silently dropped."""
    fields = {f.name for f in dataclasses.fields(cls)}
    skip = {"command", "func", "argv", *ignore, *given}
    parsed = {k: v for k, v in vars(args).items() if k not in skip}
    unknown = set(parsed) - fields
    if unknown:
        raise TypeError(f"{cls.__name__} has no field for the options {sorted(unknown)}")
    if isinstance(parsed.get("overrides"), list):
        parsed["overrides"] = tuple(parsed["overrides"])
    return cls(**parsed, **given)


def cmd_tasks(args: argparse.Namespace) -> int:
    from simreal.tasks import TASKS

    width = max(len(name) for name in TASKS)
    for name, spec in sorted(TASKS.items()):
        print(f"{name:<{width}}  {spec.summary}")
    return 0


def cmd_robot(args: argparse.Namespace) -> int:
    from simreal.robots import get_robot

    robot = get_robot(args.robot)
    print(robot.describe())
    for path, text in (
        (args.mjcf, args.mjcf and robot.build_mjcf()),
        (args.urdf, args.urdf and robot.build_urdf()),
    ):
        if path:
            path.write_text(text)
            print(f"wrote {path}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from simreal import training

    if args.resume:
        if args.calibration:
            raise ValueError(
                "--resume continues with the run's own calibration; drop --calibration"
            )
        if args.init_from:
            raise ValueError("--resume continues the run's own weights; drop --init-from")
        run_dir = args.resume
        runner = training.resume_run(
            run_dir, steps=args.steps, minutes=args.minutes, device=args.device
        )
    else:
        # shlex-quoted, so a recorded `--set k=[1, 2]` splits back into the same words
        command = shlex.join(["simreal", *args.argv])
        request = _request(training.TrainRequest, args, ignore=("resume",), command=command)
        runner, run_dir = training.new_run(request)
    main_rank = runner.distributed.is_main
    if main_rank:
        print(f"run directory: {run_dir}", flush=True)
    finished = False
    try:
        runner.learn()
        finished = True
    except KeyboardInterrupt:
        if main_rank:
            print(f"interrupted; checkpoint saved. Resume with: simreal train --resume {run_dir}")
        return 130
    finally:
        runner.distributed.close(clean=finished)
    if not main_rank:
        return 0
    summary = {
        "run_dir": str(run_dir),
        "stopped_by": runner.stopped_by,
        "env_steps": runner.env_steps,
        "wall_time_s": round(runner.wall_time_s, 1),
        "best_eval_return": runner.best_eval_return,
    }
    print(json.dumps(summary, indent=2))
    print(run_dir)
    return 0


def cmd_dex_references(args: argparse.Namespace) -> int:
    from simreal.tasks.dex_track.dataset import write_dataset

    if args.out.exists() and any(args.out.iterdir()):
        raise FileExistsError(f"{args.out}: exists and is not empty")
    manifest = write_dataset(
        args.out,
        args.count,
        args.heldout_count,
        args.seed,
        tuple(args.heldout_types),
        args.rate,
        args.frames,
    )
    counts = {
        split: sum(r["split"] == split for r in manifest["references"])
        for split in ("train", "heldout")
    }
    for bad in manifest["infeasible"]:
        print(f"infeasible, not written: {bad['name']}: {bad['reason']}")
    print(json.dumps({**counts, "infeasible": len(manifest["infeasible"]), "out": str(args.out)}))
    return 0


def cmd_dex_check(args: argparse.Namespace) -> int:
    from simreal.tasks.dex_track.grasp import check_feasible
    from simreal.tasks.dex_track.references import load_reference, save_reference

    if args.write and len(args.files) != 1:
        raise ValueError("--write takes exactly one input file")
    bad = 0
    for path in args.files:
        ref = load_reference(path, args.rate, args.resample)
        check = check_feasible(ref)
        bad += not check.ok
        status = "feasible" if check.ok else f"INFEASIBLE: {check.reason}"
        print(f"{path}: {ref.num_frames} frames at {ref.rate_hz:g} Hz, {ref.object_type}: {status}")
        if args.write:
            save_reference(args.write, ref)
            print(f"wrote {args.write}")
    return 1 if bad else 0


def cmd_eval(args: argparse.Namespace) -> int:
    from simreal import evaluation

    metrics = evaluation.evaluate_policy(
        args.policy,
        task=args.task,
        episodes=args.episodes,
        engine=args.engine,
        seed=args.seed,
        video=args.video,
        log=args.log,
        overrides=args.set,
        calibration=args.calibration,
    )
    emit(metrics, args.json)
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from simreal.replay import replay_log

    if args.calibration and not args.resim:
        raise ValueError("--calibration compares re-simulations: give --resim too")
    if args.recover:
        from simreal.deploy.logs.recover import recover_bag

        emit(recover_bag(args.log, args.recover), args.json)
        return 0
    report = replay_log(
        args.log,
        plot=args.plot,
        video=args.video,
        resim=args.resim,
        engine=args.engine,
        calibration=args.calibration,
        video_fps=args.video_fps,
    )
    for cut in report.get("recovery", []):
        print(f"simreal replay: {cut['file']}: {cut['note']}", file=sys.stderr)
    emit(report, args.json)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from simreal import evaluation

    path = evaluation.export_run(args.run, args.onnx)
    print(path)
    return 0


def cmd_sim_robot(args: argparse.Namespace) -> int:
    from simreal import deploying

    request = _request(deploying.SimRobotRequest, args)
    return deploying.sim_robot(request)


def cmd_deploy(args: argparse.Namespace) -> int:
    from simreal import deploying

    request = _request(deploying.DeployRequest, args)
    return deploying.deploy(request)


def cmd_cmd_vel(args: argparse.Namespace) -> int:
    from simreal.deploy import cmd_vel_script

    segments = [cmd_vel_script.parse_segment(text) for text in args.segments]
    written = cmd_vel_script.publish(segments, args.domain, args.rate, args.clock)
    print(f"cmd_vel: {written} messages on domain {args.domain}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from simreal import calibrating

    dds_domain = args.domain if args.dds else None
    request = _request(
        calibrating.CalibrateRequest, args, ignore=("dds", "domain"), dds_domain=dds_domain
    )
    return calibrating.calibrate(request)


def cmd_bench(args: argparse.Namespace) -> int:
    import runpy

    from simreal.benchmarks import BENCH_DIR, benchmarks

    found = benchmarks()
    if not args.name:
        if args.args:
            raise ValueError("benchmark options need a benchmark name")
        width = max(len(name) for name in found)
        for name, summary in found.items():
            print(f"{name:<{width}}  {summary}")
        return 0
    if args.name not in found:
        raise ValueError(f"unknown benchmark {args.name!r}; available: {', '.join(found)}")
    script = BENCH_DIR / f"{args.name}.py"
    sys.argv = [str(script), *args.args]  # as `python bench/NAME.py ARGS` would see them
    runpy.run_path(str(script), run_name="__main__")
    return 0
