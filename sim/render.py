"""Offscreen video of one simulation through MuJoCo's renderer, on machines without a display.

MuJoCo chooses its OpenGL backend from MUJOCO_GL when its GL context module is imported
(which `import mujoco` does), and PyOpenGL chooses its platform from PYOPENGL_PLATFORM the
first time it is imported. A Renderer creates its GL context from those choices, so
`select_gl_backend` must run before the first Renderer: unset, MUJOCO_GL means GLFW,
which needs an X display and fails on a headless machine.
"""

from __future__ import annotations

import copy
import importlib
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import imageio.v2 as imageio
import mujoco
import numpy as np

HEADLESS_GL_BACKENDS: dict[str, tuple[str, ...]] = {
    "egl": ("libegl1", "libegl-mesa0", "libgl1-mesa-dri", "libopengl0"),
    "osmesa": ("libosmesa6",),
}
"""Headless backends in order of preference, with the Debian packages each needs.

Both render on the CPU with Mesa's llvmpipe when there is no GPU; EGL also uses a GPU
when one is present. The list in .ci/apt-packages.txt is the EGL one.
"""

_PROBE = (
    "import mujoco\n"
    "with mujoco.Renderer(mujoco.MjModel.from_xml_string('<mujoco/>'), 16, 16) as r:\n"
    "    r.render()\n"
)


def select_gl_backend() -> str:
    """Return the GL backend mujoco renders with, choosing a headless one if MUJOCO_GL is unset.

    An explicit MUJOCO_GL is kept. Otherwise EGL, then OSMesa, is tried in a subprocess
    (a broken driver may crash rather than raise), and the first that renders is written
    to MUJOCO_GL and PYOPENGL_PLATFORM. If mujoco was already imported, its GL context
    module is re-imported so that Renderers created from now on use the choice.
    """
    backend = os.environ.get("MUJOCO_GL", "").strip().lower()
    if not backend:
        errors = {}
        for candidate in HEADLESS_GL_BACKENDS:
            errors[candidate] = _probe_backend(candidate)
            if not errors[candidate]:
                backend = candidate
                break
        else:
            raise RuntimeError(_no_backend_message(errors))
        os.environ["MUJOCO_GL"] = backend
        os.environ["PYOPENGL_PLATFORM"] = backend
    elif backend in HEADLESS_GL_BACKENDS:
        os.environ.setdefault("PYOPENGL_PLATFORM", backend)
    _bind_mujoco_gl(backend)
    return backend


def _probe_backend(backend: str) -> str:
    """Render one tiny frame with `backend` in a fresh interpreter; return its error or ''."""
    env = {**os.environ, "MUJOCO_GL": backend, "PYOPENGL_PLATFORM": backend}
    try:
        result = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        return "timed out"
    if result.returncode == 0:
        return ""
    lines = result.stderr.strip().splitlines() or [f"exit status {result.returncode}"]
    return lines[-1]


def _no_backend_message(errors: dict[str, str]) -> str:
    tried = "; ".join(f"{name}: {error}" for name, error in errors.items())
    egl = " ".join(HEADLESS_GL_BACKENDS["egl"])
    osmesa = " ".join(HEADLESS_GL_BACKENDS["osmesa"])
    return (
        f"no headless OpenGL backend works for MuJoCo ({tried}). On Debian/Ubuntu install "
        f"EGL with Mesa's software renderer: apt-get install {egl} "
        f"(or OSMesa: apt-get install {osmesa}), or set MUJOCO_GL to a backend that works"
    )


def _bind_mujoco_gl(backend: str) -> None:
    """Make Renderers created from now on use `backend`, even if mujoco is already imported.

    mujoco's GL context module read MUJOCO_GL when mujoco was imported (this module imports
    mujoco too), so it is re-imported with the new value. If that first import failed (no
    GLFW library), mujoco.Renderer is missing and is imported now.
    """
    gl_context = sys.modules.get("mujoco.rendering.classic.gl_context")
    context_class = getattr(gl_context, "GLContext", None)
    if gl_context is not None and (
        backend not in HEADLESS_GL_BACKENDS
        or (context_class is not None and context_class.__module__ == f"mujoco.{backend}")
    ):
        return
    platform = sys.modules.get("OpenGL.platform")
    loaded = type(platform.PLATFORM).__module__ if platform else ""
    if loaded and loaded != f"OpenGL.platform.{backend}":
        raise RuntimeError(
            f"PyOpenGL is already loaded for {loaded}; set MUJOCO_GL={backend} and "
            f"PYOPENGL_PLATFORM={backend} before the process imports mujoco or OpenGL"
        )
    if gl_context is None:
        gl_context = importlib.import_module("mujoco.rendering.classic.gl_context")
    else:
        importlib.reload(gl_context)
    renderer = importlib.import_module("mujoco.rendering.classic.renderer")
    mujoco.GLContext = gl_context.GLContext
    mujoco.Renderer = renderer.Renderer


@dataclass(frozen=True)
class TrackingCamera:
    """A free camera that follows a body, placed in spherical coordinates around it."""

    body: str
    distance: float = 1.5
    """Metres from the body's subtree centre of mass."""
    azimuth_deg: float = 135.0
    elevation_deg: float = -20.0
    """Negative looks down on the body."""


@dataclass(frozen=True)
class OrbitCamera:
    """A free camera looking at a fixed point, placed in spherical coordinates around it:
    a scene whose parts move apart (a swarm, a path) framed as a whole."""

    lookat: tuple[float, float, float]
    distance: float
    azimuth_deg: float = 135.0
    elevation_deg: float = -30.0


Camera = TrackingCamera | OrbitCamera | str
"""A camera of the model by name, or a free camera; None frames the whole model (MuJoCo's
default free camera, from the model's extent)."""


@dataclass(frozen=True)
class Shape:
    """A decoration drawn into one frame and not part of the model: a target, a ghost."""

    geom: str
    """MuJoCo geom type name: sphere, box, cylinder, capsule, ellipsoid."""
    size: tuple[float, ...]
    """MuJoCo geom size (half extents, radius...), padded to 3 numbers."""
    pos: tuple[float, ...]
    rgba: tuple[float, float, float, float]
    mat: tuple[float, ...] | None = None
    """Orientation as a row-major 3x3 rotation matrix; None: the world's axes."""


@dataclass(frozen=True)
class Segment:
    """A decoration between two points: a path piece (capsule) or a force (arrow)."""

    start: tuple[float, float, float]
    end: tuple[float, float, float]
    width: float
    rgba: tuple[float, float, float, float]
    geom: str = "capsule"
    """capsule, cylinder, arrow, or line (width in pixels)."""


Marker = Shape | Segment


class VideoRecorder:
    """Renders frames of one simulation's state and writes them as an H.264 MP4.

    `camera` is a camera of the model by name, a TrackingCamera or an OrbitCamera; None
    frames the whole model. Frames are held in memory (width * height * 3 bytes each)
    until `save`.
    """

    def __init__(
        self,
        model: mujoco.MjModel | str,
        width: int = 640,
        height: int = 480,
        fps: float = 30.0,
        camera: Camera | None = None,
    ) -> None:
        if width % 2 or height % 2:
            raise ValueError(f"H.264 (4:2:0) needs an even frame size, got {width}x{height}")
        select_gl_backend()
        if isinstance(model, str):
            model = mujoco.MjModel.from_xml_string(model)
        else:
            model = copy.copy(model)  # enlarging its offscreen buffer must not touch the caller's
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        self.model = model
        self.data = mujoco.MjData(model)
        self.fps = fps
        self.camera = _make_camera(model, camera)
        self.frames: list[np.ndarray] = []
        self._renderer = mujoco.Renderer(model, height, width)

    def set_camera(self, camera: Camera | None) -> None:
        """Film the next frames through `camera` (a camera that moves with the scene)."""
        self.camera = _make_camera(self.model, camera)

    def set_model_fields(self, fields: dict[str, np.ndarray]) -> None:
        """Overwrite model fields (e.g. geom_size, geom_pos, geom_rgba) with one
        simulation's values: a batched engine varies them per simulation (an object's
        shape, where obstacles stand) while the recorder's model holds the compiled ones."""
        for name, values in fields.items():
            target = getattr(self.model, name, None)
            if not isinstance(target, np.ndarray):
                raise ValueError(f"the model has no array field {name!r}")
            target[...] = np.asarray(values).reshape(target.shape)

    def add_frame(
        self,
        qpos: np.ndarray,
        qvel: np.ndarray | None = None,
        markers: Sequence[Marker] = (),
    ) -> None:
        """Render the state (qpos (nq,), qvel (nv,), zero if None) of one simulation, with
        `markers` drawn into the scene."""
        self.data.qpos[:] = qpos
        self.data.qvel[:] = 0.0 if qvel is None else qvel
        mujoco.mj_forward(self.model, self.data)
        self._renderer.update_scene(self.data, self.camera)
        _draw_markers(self._renderer.scene, markers)
        self.frames.append(self._renderer.render())

    def save(self, path: str | os.PathLike[str]) -> int:
        """Write the frames to `path` as MP4 and return how many there were.

        The video is written next to `path` and renamed onto it, so a reader never sees
        a half-written file.
        """
        if not self.frames:
            raise ValueError("no frames to save")
        path = Path(path)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix or '.mp4'}")
        try:
            with imageio.get_writer(
                tmp,
                format="FFMPEG",
                fps=self.fps,
                codec="libx264",
                quality=7,
                macro_block_size=2,
                ffmpeg_log_level="error",
            ) as writer:
                for frame in self.frames:
                    writer.append_data(frame)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return len(self.frames)

    def close(self) -> None:
        """Free the GL context; the recorder cannot render afterwards."""
        self._renderer.close()

    def __enter__(self) -> VideoRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _make_camera(model: mujoco.MjModel, camera: Camera | None) -> mujoco.MjvCamera:
    cam = mujoco.MjvCamera()
    if camera is None:
        mujoco.mjv_defaultFreeCamera(model, cam)
        return cam
    if isinstance(camera, str):
        cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        cam.fixedcamid = _name_to_id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        return cam
    if isinstance(camera, TrackingCamera):
        cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
        cam.trackbodyid = _name_to_id(model, mujoco.mjtObj.mjOBJ_BODY, camera.body)
    else:
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.lookat[:] = camera.lookat
    cam.distance = camera.distance
    cam.azimuth = camera.azimuth_deg
    cam.elevation = camera.elevation_deg
    return cam


_IDENTITY = np.eye(3).ravel()


def _geom_type(name: str) -> int:
    try:
        return int(getattr(mujoco.mjtGeom, f"mjGEOM_{name.upper()}"))
    except AttributeError:
        raise ValueError(f"unknown marker geom {name!r}") from None


def _draw_markers(scene: mujoco.MjvScene, markers: Sequence[Marker]) -> None:
    """Append `markers` to a scene that update_scene has filled."""
    if scene.ngeom + len(markers) > scene.maxgeom:
        raise ValueError(
            f"{len(markers)} markers do not fit in the scene ({scene.ngeom} of "
            f"{scene.maxgeom} geoms used)"
        )
    for marker in markers:
        geom = scene.geoms[scene.ngeom]
        rgba = np.asarray(marker.rgba, dtype=np.float32)
        if isinstance(marker, Segment):
            kind = _geom_type(marker.geom)
            mujoco.mjv_initGeom(geom, kind, np.zeros(3), np.zeros(3), _IDENTITY, rgba)
            start = np.asarray(marker.start, dtype=np.float64)
            end = np.asarray(marker.end, dtype=np.float64)
            mujoco.mjv_connector(geom, kind, marker.width, start, end)
        else:
            size = np.zeros(3)
            size[: len(marker.size)] = marker.size
            mat = _IDENTITY if marker.mat is None else np.asarray(marker.mat, dtype=np.float64)
            pos = np.asarray(marker.pos, dtype=np.float64)
            mujoco.mjv_initGeom(geom, _geom_type(marker.geom), size, pos, mat, rgba)
        geom.category = mujoco.mjtCatBit.mjCAT_DECOR
        scene.ngeom += 1


def _name_to_id(model: mujoco.MjModel, kind: mujoco.mjtObj, name: str) -> int:
    index = mujoco.mj_name2id(model, kind, name)
    if index < 0:
        raise ValueError(f"the model has no {kind.name.removeprefix('mjOBJ_').lower()} {name!r}")
    return index
