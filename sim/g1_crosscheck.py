"""Short open-loop G1 trajectories run on two engines and compared (issue 74).

Three cases, each the same model, start state and control sequence on every engine:

- `chirp`: the robot hung by its pelvis (no free joint, 0.5 m above the floor), every
  joint's PD target sweeping a chirp around the standing pose. No contacts: this
  compares the articulated dynamics, actuators, damping, friction and joint limits.
- `drop`: the robot in its standing pose released 0.3 m above the floor, PD holding the
  pose: an impact, then contacts.
- `stand`: the robot started standing on the floor, PD at the standing pose.

`run_case` returns qpos at every physics step; `agreement` summarizes two runs. Used by
tests/sim/test_g1_pybullet.py and bench/g1_engines.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import mujoco
import numpy as np

from simreal.robots.g1.mjcf import build_mjcf
from simreal.sim.engine import make_engine

CASES = ("chirp", "drop", "stand")

CHIRP_AMPLITUDE_RAD = 0.2
CHIRP_START_HZ = 0.5
CHIRP_END_HZ = 4.0
HANG_ABOVE_M = 0.5
DROP_FROM_M = 0.3


@dataclass(frozen=True)
class Case:
    """One comparison: its MJCF, start state and (steps, nu) control sequence."""

    name: str
    mjcf: str
    qpos: np.ndarray
    qvel: np.ndarray
    ctrl: np.ndarray
    floating: bool


def _stand_model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(build_mjcf(body_floor_contact=True))


def hung_mjcf() -> str:
    """The G1 welded to the world at its pelvis, HANG_ABOVE_M above its standing height."""
    xml = build_mjcf(body_floor_contact=True).replace('<freejoint name="pelvis"/>', "")
    xml = re.sub(r"<keyframe>.*</keyframe>", "", xml, flags=re.S)
    return re.sub(
        r'(<body name="pelvis" pos="0 0 )([0-9.eE+-]+)',
        lambda m: m.group(1) + f"{float(m.group(2)) + HANG_ABOVE_M:.9g}",
        xml,
    )


def make_case(name: str, duration_s: float) -> Case:
    """Case `name` (CASES) over `duration_s` of physics."""
    model = _stand_model()
    stand_q, stand_ctrl = model.key_qpos[0].copy(), model.key_ctrl[0].copy()
    steps = round(duration_s / model.opt.timestep)
    t = np.arange(steps)[:, None] * model.opt.timestep
    if name == "chirp":
        rate = (CHIRP_END_HZ - CHIRP_START_HZ) / (2.0 * duration_s)
        phase = np.arange(model.nu)[None, :] * 0.7  # joints out of step with each other
        ctrl = stand_ctrl + CHIRP_AMPLITUDE_RAD * np.sin(
            2 * np.pi * (CHIRP_START_HZ + rate * t) * t + phase
        )
        return Case(name, hung_mjcf(), stand_q[7:], np.zeros(model.nu), ctrl, False)
    ctrl = np.tile(stand_ctrl, (steps, 1))
    if name == "drop":
        stand_q[2] += DROP_FROM_M
    elif name != "stand":
        raise ValueError(f"unknown case {name!r}; choose one of {CASES}")
    return Case(name, build_mjcf(body_floor_contact=True), stand_q, np.zeros(model.nv), ctrl, True)


def run_case(case: Case, engine: str, num_envs: int = 1) -> np.ndarray:
    """(steps, nq) qpos of simulation 0 after every physics step."""
    sim = make_engine(engine, case.mjcf, num_envs)
    ids = np.arange(num_envs)
    sim.reset(ids, np.tile(case.qpos, (num_envs, 1)), np.tile(case.qvel, (num_envs, 1)))
    out = np.empty((len(case.ctrl), case.qpos.size))
    for k, ctrl in enumerate(case.ctrl):
        sim.ctrl[:] = ctrl
        sim.step(1)
        out[k] = sim.qpos[0]
    close = getattr(sim, "close", None)
    if close is not None:
        close()
    return out


def agreement(case: Case, reference: np.ndarray, other: np.ndarray) -> dict[str, float]:
    """Largest and mean joint-angle difference (rad), the joint where it is largest, and,
    for a floating base, the base heights' largest difference and final values (m)."""
    joints = slice(7, None) if case.floating else slice(None)
    diff = np.abs(other[:, joints] - reference[:, joints])
    model = _stand_model()
    worst = int(diff.max(axis=0).argmax())
    out = {
        "joint_max_rad": float(diff.max()),
        "joint_mean_rad": float(diff.mean()),
        "joint_p95_rad": float(np.percentile(diff.max(axis=0), 95)),
        "worst_joint": model.joint(worst + 1).name,
        "motion_rad": float(np.ptp(reference[:, joints], axis=0).max()),
    }
    if case.floating:
        out["height_max_m"] = float(np.abs(other[:, 2] - reference[:, 2]).max())
        out["height_end_ref_m"] = float(reference[-1, 2])
        out["height_end_other_m"] = float(other[-1, 2])
    return out
