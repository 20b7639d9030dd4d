"""Ankle encoder offsets from the robot standing flat-footed: a kinematic closure.

Hung on its gantry, a G1's ankles carry only the foot (about 0.6 kg a few centimetres
from the axis), so a 0.01 rad offset shifts their gravity torque by a few mN m: the
hung fits report both ankle offsets unidentifiable. Standing on flat ground, the floor
fixes the soles' orientation instead. The IMU reports the pelvis's orientation in the
world; the hip and knee offsets are known from the hung fits; then forward kinematics
from the pelvis to each sole says what the ankle angles must be for the soles to lie
flat, and the reported angles minus those are the ankle offsets (pitch and roll, two
equations and two unknowns per foot, solved by Gauss-Newton).

The robot stands in its default pose, held by its band or gantry so that it needs no
balance controller (`simreal sim-robot g1 --band` on the virtual robot), for `hold_s`;
the fit uses the part after `settle_s`. What limits it:

- the soles do not lie exactly flat: on the virtual robot, the soles' normals were
  0.7-1.3 mrad off vertical under the PD stand (soft contact, the weight nearer the
  heel), so SOLE_LEVEL_STD enters every std;
- the hip and knee offsets' own errors carry over (their stds from the overlay are
  propagated through the closure's Jacobian);
- the IMU's orientation: taken as reported. The virtual robot reports its true
  orientation; a real G1's estimate has its own tilt error, which shifts both feet's
  offsets alike (a common-mode error this log cannot tell from the offsets).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simreal.calibration.dynamics import MAX_OFFSET_STD, Estimate
from simreal.calibration.excite import Excitation, run_hung
from simreal.calibration.imu import largest_turn
from simreal.calibration.logdata import CalibrationError, HungLog
from simreal.robots.g1 import ACTUATORS, DEFAULT_JOINT_POS, JOINT_NAMES
from simreal.robots.g1.kinematics import link_poses
from simreal.robots.g1.overlay import Overlay
from simreal.tasks.rotations import quat_to_matrix

STANCE = "stance"
"""The excitation kind (and `calibrate excite --group stance`)."""
SIDES = ("left", "right")
ANKLES = ("ankle_pitch", "ankle_roll")
"""The offsets a foot's closure fits."""
CHAIN = ("hip_pitch", "hip_roll", "hip_yaw", "knee")
"""The leg's other joints: their offsets must be known (hung `joint-offsets` first)."""
IMU_FRAME = "imu_in_pelvis"
SOLE_LEVEL_STD = 0.0015
"""rad: how far off level a standing sole may lie (module docstring)."""
MAX_TURN_RAD = 0.02
"""A stance log whose orientation turns by more than this over the fitted part is not
static: the feet may not have been flat. (The legs themselves creep slowly as the robot
settles, by about 0.01 rad over 3 s on the virtual robot; each block's closure follows
its own pose, so that does no harm.)"""
BLOCKS = 10
"""The fitted part is cut into this many blocks, each solved on its own: the spread of
their solutions is the sensor-noise (and creep) part of the std."""


@dataclass(frozen=True)
class StanceConfig:
    hold_s: float = 4.0
    """How long the robot stands in its default pose."""
    settle_s: float = 1.0
    """Left out of the fit: the robot settling onto its soles."""
    dt: float = 0.002

    def validate(self) -> None:
        if not (self.dt > 0 and 0 <= self.settle_s < self.hold_s):
            raise ValueError(
                f"stance: need dt > 0 and 0 <= settle_s < hold_s, got dt={self.dt}, "
                f"settle_s={self.settle_s}, hold_s={self.hold_s}"
            )


def leg_joints(side: str) -> dict[str, str]:
    """Short name (hip_pitch, ..., ankle_roll) -> joint name of one leg."""
    return {short: f"{side}_{short}_joint" for short in (*CHAIN, *ANKLES)}


def stance_excitation(cfg: StanceConfig) -> Excitation:
    """The default pose held with the nominal gains for `hold_s`: the robot stands."""
    cfg.validate()
    steps = round(cfg.hold_s / cfg.dt)
    q = np.tile(np.asarray(DEFAULT_JOINT_POS, dtype=float), (steps, 1))
    kp = np.array([ACTUATORS[n].kp for n in JOINT_NAMES])
    kd = np.array([ACTUATORS[n].kd for n in JOINT_NAMES])
    ankles = tuple(leg_joints(s)[a] for s in SIDES for a in ANKLES)
    return Excitation(np.arange(steps) * cfg.dt, q, np.zeros_like(q), kp, kd, ankles, STANCE)


def run_standing(exc: Excitation, overlay: Overlay, log_dir: Path | str) -> Path:
    """Run `exc` on the in-process virtual G1 standing on its band (`overlay`: its hidden
    truth), logged as `run_hung` logs the hung robot."""
    from simreal.deploy.g1.sim_robot import SimG1

    dt = float(exc.t[1] - exc.t[0])
    return run_hung(exc, overlay, log_dir, robot=SimG1(dt=dt, overlay=overlay, band=True))


def sole_normal(joint_pos: np.ndarray, imu_quat: np.ndarray, side: str) -> np.ndarray:
    """The x and y components (2,) of one sole's normal in the world, from true joint
    angles (29,) and the IMU's world orientation (w, x, y, z): zero when the sole is level."""
    poses = link_poses(joint_pos)
    imu_rot, foot_rot = poses[IMU_FRAME][0], poses[f"{side}_ankle_roll_link"][0]
    imu_world = quat_to_matrix((imu_quat / np.linalg.norm(imu_quat))[None])[0]
    return (imu_world @ imu_rot.T @ foot_rot)[:2, 2]


def _jacobian(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    f0 = f(x)
    return np.stack([(f(x + eps * e) - f0) / eps for e in np.eye(len(x))], axis=1)


def closure(reported: np.ndarray, quat: np.ndarray, side: str, chain_offsets: np.ndarray):
    """The ankle offsets (pitch, roll) that level one sole, and their Jacobian with respect
    to the chain's offsets (hip pitch, roll, yaw, knee): (2,), (2, 4)."""
    names = leg_joints(side)
    ankle_idx = [JOINT_NAMES.index(names[a]) for a in ANKLES]
    chain_idx = [JOINT_NAMES.index(names[c]) for c in CHAIN]

    def residual(x: np.ndarray, chain: np.ndarray) -> np.ndarray:
        q = reported.copy()
        q[chain_idx] -= chain
        q[ankle_idx] -= x
        return sole_normal(q, quat, side)

    x = np.zeros(2)
    for _ in range(6):
        jac = _jacobian(lambda v: residual(v, chain_offsets), x)
        step = np.linalg.solve(jac, residual(x, chain_offsets))
        x -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    j_ankle = _jacobian(lambda v: residual(v, chain_offsets), x)
    j_chain = _jacobian(lambda c: residual(x, c), chain_offsets)
    return x, -np.linalg.solve(j_ankle, j_chain)


@dataclass
class StanceFit:
    encoder_offset: dict[str, Estimate]
    unidentifiable: dict[str, str]
    """Joint -> why its offset is not written (std above MAX_OFFSET_STD)."""
    imu_tilt_rad: float
    """The IMU's tilt from upright while standing (as reported)."""
    samples: int


def _static_part(log: HungLog, settle_s: float) -> slice:
    start = int(np.searchsorted(log.t, log.t[0] + settle_s))
    if len(log.t) - start < 2 * BLOCKS:
        raise CalibrationError(
            f"{log.path}: {len(log.t)} rows, {len(log.t) - start} after the {settle_s} s "
            f"settling: too short for the stance fit (needs {2 * BLOCKS})"
        )
    return slice(start, None)


def _check_static(log: HungLog, part: slice) -> None:
    turn = largest_turn(log.quat[part])
    if turn > MAX_TURN_RAD:
        raise CalibrationError(
            f"{log.path}: the stance fit needs the robot standing still, but its pelvis turns "
            f"by {turn:.4f} rad (limit {MAX_TURN_RAD}): the soles may not have lain flat"
        )


def _mean_quat(quat: np.ndarray) -> np.ndarray:
    quat = quat * np.sign(quat @ quat[0])[:, None]
    mean = quat.mean(0)
    return mean / np.linalg.norm(mean)


def fit_stance_offsets(
    log: HungLog, sides: tuple[str, ...], known: dict[str, Estimate], settle_s: float = 1.0
) -> StanceFit:
    """Ankle offsets of the legs `sides` from a stance log (module docstring); `known`:
    encoder offsets with stds, which must hold every chain joint of those legs."""
    if log.excitation != STANCE:
        raise CalibrationError(
            f"{log.path}: a {log.excitation!r} excitation log; the stance fit needs the robot "
            f"standing (`simreal calibrate excite LOG --group {STANCE}`)"
        )
    missing = [leg_joints(s)[c] for s in sides for c in CHAIN if leg_joints(s)[c] not in known]
    if missing:
        raise CalibrationError(
            f"the stance fit needs the encoder offsets of {', '.join(missing)} in the overlay "
            "(fit them first: `simreal calibrate joint-offsets` on a hung excitation of the leg)"
        )
    part = _static_part(log, settle_s)
    _check_static(log, part)
    rows = np.array_split(np.arange(len(log.t))[part], BLOCKS)
    out, unidentifiable = {}, {}
    for side in sides:
        names = leg_joints(side)
        chain = np.array([known[names[c]].value for c in CHAIN])
        chain_std = np.array([known[names[c]].std for c in CHAIN])
        solved = [closure(log.q[r].mean(0), _mean_quat(log.quat[r]), side, chain) for r in rows]
        per_block = np.array([x for x, _ in solved])
        x, dx_dchain = per_block.mean(0), solved[0][1]
        noise_var = per_block.var(axis=0, ddof=1) / BLOCKS
        chain_var = (dx_dchain**2) @ chain_std**2
        std = np.sqrt(noise_var + chain_var + SOLE_LEVEL_STD**2)
        for k, short in enumerate(ANKLES):
            name = names[short]
            if std[k] <= MAX_OFFSET_STD:
                out[name] = Estimate(float(x[k]), float(std[k]))
            else:
                unidentifiable[name] = (
                    f"fitted {x[k]:.4f} +- {std[k]:.4f} rad: std above the {MAX_OFFSET_STD} rad "
                    "goal; the chain's offsets are too uncertain (a longer hung excitation)"
                )
    rot = quat_to_matrix(_mean_quat(log.quat[part])[None])[0]
    tilt = float(np.arccos(np.clip(rot[2, 2], -1.0, 1.0)))
    return StanceFit(out, unidentifiable, tilt, len(log.t[part]))
