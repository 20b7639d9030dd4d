"""Sets of references: generated train/held-out splits, a directory format, and the
stacked arrays the environment indexes.

Split rule: training references come from seed stream (seed, 0, i) and use every object
type except the held-out types; held-out references come from stream (seed, 1, j) and
cycle through all types, the held-out ones included. So a held-out reference is new by
its seed (new sizes, poses, paths and timing) and, for the held-out types, by its object.

A dataset directory holds `train/*.npz`, `heldout/*.npz` (one reference per file,
`references.py` format) and `manifest.json` (the command's parameters, every reference
with its split, and the infeasible ones with their reasons, which get no file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simreal.robots.allegro import FINGERTIP_SITES
from simreal.tasks.dex_track import objects as ob
from simreal.tasks.dex_track.frames import wrist_joints
from simreal.tasks.dex_track.generator import MOTIONS, generate_reference
from simreal.tasks.dex_track.grasp import check_feasible, kinematic_scene
from simreal.tasks.dex_track.references import (
    Reference,
    fit_length,
    load_reference,
    save_reference,
)

SPLITS = ("train", "heldout")


@dataclass
class Rejected:
    name: str
    reason: str


def _plan(split: str, count: int, heldout_types: tuple[str, ...]) -> list[tuple[str, str]]:
    kinds = [k for k in ob.OBJECT_TYPES if split == "heldout" or k not in heldout_types]
    return [
        (kinds[i % len(kinds)], MOTIONS[(i // len(kinds)) % len(MOTIONS)]) for i in range(count)
    ]


def generate_split(
    split: str,
    count: int,
    seed: int,
    heldout_types: tuple[str, ...],
    rate_hz: float,
    frames: int,
) -> tuple[list[Reference], list[Rejected]]:
    """`count` generation attempts of split `split`; the feasible references and the rest."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    unknown = set(heldout_types) - set(ob.OBJECT_TYPES)
    if unknown:
        raise ValueError(f"heldout_types: unknown {sorted(unknown)}; known {list(ob.OBJECT_TYPES)}")
    stream = SPLITS.index(split)
    refs, rejected = [], []
    for i, (kind, motion) in enumerate(_plan(split, count, heldout_types)):
        name = f"{split}_{i:05d}_{kind}_{motion}"
        g = generate_reference(
            np.random.default_rng([seed, stream, i]), kind, motion, rate_hz, frames
        )
        if g.reference is None or not g.feasibility.ok:
            rejected.append(Rejected(name, g.feasibility.reason))
            continue
        g.reference.name = name
        refs.append(g.reference)
    return refs, rejected


def write_dataset(
    out: Path,
    count: int,
    heldout_count: int,
    seed: int,
    heldout_types: tuple[str, ...],
    rate_hz: float,
    frames: int,
) -> dict:
    """Generate both splits into `out`; returns (and writes) the manifest."""
    manifest: dict = {
        "seed": seed,
        "rate_hz": rate_hz,
        "frames": frames,
        "heldout_types": list(heldout_types),
        "references": [],
        "infeasible": [],
    }
    for split, n in (("train", count), ("heldout", heldout_count)):
        refs, rejected = generate_split(split, n, seed, heldout_types, rate_hz, frames)
        for ref in refs:
            save_reference(out / split / f"{ref.name}.npz", ref)
            manifest["references"].append(
                {
                    "file": f"{split}/{ref.name}.npz",
                    "split": split,
                    "object_type": ref.object_type,
                    "motion": ref.motion,
                }
            )
        manifest["infeasible"] += [{"name": r.name, "reason": r.reason} for r in rejected]
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def load_split(
    directory: Path, split: str, rate_hz: float, frames: int, resample: bool = False
) -> tuple[list[Reference], list[Rejected]]:
    """Every reference of `split` in a dataset directory, each checked for feasibility
    (interpenetration; users' files have no known grasp frame); infeasible ones are
    returned apart, not loaded."""
    if not Path(directory).is_dir():
        raise FileNotFoundError(
            f"task.references={str(directory)!r}: no such dataset directory; write one with "
            f"`simreal dex references --out {directory}`, or set task.references= (empty) to "
            "generate the references in-process from task.reference_seed"
        )
    files = sorted((Path(directory) / split).glob("*.npz"))
    if not files:
        raise FileNotFoundError(f"{directory}/{split}: no .npz reference files")
    refs, rejected = [], []
    for path in files:
        ref = fit_length(load_reference(path, rate_hz, resample), frames)
        check = check_feasible(ref)
        if check.ok:
            refs.append(ref)
        else:
            rejected.append(Rejected(str(path), check.reason))
    return refs, rejected


@dataclass
class StackedReferences:
    """R references of T frames, as arrays (R, T, ...) the environment indexes."""

    names: list[str]
    wrist_joints: np.ndarray
    """(R, T, 6) wrist joint targets (x, y, z, roll, pitch, yaw) that realize the wrist pose."""
    finger_pos: np.ndarray
    object_pos: np.ndarray
    object_quat: np.ndarray
    tip_pos: np.ndarray
    """(R, T, 4, 3) fingertip positions of the reference hand (forward kinematics)."""
    object_type: np.ndarray
    """(R,) index into objects.OBJECT_TYPES."""
    object_dims: np.ndarray
    motion: np.ndarray
    """(R,) index into generator.MOTIONS (-1 for custom motions)."""
    grip: np.ndarray
    """(R, T) in [0, 1]: how closed the reference hand is, its mean flexion (the flexing
    joints: 1-3 of the long fingers, 2-3 of the thumb) between its own least and most."""
    grip: np.ndarray
    """(R, T) in [0, 1]: how closed the reference hand is, its mean flexion (the flexing
    joints: 1-3 of the long fingers, 2-3 of the thumb) between its own least and most."""

    @property
    def count(self) -> int:
        return len(self.names)


def stack(refs: list[Reference]) -> StackedReferences:
    if not refs:
        raise ValueError("no feasible references to track")
    scene = kinematic_scene()
    tips = np.zeros((len(refs), refs[0].num_frames, len(FINGERTIP_SITES), 3))
    joints = []
    for r, ref in enumerate(refs):
        w = wrist_joints(ref.wrist_pos, ref.wrist_quat)
        w[:, 5] = np.unwrap(w[:, 5])
        joints.append(w)
        for t in range(ref.num_frames):
            scene.pose(w[t], ref.finger_pos[t], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0, 0.0])
            tips[r, t] = [scene.data.site(s).xpos for s in FINGERTIP_SITES]
    return StackedReferences(
        names=[ref.name for ref in refs],
        wrist_joints=np.stack(joints),
        finger_pos=np.stack([ref.finger_pos for ref in refs]),
        object_pos=np.stack([ref.object_pos for ref in refs]),
        object_quat=np.stack([ref.object_quat for ref in refs]),
        tip_pos=tips,
        object_type=np.array([ob.OBJECT_TYPES.index(ref.object_type) for ref in refs]),
        object_dims=np.stack([ref.object_dims for ref in refs]),
        motion=np.array(
            [MOTIONS.index(ref.motion) if ref.motion in MOTIONS else -1 for ref in refs]
        ),
        grip=np.stack([grip_level(ref.finger_pos) for ref in refs]),
    )


FLEX_JOINTS = np.array([1, 2, 3, 5, 6, 7, 9, 10, 11, 14, 15])
"""Finger joints that close the hand (not abduction, not the thumb's opposition swing)."""


def grip_level(finger_pos: np.ndarray) -> np.ndarray:
    """(T,) in [0, 1]: mean flexion over FLEX_JOINTS of finger angles (T, 16), from the
    reference's own least (0) to its most closed (1) frame."""
    flex = finger_pos[:, FLEX_JOINTS].mean(axis=1)
    span = flex.max() - flex.min()
    return (flex - flex.min()) / span if span > 1e-6 else np.zeros_like(flex)
