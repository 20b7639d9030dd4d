"""Sensor-to-sensor extrinsics by trajectory alignment: the hand-eye problem AX = XB.

Two sensors rigidly mounted on one robot each report their own pose in their own world
frame (an IMU/odometry estimate, a camera or LiDAR odometry). With X the pose of sensor
B in sensor A's frame and Y the (unknown, constant) pose of B's world in A's world,
T_WA(t) X = Y T_VB(t) at every time. Between two times i, j the relative motions
A = T_WA(i)^-1 T_WA(j) and B = T_VB(i)^-1 T_VB(j) satisfy A X = X B, which removes Y.

Rotations stay on the manifold throughout: the closed-form start aligns the rotation
vectors of A and B (alpha = R_X beta, an orthogonal Procrustes/SVD problem), the
translation then follows linearly from (R_A - I) t_X = R_X t_B - t_A, and a
Gauss-Newton refinement (scipy.optimize.least_squares) perturbs R_X by exp([phi]) on the
left, so the parameters are (phi, t) in so(3) x R^3 and never a redundant 9- or 4-vector.

Identifiability: motion about a single axis n leaves the rotation about n and the
translation along n unseen (R_A - I kills n). The Jacobian of the whitened residuals at
the solution shows that as (near-)zero singular values; `fit_hand_eye` reports those
directions as unidentifiable instead of returning noise-fitted numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

MIN_PAIR_ROTATION_RAD = 0.02
"""Relative motions that turn less than this carry no rotation-axis information."""

IDENTIFIABLE_RATIO = 0.05
"""A direction whose singular value is below this fraction of the largest in its block
(see `identifiability`) is reported unidentifiable."""

PARAMETERS = ("rot_x", "rot_y", "rot_z", "t_x", "t_y", "t_z")


class DegenerateMotionError(ValueError):
    """The motion does not determine the whole transform; the message names what is unseen."""


@dataclass(frozen=True)
class Poses:
    """Timestamped poses of one sensor: t (K,) s, position (K, 3) m, rotation (K rotations)."""

    t: np.ndarray
    position: np.ndarray
    rotation: Rotation


@dataclass
class HandEyeFit:
    rotation: Rotation
    """R_X: rotates vectors from sensor B's frame into sensor A's."""
    translation: np.ndarray
    """t_X (m): sensor B's origin in sensor A's frame."""
    covariance: np.ndarray
    """(6, 6) over PARAMETERS (rotation as a left perturbation, rad; translation, m)."""
    singular_ratios: np.ndarray
    """(6,) singular values over the largest: rotation block (3), translation block (3)."""
    pairs: int
    rms_rotation_rad: float
    rms_translation_m: float
    world: tuple[Rotation, np.ndarray] | None = None
    """Y: B's world in A's world, (rotation, translation), from the fitted X."""
    unidentifiable: list[str] = field(default_factory=list)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))


def interpolate(poses: Poses, times: np.ndarray) -> tuple[np.ndarray, Rotation]:
    """Poses at `times` (inside poses.t): linear in position, slerp in rotation."""
    from scipy.spatial.transform import Slerp

    position = np.stack([np.interp(times, poses.t, poses.position[:, k]) for k in range(3)], 1)
    return position, Slerp(poses.t, poses.rotation)(times)


def relative_motions(
    position: np.ndarray, rotation: Rotation, i: np.ndarray, j: np.ndarray
) -> tuple[Rotation, np.ndarray]:
    """T(i)^-1 T(j) for each pair: rotation and translation (in frame i)."""
    inv = rotation[i].inv()
    return inv * rotation[j], inv.apply(position[j] - position[i])


def closed_form(
    ra: Rotation, ta: np.ndarray, rb: Rotation, tb: np.ndarray
) -> tuple[Rotation, np.ndarray]:
    """R_X from alpha_k = R_X beta_k (SVD/Kabsch on rotation vectors), then t_X by linear
    least squares on (R_A - I) t_X = R_X t_B - t_A."""
    alpha, beta = ra.as_rotvec(), rb.as_rotvec()
    rx, _ = Rotation.align_vectors(alpha, beta)
    lhs = (ra.as_matrix() - np.eye(3)).reshape(-1, 3)
    rhs = (rx.apply(tb) - ta).reshape(-1)
    tx = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    return rx, tx


def _residuals(
    params: np.ndarray,
    rx0: Rotation,
    ra: Rotation,
    ta: np.ndarray,
    rb: Rotation,
    tb: np.ndarray,
    sigma_rot: float,
    sigma_trans: float,
) -> np.ndarray:
    """Whitened residuals of A X = X B: rotation log((R_A R_X)^-1 R_X R_B) and translation
    R_A t_X + t_A - R_X t_B - t_X, per pair."""
    rx = Rotation.from_rotvec(params[:3]) * rx0
    tx = params[3:]
    rot = ((ra * rx).inv() * rx * rb).as_rotvec() / sigma_rot
    trans = (ra.apply(tx) + ta - rx.apply(tb) - tx) / sigma_trans
    return np.concatenate([rot.ravel(), trans.ravel()])


def identifiability(jac: np.ndarray, n: int) -> tuple[np.ndarray, list[str]]:
    """Singular value ratios (rotation block, then translation block) and the names of the
    directions below IDENTIFIABLE_RATIO.

    Each block is tested on its own so that the ratios are dimensionless: rotation
    residuals against the rotation parameters (rad per rad), translation residuals against
    the translation (the stacked R_A - I, m per m). A full 6x6 test would mix radians and
    metres, and column equilibration would blow a null column up to unit size. The
    rotation about a single excitation axis is reported although lever arms in the
    translations can pin it weakly: a fit that leans on that alone would fit noise.
    """
    ratios, names = [], []
    for label, block in (
        ("rotation about", jac[:n, :3]),
        ("translation along", jac[n:, 3:]),
    ):
        _, s, vt = np.linalg.svd(block, full_matrices=False)
        r = s / s[0] if s[0] > 0 else np.zeros_like(s)
        ratios.append(r)
        for k in np.flatnonzero(r < IDENTIFIABLE_RATIO):
            v = vt[k] * np.sign(vt[k][np.argmax(np.abs(vt[k]))])
            v = np.where(np.abs(v) < 5e-3, 0.0, v)  # no "-0.00" in the message
            names.append(
                f"{label} [{v[0]:+.2f} {v[1]:+.2f} {v[2]:+.2f}] (singular value ratio {r[k]:.1e})"
            )
    return np.concatenate(ratios), names


def fit_hand_eye(
    a: Poses, b: Poses, samples: int = 200, min_rotation_rad: float = MIN_PAIR_ROTATION_RAD
) -> HandEyeFit:
    """X (B's pose in A's frame) from two pose streams; B is interpolated at A's sample
    times inside the overlap. Raises DegenerateMotionError when the motion leaves a
    direction of X unidentifiable, or ValueError when the streams hardly overlap."""
    start, end = max(a.t[0], b.t[0]), min(a.t[-1], b.t[-1])
    if end - start <= 0:
        raise ValueError(
            f"the pose streams do not overlap in time (A {a.t[0]:.3f}-{a.t[-1]:.3f} s, "
            f"B {b.t[0]:.3f}-{b.t[-1]:.3f} s)"
        )
    times = np.linspace(start, end, samples)
    pa, qa = interpolate(a, times)
    pb, qb = interpolate(b, times)
    i, j = np.arange(samples - 1), np.arange(1, samples)
    ra, ta = relative_motions(pa, qa, i, j)
    rb, tb = relative_motions(pb, qb, i, j)
    keep = (ra.magnitude() > min_rotation_rad) & (rb.magnitude() > min_rotation_rad)
    if keep.sum() < 3:
        raise DegenerateMotionError(
            f"only {int(keep.sum())} of {len(keep)} relative motions rotate more than "
            f"{min_rotation_rad} rad: the sensors barely rotate, so neither the rotation nor "
            "the translation between them is identifiable; excite rotations about two axes"
        )
    ra, ta, rb, tb = ra[keep], ta[keep], rb[keep], tb[keep]
    rx0, tx0 = closed_form(ra, ta, rb, tb)
    # Noise scales of each residual block from the closed-form start (floored so an
    # exact log does not divide by zero): the refinement weighs radians against metres.
    start_res = _residuals(np.r_[0.0, 0.0, 0.0, tx0], rx0, ra, ta, rb, tb, 1.0, 1.0)
    n = 3 * len(ra)
    sigma_rot = max(float(np.sqrt(np.mean(start_res[:n] ** 2))), 1e-9)
    sigma_trans = max(float(np.sqrt(np.mean(start_res[n:] ** 2))), 1e-9)
    args = (rx0, ra, ta, rb, tb, sigma_rot, sigma_trans)
    sol = least_squares(_residuals, np.r_[0.0, 0.0, 0.0, tx0], args=args, method="lm")
    rx = Rotation.from_rotvec(sol.x[:3]) * rx0
    tx = sol.x[3:]
    raw = _residuals(np.r_[0.0, 0.0, 0.0, tx], rx, ra, ta, rb, tb, 1.0, 1.0)
    rms_rot = float(np.sqrt(np.mean(raw[:n] ** 2)))
    rms_trans = float(np.sqrt(np.mean(raw[n:] ** 2)))
    # Re-whiten with the final residual scales, Jacobian at the solution (phi = 0 about rx).
    args = (rx, ra, ta, rb, tb, max(rms_rot, 1e-9), max(rms_trans, 1e-9))
    jac = least_squares(
        _residuals, np.r_[0.0, 0.0, 0.0, tx], args=args, method="lm", max_nfev=1
    ).jac
    ratios, unseen = identifiability(jac, n)
    dof = max(len(raw) - 6, 1)
    chi2 = float(np.sum(_residuals(np.r_[0.0, 0.0, 0.0, tx], *args) ** 2)) / dof
    covariance = np.linalg.pinv(jac.T @ jac) * chi2
    fit = HandEyeFit(
        rotation=rx,
        translation=tx,
        covariance=covariance,
        singular_ratios=ratios,
        pairs=len(ra),
        rms_rotation_rad=rms_rot,
        rms_translation_m=rms_trans,
        unidentifiable=unseen,
    )
    if unseen:
        raise DegenerateMotionError(
            "the motion leaves these directions of the transform (axes in sensor A's frame) "
            "unidentifiable, so it was not fitted: "
            + "; ".join(unseen)
            + ". Rotating about a single axis hides the rotation about it and the translation "
            "along it; excite rotations about at least two non-parallel axes"
        )
    fit.world = world_offset(pa, qa, pb, qb, rx, tx)
    return fit


def world_offset(
    pa: np.ndarray, qa: Rotation, pb: np.ndarray, qb: Rotation, rx: Rotation, tx: np.ndarray
) -> tuple[Rotation, np.ndarray]:
    """Y = T_WA X T_VB^-1, averaged over the samples (chordal rotation mean)."""
    ry = qa * rx * qb.inv()
    ty = pa + qa.apply(tx) - ry.apply(pb)
    return ry.mean(), ty.mean(0)


def map_into_a(
    pb: np.ndarray, qb: Rotation, rx: Rotation, tx: np.ndarray, world: tuple[Rotation, np.ndarray]
) -> tuple[np.ndarray, Rotation]:
    """Sensor A's pose predicted from B's: T_WA = Y T_VB X^-1."""
    ry, ty = world
    q = ry * qb * rx.inv()
    return ty + ry.apply(pb) - q.apply(tx), q
