"""Hand-object reference motions: the `.npz` format, its loader and resampling.

A reference is a time series at a fixed rate of the wrist pose, the 16 finger joint
angles and the object pose, plus which object it manipulates. One `.npz` file holds one
reference with these fields (T frames, the first at t = 0):

| field | shape | meaning |
|---|---|---|
| `rate_hz` | () | frames per second; must equal the task's control rate (resample otherwise) |
| `wrist_pos` | (T, 3) | wrist frame origin in the world (m); the world is z up, the table top is z = 0 |
| `wrist_quat` | (T, 4) | world-from-wrist orientation, unit quaternion (w, x, y, z) |
| `finger_pos` | (T, 16) | finger joint angles (rad) in the hand's order ffj0..ffj3, mfj0.., rfj0.., thj0..thj3 |
| `object_pos` | (T, 3) | object frame origin in the world (m) |
| `object_quat` | (T, 4) | world-from-object orientation, unit quaternion (w, x, y, z) |
| `object_type` | () str | one of `objects.OBJECT_TYPES` |
| `object_dims` | (4,) | the object's dimensions (m), as `objects.py` defines them per type |
| `motion` | () str | optional label (lift, rotate, ...; `custom` when absent) |

The wrist frame is the hand's mount (`simreal.robots.allegro`: at the base of the palm,
x along the fingers, z away from the palm side). Retargeted human data (GRAB, TACO and
the like) fits once it is expressed in these frames for this hand and a listed object.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from simreal.tasks.dex_track.objects import check_dims
from simreal.tasks.rotations import quat_slerp

TRAJECTORY_FIELDS = {
    "wrist_pos": 3,
    "wrist_quat": 4,
    "finger_pos": 16,
    "object_pos": 3,
    "object_quat": 4,
}
REQUIRED_FIELDS = ("rate_hz", *TRAJECTORY_FIELDS, "object_type", "object_dims")
UNIT_QUAT_TOLERANCE = 1e-3


class ReferenceError(ValueError):
    """A reference file that does not follow the format; the message names the field."""


@dataclass
class Reference:
    rate_hz: float
    wrist_pos: np.ndarray
    wrist_quat: np.ndarray
    finger_pos: np.ndarray
    object_pos: np.ndarray
    object_quat: np.ndarray
    object_type: str
    object_dims: np.ndarray
    motion: str = "custom"
    name: str = ""

    @property
    def num_frames(self) -> int:
        return self.wrist_pos.shape[0]

    @property
    def duration_s(self) -> float:
        return (self.num_frames - 1) / self.rate_hz


def save_reference(path: Path | str, ref: Reference) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path,
        rate_hz=np.float64(ref.rate_hz),
        **{name: np.asarray(getattr(ref, name), dtype=np.float32) for name in TRAJECTORY_FIELDS},
        object_type=np.str_(ref.object_type),
        object_dims=np.asarray(ref.object_dims, dtype=np.float64),
        motion=np.str_(ref.motion),
    )
    return path


def load_reference(
    path: Path | str, rate_hz: float | None = None, resample: bool = False
) -> Reference:
    """Read and check one reference file.

    rate_hz: the task's control rate; a file at another rate is an error unless
    `resample` is set, in which case it is resampled (`resample_reference`).
    """
    path = Path(path)
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ReferenceError(f"{path}: not a readable .npz reference file ({err})") from None
    with data:
        missing = [name for name in REQUIRED_FIELDS if name not in data.files]
        if missing:
            raise ReferenceError(
                f"{path}: missing field {missing[0]!r} (a reference needs {list(REQUIRED_FIELDS)})"
            )
        fields = {name: data[name] for name in data.files}
    ref = reference_from_arrays(fields, str(path))
    ref.name = path.stem
    if rate_hz is not None and not np.isclose(ref.rate_hz, rate_hz):
        if not resample:
            raise ReferenceError(
                f"{path}: field 'rate_hz' is {ref.rate_hz:g} Hz but the task runs at {rate_hz:g} "
                "Hz; resample it (load_reference(..., resample=True), "
                "resample_reference(ref, rate_hz), or `simreal dex references --resample`)"
            )
        ref = resample_reference(ref, rate_hz)
    return ref


def reference_from_arrays(fields: dict[str, np.ndarray], where: str) -> Reference:
    """A checked Reference from named arrays; errors name `where` and the field."""
    rate = np.asarray(fields["rate_hz"], dtype=float)
    if rate.shape != () or not np.isfinite(rate) or rate <= 0:
        raise ReferenceError(f"{where}: field 'rate_hz' must be one positive number, got {rate}")
    arrays = {}
    frames = None
    for name, width in TRAJECTORY_FIELDS.items():
        a = np.asarray(fields[name], dtype=float)
        if a.ndim != 2 or a.shape[1] != width or (frames is not None and a.shape[0] != frames):
            expected = f"({frames if frames is not None else 'T'}, {width})"
            raise ReferenceError(
                f"{where}: field {name!r} has shape {a.shape}, expected {expected}"
            )
        frames = a.shape[0]
        if not np.all(np.isfinite(a)):
            raise ReferenceError(f"{where}: field {name!r} holds non-finite values")
        arrays[name] = a
    if frames < 2:
        raise ReferenceError(f"{where}: field 'wrist_pos' has {frames} frame(s); need at least 2")
    for name in ("wrist_quat", "object_quat"):
        norm = np.linalg.norm(arrays[name], axis=1)
        bad = np.flatnonzero(np.abs(norm - 1.0) > UNIT_QUAT_TOLERANCE)
        if bad.size:
            raise ReferenceError(
                f"{where}: field {name!r} frame {bad[0]} has norm {norm[bad[0]]:.6f}; "
                "quaternions must be unit length (w, x, y, z)"
            )
        arrays[name] = arrays[name] / norm[:, None]
    kind = str(np.asarray(fields["object_type"]))
    try:
        check_dims(kind, np.asarray(fields["object_dims"], dtype=float), where)
    except ValueError as err:
        raise ReferenceError(str(err)) from None
    motion = str(np.asarray(fields["motion"])) if "motion" in fields else "custom"
    return Reference(
        float(rate),
        **arrays,
        object_type=kind,
        object_dims=np.asarray(fields["object_dims"], dtype=float),
        motion=motion,
    )


def resample_reference(ref: Reference, rate_hz: float) -> Reference:
    """The same motion at `rate_hz`: positions and angles interpolated linearly,
    orientations by slerp, over the same duration (the last frame at or before its end)."""
    t_old = np.arange(ref.num_frames) / ref.rate_hz
    t_new = np.arange(int(np.floor(ref.duration_s * rate_hz + 1e-9)) + 1) / rate_hz
    idx = np.clip(np.searchsorted(t_old, t_new, side="right") - 1, 0, ref.num_frames - 2)
    frac = np.clip((t_new - t_old[idx]) * ref.rate_hz, 0.0, 1.0)

    def lerp(a: np.ndarray) -> np.ndarray:
        return a[idx] + (a[idx + 1] - a[idx]) * frac[:, None]

    def slerp(q: np.ndarray) -> np.ndarray:
        return quat_slerp(q[idx], q[idx + 1], frac)

    return replace(
        ref,
        rate_hz=float(rate_hz),
        wrist_pos=lerp(ref.wrist_pos),
        wrist_quat=slerp(ref.wrist_quat),
        finger_pos=lerp(ref.finger_pos),
        object_pos=lerp(ref.object_pos),
        object_quat=slerp(ref.object_quat),
    )


def fit_length(ref: Reference, frames: int) -> Reference:
    """`ref` with exactly `frames` frames: a shorter one holds its last frame (the motion
    is over and the hand keeps still); a longer one is an error naming it."""
    if ref.num_frames > frames:
        raise ReferenceError(
            f"{ref.name or 'reference'}: {ref.num_frames} frames exceed the task's episode of "
            f"{frames} frames; raise task.episode_frames or cut the reference"
        )
    pad = frames - ref.num_frames
    if pad == 0:
        return ref
    return replace(
        ref,
        **{
            name: np.concatenate([getattr(ref, name), np.repeat(getattr(ref, name)[-1:], pad, 0)])
            for name in TRAJECTORY_FIELDS
        },
    )
