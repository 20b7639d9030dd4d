"""What `simreal eval --video` shows of each task: a camera that frames the robot and what
it works with, and markers for what it aims at (a target, a reference path, goals, the
road, the reference object pose as a ghost).

The renderer (`simreal.sim.render`) knows no task: a spec hands it a camera, the model
fields a batched engine varies per simulation (which it must copy to show the simulated
scene, not the compiled one), and per frame the markers read from the environment.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from simreal.sim.render import Camera, Marker, OrbitCamera, Segment, Shape, TrackingCamera
from simreal.tasks.env import TaskEnv

TARGET_RGBA = (0.1, 0.8, 0.2, 0.45)
"""Targets and references: translucent green."""
PATH_RGBA = (0.1, 0.6, 0.9, 0.6)
DRONE_RGBA = (0.9, 0.2, 0.1, 0.5)
ROAD_RGBA = (0.3, 0.3, 0.32, 1.0)
LINE_RGBA = (0.95, 0.95, 0.95, 1.0)
LANE_RGBA = (0.1, 0.8, 0.2, 0.8)
OBSTACLE_RGBA = (0.8, 0.2, 0.15, 1.0)


def no_markers(env: TaskEnv, sim: int) -> list[Marker]:
    return []


@dataclass(frozen=True)
class VideoSpec:
    """How one task is filmed."""

    camera: Callable[[Any], Camera]
    """The camera, from the task config (a replayed log has a config but no environment)."""
    markers: Callable[[TaskEnv, int], list[Marker]] = no_markers
    """Markers of simulation `sim` in the environment's current state."""
    model_fields: tuple[str, ...] = ()
    """Model fields the task sets per simulation and the picture depends on."""
    follow: Callable[[TaskEnv, int], Camera] | None = None
    """A camera moved every frame, from simulation `sim`'s state (a chase camera)."""


def quad_hover_camera(cfg: Any) -> Camera:
    x, y, z = cfg.target
    return OrbitCamera(lookat=(x, y, z / 2), distance=2.2, azimuth_deg=135.0, elevation_deg=-8.0)


def quad_hover_markers(env: TaskEnv, sim: int) -> list[Marker]:
    return [Shape("sphere", (0.05,), tuple(env.target), TARGET_RGBA)]


def quad_track_camera(cfg: Any) -> Camera:
    return OrbitCamera(
        lookat=tuple(cfg.centre),
        distance=1.5 + 3.0 * cfg.eval_radius,
        azimuth_deg=120.0,
        elevation_deg=-35.0,
    )


def quad_track_markers(env: TaskEnv, sim: int) -> list[Marker]:
    """The whole episode's reference path and the point the drone should be at now."""
    from simreal.tasks.quad_track import references as ref

    steps = np.arange(env.max_episode_steps + 1) * env.control_dt
    times = np.zeros((env.num_envs, steps.size))
    times[sim] = steps
    path = ref.position(env.reference, times)[sim][::2]
    now = ref.position(env.reference, env.episode_step * env.control_dt)[sim]
    return [*polyline(path, 0.006, PATH_RGBA), Shape("sphere", (0.03,), tuple(now), TARGET_RGBA)]


def quad_swarm_camera(cfg: Any) -> Camera:
    return OrbitCamera(
        lookat=(0.0, 0.0, 0.5),
        distance=2.8 * cfg.room_half_size,
        azimuth_deg=90.0,
        elevation_deg=-55.0,
    )


def quad_swarm_markers(env: TaskEnv, sim: int) -> list[Marker]:
    """Every drone's goal, as a sphere of the goal radius, and a halo round every drone
    (a 10 cm drone is a dot in a view of the whole room)."""
    radius = env.cfg.goal_radius
    goals = [Shape("sphere", (radius,), tuple(goal), TARGET_RGBA) for goal in env.goal[sim]]
    halos = [Shape("sphere", (0.12,), tuple(pos), DRONE_RGBA) for pos in env.pos[sim]]
    return goals + halos


def g1_camera(cfg: Any) -> Camera:
    return TrackingCamera(body="pelvis", distance=3.5, azimuth_deg=120.0, elevation_deg=-15.0)


def g1_pull_camera(cfg: Any) -> Camera:
    """From the side, far enough for the robot, the rope (a tendon the model draws) and
    the cart on its rails ahead of or behind it."""
    return TrackingCamera(body="pelvis", distance=3.8, azimuth_deg=100.0, elevation_deg=-12.0)


def g1_walk_markers(env: TaskEnv, sim: int) -> list[Marker]:
    """The commanded velocity as an arrow from the pelvis (1 m per m/s, heading frame
    turned into the world), and the base's actual velocity beside it."""
    pelvis = env.engine.qpos[sim, 0:3]
    heading = env.heading_rot()[sim]
    commanded = heading @ np.array([*env.command[sim, :2], 0.0])
    actual = env.engine.qvel[sim, 0:3] * np.array([1.0, 1.0, 0.0])
    start = pelvis + np.array([0.0, 0.0, 0.35])
    return [
        Segment(tuple(start), tuple(start + commanded), 0.02, TARGET_RGBA, "arrow"),
        Segment(tuple(start), tuple(start + actual), 0.012, PATH_RGBA, "arrow"),
    ]


def dex_track_camera(cfg: Any) -> Camera:
    return TrackingCamera(body="palm", distance=0.6, azimuth_deg=150.0, elevation_deg=-25.0)


def dex_track_markers(env: TaskEnv, sim: int) -> list[Marker]:
    """The reference object pose now, as a translucent ghost of the object's slot geoms."""
    from simreal.tasks.dex_track.objects import SLOTS

    ref_id, frame = env.ref_id[sim], env.frame()[sim]
    pos = env.refs.object_pos[ref_id, frame]
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, env.refs.object_quat[ref_id, frame])
    rot = rot.reshape(3, 3)
    sizes, offsets = env.fields["geom_size"][sim], env.fields["geom_pos"][sim]
    alpha = env.fields["geom_rgba"][sim, :, 3]
    markers: list[Marker] = []
    for (_, kind), geom in zip(SLOTS, env.slot_ids, strict=True):
        if alpha[geom] > 0:
            centre = pos + rot @ offsets[geom]
            markers.append(
                Shape(kind, tuple(sizes[geom]), tuple(centre), TARGET_RGBA, tuple(rot.ravel()))
            )
    return markers


def lane_keep_camera(cfg: Any) -> Camera:
    return TrackingCamera(body="chassis", distance=14.0, azimuth_deg=0.0, elevation_deg=-25.0)


def lane_keep_follow(env: TaskEnv, sim: int) -> Camera:
    """Behind the car, looking along the road (its heading where the car is): a world-fixed
    view would see a winding road from the side half of the time."""
    heading = env.bank.heading[env.road[sim], env.idx[sim]]
    x, y = env.engine.qpos[sim, 0:2]
    return OrbitCamera(
        lookat=(float(x), float(y), 0.5),
        distance=14.0,
        azimuth_deg=float(np.degrees(heading)),
        elevation_deg=-25.0,
    )


LANE_KEEP_VIEW_M = (-20.0, 40.0)
"""The stretch of road drawn, behind and ahead of the car (m)."""


def lane_keep_markers(env: TaskEnv, sim: int) -> list[Marker]:
    """The road near the car: surface, edges, the centre line and the lane's centre (the
    reference the car keeps to), and the obstacles on it."""
    bank, road, idx = env.bank, env.road[sim], env.idx[sim]
    lo, hi = (round(m / bank.ds) for m in LANE_KEEP_VIEW_M)
    step = max(1, round(1.0 / bank.ds))
    rows = np.arange(max(idx + lo, 0), min(idx + hi, bank.xy.shape[1] - 1) + 1, step)
    centre = bank.xy[road, rows]
    heading = bank.heading[road, rows]
    width = bank.lane_width[road, rows, None]
    left = np.stack([-np.sin(heading), np.cos(heading)], axis=1)

    def lifted(xy: np.ndarray, z: float) -> np.ndarray:
        return np.concatenate([xy, np.full((len(xy), 1), z)], axis=1)

    markers: list[Marker] = []
    for a, b, w in zip(centre[:-1], centre[1:], width[:-1, 0], strict=True):
        half = np.linalg.norm(b - a) / 2  # both lanes: w either side of the centre line
        markers.append(Shape("box", (half, w, 0.004), (*(a + b) / 2, 0.004), ROAD_RGBA, yaw(b - a)))
    for side in (1.0, -1.0):
        markers += polyline(lifted(centre + side * width * left, 0.012), 0.08, LINE_RGBA)
    markers += polyline(lifted(centre, 0.012), 0.05, LINE_RGBA)
    markers += polyline(lifted(centre - 0.5 * width * left, 0.015), 0.04, LANE_RGBA)
    near = centre.mean(axis=0)
    for corners, lane in zip(bank.obstacle_corners[road], bank.obstacle_lane[road], strict=True):
        middle = corners.mean(axis=0)
        if lane < 0 or np.linalg.norm(middle - near) > 60.0:
            continue
        edge_a, edge_b = corners[1] - corners[0], corners[2] - corners[1]
        size = (np.linalg.norm(edge_a) / 2, np.linalg.norm(edge_b) / 2, 0.5)
        markers.append(Shape("box", size, (*middle, 0.5), OBSTACLE_RGBA, yaw(edge_a)))
    return markers


def yaw(direction: np.ndarray) -> tuple[float, ...]:
    """Row-major rotation about z turning +x onto the planar `direction`."""
    angle = np.arctan2(direction[1], direction[0])
    c, s = np.cos(angle), np.sin(angle)
    return (c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0)


def quad_replan_camera(cfg: Any) -> Camera:
    lo, hi = np.array(cfg.box.low), np.array(cfg.box.high)
    return OrbitCamera(
        lookat=tuple(0.5 * (lo + hi)),
        distance=1.2 * float(np.linalg.norm(hi - lo)),
        azimuth_deg=120.0,
        elevation_deg=-35.0,
    )


def quad_replan_markers(env: TaskEnv, sim: int) -> list[Marker]:
    """The waypoints of the plan being flown, joined in order."""
    points = env.shown_waypoints[sim]
    spheres = [Shape("sphere", (0.06,), tuple(p), TARGET_RGBA) for p in points]
    return [*polyline(points, 0.008, PATH_RGBA), *spheres]


def polyline(points: np.ndarray, width: float, rgba: tuple[float, ...]) -> list[Marker]:
    """Capsules joining consecutive points (K, 3)."""
    return [Segment(tuple(a), tuple(b), width, rgba) for a, b in itertools.pairwise(points)]


VIDEO_SPECS: dict[str, VideoSpec] = {
    "quad-hover": VideoSpec(quad_hover_camera, quad_hover_markers),
    "quad-track": VideoSpec(quad_track_camera, quad_track_markers),
    "quad-replan": VideoSpec(quad_replan_camera, quad_replan_markers),
    "quad-swarm": VideoSpec(quad_swarm_camera, quad_swarm_markers, model_fields=("geom_pos",)),
    "g1-force": VideoSpec(g1_camera),
    "g1-pull": VideoSpec(g1_pull_camera),
    "g1-walk": VideoSpec(g1_camera, g1_walk_markers),
    "dex-track": VideoSpec(
        dex_track_camera,
        dex_track_markers,
        model_fields=("geom_size", "geom_pos", "geom_rgba"),
    ),
    "lane-keep": VideoSpec(lane_keep_camera, lane_keep_markers, follow=lane_keep_follow),
}


def video_spec(task: str) -> VideoSpec:
    """The task's video spec; a task without one cannot be filmed (named in the error)."""
    if task not in VIDEO_SPECS:
        raise ValueError(
            f"--video: task {task!r} has no video spec (tasks/video.py); tasks with one: "
            f"{', '.join(sorted(VIDEO_SPECS))}"
        )
    return VIDEO_SPECS[task]
