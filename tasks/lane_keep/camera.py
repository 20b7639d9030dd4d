"""The car's optional forward camera: a MuJoCo scene of one road, rendered offscreen.

The batched training model holds only the car (roads differ per simulation and live
in NumPy); for an image, the road of one simulation is built as static geoms (asphalt
pieces, edge lines, the dashed centre line, obstacles) into a model of its own, cached
per road, and the car is posed there from the simulation's state. One render per call:
this is for the semantic channel's BLIP provider and for looking, never the hot path.
"""

from __future__ import annotations

import mujoco
import numpy as np

from simreal.robots.car import build_mjcf
from simreal.tasks.lane_keep.roads import OBSTACLE_KINDS, RoadBank

PIECE_M = 4.0


def road_xml(bank: RoadBank, b: int) -> str:
    """Static geoms of road `b` of the bank."""
    stride = max(round(PIECE_M / bank.ds), 1)
    xy, th, w = bank.xy[b], bank.heading[b], bank.lane_width[b]
    geoms = []
    for k, i in enumerate(range(0, xy.shape[0] - stride, stride)):
        mid = 0.5 * (xy[i] + xy[i + stride])
        yaw = th[i + stride // 2]
        half = 0.5 * np.linalg.norm(xy[i + stride] - xy[i]) + 0.05
        nrm = np.array([-np.sin(yaw), np.cos(yaw)])
        quat = f"{np.cos(yaw / 2):.6f} 0 0 {np.sin(yaw / 2):.6f}"
        wi = w[i + stride // 2]

        def box(centre, half_w, z, rgba, half_len=half, quat=quat):
            return (
                f'    <geom type="box" pos="{centre[0]:.3f} {centre[1]:.3f} {z}" quat="{quat}" '
                f'size="{half_len:.3f} {half_w:.3f} 0.005" rgba="{rgba}" contype="0" '
                'conaffinity="0"/>'
            )

        geoms.append(box(mid, wi + 0.5, 0.005, "0.25 0.25 0.27 1"))
        for side in (1.0, -1.0):
            geoms.append(box(mid + side * (wi - 0.08) * nrm, 0.06, 0.012, "0.95 0.95 0.95 1"))
        if k % 2 == 0:
            geoms.append(box(mid, 0.06, 0.012, "0.95 0.8 0.1 1"))
    for corners, kind in zip(bank.obstacle_corners[b], bank.obstacles[b, :, 2], strict=True):
        if kind < 0:
            continue
        centre = corners.mean(axis=0)
        edge = corners[0] - corners[3]
        yaw = np.arctan2(edge[1], edge[0])
        hl, hw = (
            0.5 * np.linalg.norm(corners[0] - corners[3]),
            0.5 * np.linalg.norm(corners[1] - corners[0]),
        )
        if OBSTACLE_KINDS[int(kind)] == "cone":
            geoms.append(
                f'    <geom type="cylinder" pos="{centre[0]:.3f} {centre[1]:.3f} 0.35" '
                f'size="{hw:.3f} 0.35" rgba="1 0.45 0 1" contype="0" conaffinity="0"/>'
            )
        else:
            geoms.append(
                f'    <geom type="box" pos="{centre[0]:.3f} {centre[1]:.3f} 0.7" '
                f'quat="{np.cos(yaw / 2):.6f} 0 0 {np.sin(yaw / 2):.6f}" '
                f'size="{hl:.3f} {hw:.3f} 0.7" rgba="0.7 0.1 0.1 1" contype="0" conaffinity="0"/>'
            )
    return "\n".join(geoms)


def render_forward(env, i: int, width: int, height: int) -> np.ndarray:
    """(height, width, 3) uint8 image from the front camera of simulation `i`."""
    cache = env.__dict__.setdefault("_camera_models", {})
    b = int(env.road[i])
    if b not in cache:
        model = mujoco.MjModel.from_xml_string(
            build_mjcf(env.params, env.engine.physics_dt, road_xml(env.bank, b))
        )
        model.vis.global_.offwidth = max(width, model.vis.global_.offwidth)
        model.vis.global_.offheight = max(height, model.vis.global_.offheight)
        cache[b] = (model, mujoco.MjData(model))
    model, data = cache[b]
    data.qpos[:] = env.engine.qpos[i]
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, height, width) as renderer:
        renderer.update_scene(data, camera="front")
        return renderer.render()
