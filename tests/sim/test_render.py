"""Offscreen rendering to MP4 on a headless machine (packages in .ci/apt-packages.txt)."""

from __future__ import annotations

import imageio.v2 as imageio
import mujoco
import numpy as np
import pytest

from simreal.robots.crazyflie import build_mjcf
from simreal.sim.render import OrbitCamera, Segment, Shape, TrackingCamera, VideoRecorder

NUM_FRAMES = 30
WIDTH, HEIGHT = 640, 480


def test_video_of_rising_drone(tmp_path):
    mjcf = build_mjcf()
    path = tmp_path / "hover.mp4"
    camera = TrackingCamera(body="base")
    with VideoRecorder(mjcf, width=WIDTH, height=HEIGHT, fps=30, camera=camera) as recorder:
        qpos = np.zeros(recorder.model.nq)
        qpos[3] = 1.0  # identity quaternion (w, x, y, z)
        for z in np.linspace(0.0125, 1.0, NUM_FRAMES):
            qpos[2] = z
            recorder.add_frame(qpos)
        assert recorder.save(path) == NUM_FRAMES

    assert not list(tmp_path.glob(".*tmp*")), "temporary file left behind"
    frames = np.stack(imageio.mimread(path, format="FFMPEG", memtest=False))
    assert frames.shape == (NUM_FRAMES, HEIGHT, WIDTH, 3)
    assert frames[0].std() > 5.0, "first frame is one colour"
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).mean() > 2.0


def test_frame_larger_than_model_buffer_enlarges_a_copy():
    model = mujoco.MjModel.from_xml_string(build_mjcf())
    with VideoRecorder(model, width=800, height=600) as recorder:
        recorder.add_frame(model.qpos0)
        assert recorder.frames[0].shape == (600, 800, 3)
    assert (model.vis.global_.offwidth, model.vis.global_.offheight) == (640, 480)


def test_named_model_camera():
    mjcf = build_mjcf().replace(
        "<worldbody>",
        '<worldbody>\n    <camera name="side" pos="0 -1.5 0.5" xyaxes="1 0 0 0 0.3 1"/>',
    )
    with VideoRecorder(mjcf, width=64, height=48, camera="side") as recorder:
        recorder.add_frame(recorder.model.qpos0)
        assert recorder.frames[0].std() > 5.0


def test_default_camera_frames_the_whole_model():
    with VideoRecorder(build_mjcf(), width=64, height=48) as recorder:
        recorder.add_frame(recorder.model.qpos0)
        assert recorder.frames[0].std() > 5.0


def test_markers_are_drawn_where_they_are_placed():
    camera = OrbitCamera(lookat=(0.0, 0.0, 0.5), distance=2.0, elevation_deg=-10.0)
    target = Shape("sphere", (0.15,), (0.0, 0.0, 0.5), (0.0, 1.0, 0.0, 1.0))
    path = Segment((-0.5, 0.0, 0.8), (0.5, 0.0, 0.8), 0.03, (0.0, 0.0, 1.0, 1.0))
    behind = Shape("sphere", (0.15,), (0.0, 0.0, -5.0), (0.0, 1.0, 0.0, 1.0))
    with VideoRecorder(build_mjcf(), width=64, height=48, camera=camera) as recorder:
        qpos = recorder.model.qpos0
        for markers in ((), (target, path), (behind,)):
            recorder.add_frame(qpos, markers=markers)
    bare, marked, hidden = (frame.astype(int) for frame in recorder.frames)
    green = (marked[..., 1] > 150) & (marked[..., 0] < 80) & (marked[..., 2] < 80)
    assert green.sum() > 20, "the target sphere is not in the picture"
    assert np.abs(hidden - bare).max() < 30, "a marker under the floor shows"


def test_unknown_marker_geom_and_model_field_are_named():
    with VideoRecorder(build_mjcf(), width=64, height=48) as recorder:
        qpos = recorder.model.qpos0
        with pytest.raises(ValueError, match="unknown marker geom 'cube'"):
            recorder.add_frame(qpos, markers=[Shape("cube", (0.1,), (0, 0, 0), (1, 0, 0, 1))])
        with pytest.raises(ValueError, match="no array field 'geom_sizes'"):
            recorder.set_model_fields({"geom_sizes": np.zeros(3)})
