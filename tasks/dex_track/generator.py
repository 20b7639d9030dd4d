"""Physically plausible hand-object references, generated since no human data is here.

Each reference approaches an object resting on the table from above, closes the fingers
until they touch it (`grasp.plan_grasp`: thumb opposed to at least two fingers), then
moves it along one of the motions below while the hand holds it rigidly (the wrist
keeps its grasp pose in the object's frame), with random timing, distances and angles:

- `lift`: raise it and hold;
- `rotate`: raise it, turn it about the vertical (and at times tilt it);
- `translate`: raise it and carry it sideways;
- `place`: carry it, set it down elsewhere, open the hand and withdraw;
- `regrasp`: raise it, set it down, open the hand, grasp it again and raise it.

Finger angles are the touching grasp, not a squeezing one (as retargeted human data):
holding the object is the tracking policy's job. Every reference is checked kinematically
(`grasp.check_feasible`), including contact at the grasp frame; infeasible ones are
returned with the reason and never enter a training set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simreal.robots.allegro import FINGERTIP_SITES
from simreal.tasks.dex_track import objects as ob
from simreal.tasks.dex_track.grasp import Feasibility, check_feasible, finger_synergy, plan_grasp
from simreal.tasks.dex_track.references import Reference
from simreal.tasks.rotations import quat_from_axis_angle, quat_mul, quat_rotate

MOTIONS = ("lift", "rotate", "translate", "place", "regrasp")
"""In order of difficulty (the curriculum unlocks them in turn)."""
OBJECT_START_X = (0.05, 0.15)
OBJECT_START_Y = (-0.05, 0.05)
OBJECT_START_YAW = (-0.8, 0.8)
APPROACH_HEIGHT = (0.05, 0.08)
"""The hand starts this far (m) above its grasp pose, fingers open."""
_Z = np.array([0.0, 0.0, 1.0])
_X = np.array([1.0, 0.0, 0.0])
assert len(FINGERTIP_SITES) == 4


@dataclass
class Generated:
    """One generation attempt: the reference (None when no grasp was found) and its check."""

    reference: Reference | None
    feasibility: Feasibility
    grasp_frame: int


def min_jerk(tau: np.ndarray) -> np.ndarray:
    """Smooth 0 -> 1 over tau in [0, 1] with zero velocity and acceleration at both ends."""
    t = np.clip(tau, 0.0, 1.0)
    return t**3 * (10 - 15 * t + 6 * t**2)


class _Timeline:
    """Builds per-frame object pose, wrist offset and finger closure phase by phase."""

    def __init__(self, frames: int, obj_pos: np.ndarray, obj_quat: np.ndarray):
        self.frames = frames
        self.t = 0
        self.obj_pos = np.repeat(obj_pos[None], frames, 0)
        self.obj_quat = np.repeat(obj_quat[None], frames, 0)
        self.closure = np.zeros(frames)
        """0 open ... 1 touching grasp."""
        self.lift = np.zeros(frames)
        """Extra wrist height above its grasp pose (approach, withdrawal)."""

    def _span(self, n: int) -> tuple[slice, np.ndarray]:
        n = max(1, min(n, self.frames - self.t))
        s = slice(self.t, self.t + n)
        self.t += n
        return s, min_jerk(np.arange(1, n + 1) / n)

    def hold_rest(self) -> None:
        """Everything keeps its last value to the end."""
        for a in (self.obj_pos, self.obj_quat, self.closure, self.lift):
            a[self.t :] = a[self.t - 1]

    def _carry(self, s: slice) -> None:
        for a in (self.obj_pos, self.obj_quat, self.closure, self.lift):
            a[s] = a[s.start - 1]

    def move_hand(self, n: int, lift_to: float, closure_to: float) -> None:
        s, u = self._span(n)
        self._carry(s)
        start = self.t - (s.stop - s.start) - 1
        self.lift[s] = self.lift[start] + (lift_to - self.lift[start]) * u
        self.closure[s] = self.closure[start] + (closure_to - self.closure[start]) * u

    def move_object(self, n: int, delta: np.ndarray, axis: np.ndarray, angle: float) -> None:
        """Carry the object by `delta` (m) while turning it by `angle` about world `axis`."""
        s, u = self._span(n)
        self._carry(s)
        start = s.start - 1
        self.obj_pos[s] = self.obj_pos[start] + u[:, None] * delta
        turn = quat_from_axis_angle(np.broadcast_to(axis, (u.size, 3)), angle * u)
        self.obj_quat[s] = quat_mul(turn, np.broadcast_to(self.obj_quat[start], (u.size, 4)))


def _durations(rng: np.random.Generator, ranges: list[tuple[int, int]], budget: int) -> list[int]:
    """Random phase lengths (frames) from `ranges`, scaled down to fit `budget`."""
    n = [int(rng.integers(lo, hi + 1)) for lo, hi in ranges]
    if sum(n) > budget:
        n = [max(2, int(k * budget / sum(n))) for k in n]
    return n


def generate_reference(
    rng: np.random.Generator, kind: str, motion: str, rate_hz: float, frames: int
) -> Generated:
    """One random reference of `motion` with a random object of type `kind`."""
    if motion not in MOTIONS:
        raise ValueError(f"motion {motion!r} is not one of {list(MOTIONS)}")
    dims = ob.sample_dims(rng, kind)
    grasp = plan_grasp(kind, dims, rng)
    if grasp is None:
        return Generated(None, Feasibility(False, "no grasp found", 0.0, -1), -1)
    rest_z = ob.rest_height([kind], dims[None])[0]
    yaw = rng.uniform(*OBJECT_START_YAW)
    p0 = np.array([rng.uniform(*OBJECT_START_X), rng.uniform(*OBJECT_START_Y), rest_z])
    q0 = ob.rest_quat(np.array([yaw]))[0]
    line = _Timeline(frames, p0, q0)
    line.lift[0] = rng.uniform(*APPROACH_HEIGHT)
    approach, close = _durations(rng, [(8, 12), (5, 8)], frames // 3)
    line.t = 1
    line.move_hand(approach - 1, 0.0, 0.0)
    line.move_hand(close, 0.0, 1.0)
    grasp_frame = line.t - 1
    _manipulate(line, rng, motion, rest_z)
    line.hold_rest()
    wrist_offset = grasp.wrist_pos - np.array([0.0, 0.0, rest_z])  # in the object frame
    wrist_pos = line.obj_pos + quat_rotate(
        line.obj_quat, np.broadcast_to(wrist_offset, (frames, 3))
    )
    wrist_pos[:, 2] += line.lift
    wrist_quat = quat_mul(line.obj_quat, np.broadcast_to(grasp.wrist_quat, (frames, 4)))
    ref = Reference(
        rate_hz=rate_hz,
        wrist_pos=wrist_pos,
        wrist_quat=wrist_quat,
        finger_pos=finger_synergy(line.closure[:, None] * grasp.closure[None, :]),
        object_pos=line.obj_pos,
        object_quat=line.obj_quat,
        object_type=kind,
        object_dims=dims,
        motion=motion,
    )
    return Generated(ref, check_feasible(ref, grasp_frame), grasp_frame)


def _manipulate(line: _Timeline, rng: np.random.Generator, motion: str, rest_z: float) -> None:
    """Append the object motion of `motion` after the grasp."""
    budget = line.frames - line.t
    up = rng.uniform(0.05, 0.1)
    if motion == "lift":
        (n,) = _durations(rng, [(10, 16)], budget)
        line.move_object(n, np.array([0.0, 0.0, up]), _Z, 0.0)
    elif motion == "rotate":
        n_up, n_turn = _durations(rng, [(8, 12), (12, 20)], budget)
        line.move_object(n_up, np.array([0.0, 0.0, up]), _Z, 0.0)
        angle = rng.choice([-1.0, 1.0]) * rng.uniform(0.4, 1.0)
        line.move_object(n_turn, np.zeros(3), _Z, angle)
        if rng.random() < 0.5:
            (n_tilt,) = _durations(rng, [(8, 12)], line.frames - line.t)
            line.move_object(n_tilt, np.zeros(3), _X, rng.uniform(-0.3, 0.3))
    elif motion == "translate":
        n_up, n_move = _durations(rng, [(8, 12), (12, 20)], budget)
        line.move_object(n_up, np.array([0.0, 0.0, up]), _Z, 0.0)
        heading = rng.uniform(-np.pi, np.pi)
        step = rng.uniform(0.05, 0.12) * np.array([np.cos(heading), np.sin(heading), 0.0])
        step[2] = rng.uniform(-0.02, 0.03)
        line.move_object(n_move, step, _Z, 0.0)
    elif motion == "place":
        n_up, n_move, n_down, n_open, n_away = _durations(
            rng, [(6, 9), (10, 14), (7, 10), (4, 6), (5, 8)], budget
        )
        line.move_object(n_up, np.array([0.0, 0.0, up]), _Z, 0.0)
        heading = rng.uniform(-np.pi, np.pi)
        step = rng.uniform(0.04, 0.1) * np.array([np.cos(heading), np.sin(heading), 0.0])
        line.move_object(n_move, step, _Z, rng.uniform(-0.4, 0.4))
        down = rest_z - line.obj_pos[line.t - 1, 2]
        line.move_object(n_down, np.array([0.0, 0.0, down]), _Z, 0.0)
        line.move_hand(n_open, 0.0, 0.0)
        line.move_hand(n_away, rng.uniform(0.04, 0.07), 0.0)
    elif motion == "regrasp":
        n_up, n_down, n_open, n_wait, n_close, n_up2 = _durations(
            rng, [(7, 10), (7, 10), (4, 5), (2, 3), (4, 5), (7, 10)], budget
        )
        line.move_object(n_up, np.array([0.0, 0.0, up]), _Z, 0.0)
        line.move_object(n_down, np.array([0.0, 0.0, -up]), _Z, 0.0)
        line.move_hand(n_open, 0.0, 0.4)
        line.move_hand(n_wait, 0.0, 0.4)
        line.move_hand(n_close, 0.0, 1.0)
        line.move_object(n_up2, np.array([0.0, 0.0, rng.uniform(0.05, 0.1)]), _Z, 0.0)
