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
    """A free camera that follows a body, placed in spherical coordinates around it.

    The defaults frame a 10 cm quadrotor from 1.5 m, a little from above and to the side.
    """

    body: str = "base"
    distance: float = 1.5
    """Metres from the body's subtree centre of mass."""
    azimuth_deg: float = 135.0
    elevation_deg: float = -20.0
    """Negative looks down on the body."""


class VideoRecorder:
    """Renders frames of one simulation's state and writes them as an H.264 MP4.

    `camera` is a TrackingCamera or the name of a camera in the model. Frames are held
    in memory (width * height * 3 bytes each) until `save`.
    """

    def __init__(
        self,
        model: mujoco.MjModel | str,
        width: int = 640,
        height: int = 480,
        fps: float = 30.0,
        camera: TrackingCamera | str | None = None,
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
        self.camera = _make_camera(model, camera or TrackingCamera())
        self.frames: list[np.ndarray] = []
        self._renderer = mujoco.Renderer(model, height, width)

    def add_frame(self, qpos: np.ndarray, qvel: np.ndarray | None = None) -> None:
        """Render the state (qpos (nq,), qvel (nv,), zero if None) of one simulation."""
        self.data.qpos[:] = qpos
        self.data.qvel[:] = 0.0 if qvel is None else qvel
        mujoco.mj_forward(self.model, self.data)
        self._renderer.update_scene(self.data, self.camera)
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


def _make_camera(model: mujoco.MjModel, camera: TrackingCamera | str) -> mujoco.MjvCamera:
    cam = mujoco.MjvCamera()
    if isinstance(camera, str):
        cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        cam.fixedcamid = _name_to_id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        return cam
    cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    cam.trackbodyid = _name_to_id(model, mujoco.mjtObj.mjOBJ_BODY, camera.body)
    cam.distance = camera.distance
    cam.azimuth = camera.azimuth_deg
    cam.elevation = camera.elevation_deg
    return cam


def _name_to_id(model: mujoco.MjModel, kind: mujoco.mjtObj, name: str) -> int:
    index = mujoco.mj_name2id(model, kind, name)
    if index < 0:
        raise ValueError(f"the model has no {kind.name.removeprefix('mjOBJ_').lower()} {name!r}")
    return index
