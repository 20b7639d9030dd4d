"""Fits on a hung-robot log: PD gain scales and latency from the logged torques, then
encoder offsets, armature and friction from the joint dynamics; and re-simulation.

Gains and latency. Each motor reports the torque the joint got over the tick, tau_est
(the virtual robot: averaged over its physics substeps, `SimG1.tick`). Over tick j it
applied command c_{j-L} (L the latency in ticks): the spring acts on the position at
the tick's start and the damper, as a driver loop much faster than the tick does, on
the velocity it reaches, tau_j = kp_s kp (q_cmd - q_{j-1}) + kd_s kd (dq_cmd - dq_j) +
tau_ff (exact for one implicitfast step per tick, which evaluates damping at the step's
end velocity; an approximation for a robot with its own faster physics). The encoder
offset cancels (the loop closes on the encoder), so for each L this is a linear
least-squares problem in (kp_s, kd_s). The latency need not be whole ticks: with
L + phi, the motor follows c_{j-L-1} for the first fraction phi of tick j and c_{j-L}
after it, so tau_j is the phi-weighted mix of the two PD laws, still linear in
(kp_s, kd_s). The whole-tick search picks L; a bounded scalar minimization of the
residual over the neighbouring ticks gives the fraction.

Dynamics. Over a tick, M a = tau + f_passive + f_friction - bias, with a =
(dq_{j} - dq_{j-1}) / dt and tau the torque the joint got (tau_est; for one implicitfast
step this is (M + dt D) a = f with the damping's implicit part in tau, viscous friction
acting on dq_j). With the nominal model's M and bias at the true pose q_meas - offset, what remains is
linear in (armature change, viscous, Coulomb) per joint (Coulomb only on samples that
slide); the offsets enter through gravity and inertia and are fitted around that linear
solve by scipy's least_squares (variable projection). Uncertainties come from the
residual variance and the (Jacobian) normal matrix at the solution.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np
from scipy.optimize import least_squares, minimize_scalar
from scipy.signal import butter, sosfiltfilt

from simreal.calibration.excite import hung_g1
from simreal.calibration.logdata import CalibrationError, HungLog, joint_indices
from simreal.deploy.g1.sim_robot import MotorCommand
from simreal.deploy.g1.virtual_robot import CommandGate
from simreal.robots.g1 import JOINT_NAMES, JOINTS
from simreal.robots.g1.overlay import Overlay

SLIDE_SPEED = 1.0
"""rad/s: Coulomb friction is saturated (sliding) above this speed; slower samples are
skipped. MuJoCo's friction loss is a soft constraint: a joint decelerating hard at
0.5-0.6 rad/s can still be inside its linear zone, and those few samples (residuals up
to 0.7 N m where every other sample fits to 1e-14) pulled the weakly loaded ankle roll's
offset 0.0076 rad off; above 1 rad/s none was seen."""
MIN_SAMPLES = 50
MIN_OFFSET_SENSITIVITY = 1e-3
"""N m/rad (rms over the samples): an encoder offset that changes the model's torques by
less than this per radian, once the other parameters are refitted, is unidentifiable
from the log (e.g. the waist yaw of the hung robot: a rotation about the vertical
leaves gravity and the inertia matrix unchanged). It is held at nominal and reported."""
MAX_OFFSET_STD = 0.005
"""rad: an encoder offset fitted with a larger standard deviation (from the residuals and
the Jacobian) is held at nominal and reported, not written: the calibration goal for
offsets is 0.005 rad, and an offset whose std is above it cannot be trusted to meet it
(with 0.01 here, a noisy log's ankle pitch offset came out 0.016 rad off with a std of
0.0076 and was written). On the noise-free virtual robot no offset comes near it; with
sensor noise the hung ankles do (their torques change by only ~0.09-0.24 N m/rad of
offset, the hips' by ~7)."""
MODEL_BIAS = {"kp_scale": 0.001, "kd_scale": 0.0075, "armature": 0.025}
"""Relative std added (in quadrature, `_in_quadrature`) for the fits' model not being the
robot, of the fitted kp and kd scales and of the nominal armature: they model one
implicitfast step per tick, and on the noise-free virtual robot integrating 4 substeps
per tick (seeds 1 and 3, low-pass 20 Hz) the kp scales came out up to 0.07 % off, the kd
scales 0.75 % and the armature 2.3 %: biases that no spread over the log's blocks shows
(the DDS bench had ankle and knee values 2 % off with stds of 0.4 %)."""
LIMIT_CLEARANCE = 0.01
"""rad: logged joints closer than this to a joint limit meet its constraint force, which
the fits do not model; such a log is refused."""


@dataclass
class Estimate:
    value: float
    std: float


@dataclass
class GainFit:
    latency_ticks: float
    """Actuation latency in control ticks (not a whole number in general)."""
    latency_std_ticks: float
    latency_cost: np.ndarray
    """(L_max + 1,) residual sum of squares per whole-tick latency (the coarse search)."""
    kp_scale: dict[str, Estimate]
    kd_scale: dict[str, Estimate]
    step_fraction: float = 1.0
    """1 / (the robot's physics steps per tick) that fitted best (STEP_FRACTIONS)."""


@dataclass
class DynamicsFit:
    encoder_offset: dict[str, Estimate]
    armature: dict[str, Estimate]
    friction_viscous: dict[str, Estimate]
    friction_coulomb: dict[str, Estimate]
    unidentifiable: dict[str, str] = field(default_factory=dict)
    """`joint.parameter` -> why the log cannot pin it down (held at nominal)."""
    residual_rms: float = 0.0
    offset_sensitivity: dict[str, float] = field(default_factory=dict)
    """N m/rad rms: how much the model's torques change per radian of each encoder offset."""


JACKKNIFE_BLOCKS = 10
"""Contiguous blocks of a log for the jackknife std of the final fits (`_linear_fit`)."""


def _linear_fit(
    X: np.ndarray, y: np.ndarray, blocks: int = 0
) -> tuple[np.ndarray, np.ndarray, float]:
    """Least squares: coefficients, their std, residual sum of squares.

    The textbook std assumes white residuals. On a robot that is not the model the
    residuals are model error, correlated over time and with the motion, and that std
    came out 10-20 times below the real errors (kp 8.9 % off with a std of 0.4 %).
    With `blocks`, the std is also estimated by a delete-one-block jackknife over that
    many contiguous stretches of the samples (time order), which sees how much the fit
    moves with the part of the motion it is given, and the larger of the two is kept."""
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    r = y - X @ coef
    dof = max(len(y) - X.shape[1], 1)
    cov = (r @ r / dof) * np.linalg.pinv(X.T @ X)
    std = np.sqrt(np.clip(np.diag(cov), 0, None))
    if blocks > 1 and len(y) >= blocks * 4 * X.shape[1]:
        edges = np.linspace(0, len(y), blocks + 1).astype(int)
        keep = np.ones(len(y), dtype=bool)
        leave_out = []
        for a, b in itertools.pairwise(edges):
            keep[:] = True
            keep[a:b] = False
            leave_out.append(np.linalg.lstsq(X[keep], y[keep], rcond=None)[0])
        leave_out = np.array(leave_out)
        spread = np.sqrt((blocks - 1) / blocks * np.sum((leave_out - leave_out.mean(0)) ** 2, 0))
        std = np.maximum(std, spread)
    return coef, std, float(r @ r)


def _in_quadrature(*stds):
    """Independent uncertainties combined: the root of the sum of their squares."""
    return np.sqrt(sum(np.square(sd) for sd in stds))


def delayed(x: np.ndarray, steps: int) -> np.ndarray:
    """x[j - steps] at row j (the first rows repeat row 0)."""
    return np.concatenate([np.repeat(x[:1], steps, axis=0), x[: len(x) - steps]]) if steps else x


def blended(x: np.ndarray, ticks: float) -> np.ndarray:
    """The command in force at row j under a latency of `ticks` = L + phi ticks, averaged
    over the tick: x[j - L - 1] for the first fraction phi of it, then x[j - L] (the
    command comes due phi of a tick after the tick starts; `CommandGate.blend`)."""
    whole = int(np.floor(ticks))
    phi = ticks - whole
    out = delayed(x, whole)
    return out if phi == 0 else (1 - phi) * out + phi * delayed(x, whole + 1)


STEP_FRACTIONS = (1.0, 0.5, 0.25, 0.125, 0.0)
"""Candidate u = 1 / (the robot's physics steps per tick) for the gain fit; 0 is a robot
whose physics and motor loop are continuous at the tick's scale (a real one)."""


def _tick_fractions(u: float) -> tuple[float, float]:
    """How far through a tick, on average, a robot taking 1/u implicit steps per tick
    applies its springs (positions) and its dampers (velocities): (1 - u) / 2, (1 + u) / 2."""
    return (1 - u) / 2, (1 + u) / 2


def _tick_states(log: HungLog, u: float, start: int) -> tuple[np.ndarray, np.ndarray]:
    """Where in the tick the reported torque (averaged over the tick) sees the state, for
    a robot taking 1/u implicit steps per tick: the springs act on positions on average
    (1 - u) / 2 of the way through the tick, the dampers on velocities (1 + u) / 2 of the
    way (each implicit step's damper uses the velocity it ends with). u = 1: one step,
    the start position and the end velocity (the fits' own model, exact); u -> 0: a
    continuous robot, both at mid-tick."""
    a, b = _tick_fractions(u)
    q = (1 - a) * log.q[start - 1 : -1] + a * log.q[start:]
    dq = (1 - b) * log.dq[start - 1 : -1] + b * log.dq[start:]
    return q, dq


def _kept_rows(log: HungLog, ticks: float, start: int) -> np.ndarray | None:
    """(K - start,) bool: the gain fit's rows from `start` that neither a command of
    uncertain timing (under latency `ticks`: rows j - L - 1 and j - L) nor a lost or
    off-period state (rows j - 1 and j) shaped; None when the log marks neither (an
    in-process log). On a busy computer 2-10 % of a DDS log's commands land within a
    fraction of a millisecond of the robot's tick; fitted as if taken at the guessed tick
    they moved the latency 0.6 ms and the ankles' kd 6-10 % off."""
    if log.uncertain_command is None and log.bad_state is None:
        return None
    bad = np.zeros(len(log.t), dtype=bool)
    if log.uncertain_command is not None:
        bad |= blended(log.uncertain_command.astype(float), ticks) > 0
    if log.bad_state is not None:
        bad |= log.bad_state | delayed(log.bad_state, 1)
    return ~bad[start:]


def _gain_fits(
    log: HungLog, idx: np.ndarray, ticks: float, start: int, u: float = 1.0, blocks: int = 0
):
    """Per joint (coef, std) of (kp_s, kd_s) under latency `ticks` and step fraction `u`
    (`_tick_states`), and the total RSS (over the kept rows, `_kept_rows`, scaled to all
    rows so that latencies leaving out different rows compare)."""
    c = log.cmd
    q, dq = _tick_states(log, u, start)
    keep = _kept_rows(log, ticks, start)
    if keep is not None and keep.sum() < 0.5 * len(keep):
        raise CalibrationError(
            f"{log.path}: only {int(keep.sum())} of {len(keep)} rows have a command of "
            "certain timing and clean states; excite again with `--rt-priority`"
        )
    scale = len(keep) / keep.sum() if keep is not None else 1.0
    total, per_joint = 0.0, []
    for i in idx:
        kp, kd = blended(c["kp"][:, i], ticks)[start:], blended(c["kd"][:, i], ticks)[start:]
        X = np.stack(
            [
                blended(c["kp"][:, i] * c["q"][:, i], ticks)[start:] - kp * q[:, i],
                blended(c["kd"][:, i] * c["dq"][:, i], ticks)[start:] - kd * dq[:, i],
            ],
            axis=1,
        )
        y = log.tau[start:, i] - blended(c["tau"][:, i], ticks)[start:]
        if keep is not None:
            X, y = X[keep], y[keep]
        coef, std, rss = _linear_fit(X, y, blocks)
        total += rss * scale
        per_joint.append((coef, std))
    return per_joint, total


def _fit_latency(log: HungLog, idx: np.ndarray, start: int, max_ticks: int, u: float):
    """Latency in ticks (whole ticks first, then the fraction around the best one by a
    bounded Brent on the residual), its RSS, and the whole-tick costs."""
    costs = np.array([_gain_fits(log, idx, L, start, u)[1] for L in range(max_ticks + 1)])
    best = int(np.argmin(costs))
    candidates = [(float(best), costs[best])]
    for lo in (best - 1, best):
        if 0 <= lo < max_ticks:
            sol = minimize_scalar(
                lambda x: _gain_fits(log, idx, x, start, u)[1],
                bounds=(lo, lo + 1),
                method="bounded",
                options={"xatol": 1e-4},
            )
            candidates.append((float(sol.x), float(sol.fun)))
    ticks, rss = min(candidates, key=lambda tc: tc[1])
    return ticks, rss, costs


def fit_gains(log: HungLog, joints: tuple[str, ...], max_latency_ms: float = 30.0) -> GainFit:
    """kp and kd scales per joint and the latency, continuous, for each candidate step
    fraction (STEP_FRACTIONS); the fraction with the smallest residual is kept. A robot
    with its own faster physics (or a real one) reports a torque that saw the state later
    in the tick than the fits' one-step model assumes; fitted at u = 1 regardless, the
    ankles' kd came out 8-19 % high and kp 4-9 % low against a 4-substep robot."""
    idx = joint_indices(joints)
    max_ticks = round(max_latency_ms / 1e3 / log.dt)
    start = round(0.25 / log.dt) + max_ticks + 1
    trials = [(u, *_fit_latency(log, idx, start, max_ticks, u)) for u in STEP_FRACTIONS]
    u, ticks, _, costs = min(trials, key=lambda t: t[2])
    fits, rss = _gain_fits(log, idx, ticks, start, u, JACKKNIFE_BLOCKS)
    # Std of the latency: residual variance over the cost's curvature (cost ~ rss).
    h = 0.05
    curvature = (
        _gain_fits(log, idx, max(ticks + h, 0), start, u)[1]
        - 2 * rss
        + _gain_fits(log, idx, max(ticks - h, 0), start, u)[1]
    ) / h**2
    samples = len(idx) * (len(log.t) - start)
    sigma2 = rss / max(samples - 2 * len(idx) - 1, 1)
    std = float(np.sqrt(2 * sigma2 / curvature)) if curvature > 0 else float("inf")
    spread = _latency_spread(log, idx, ticks, std, start, u, max_ticks)
    kp, kd = (
        {
            n: Estimate(f[0][g], _in_quadrature(f[1][g], spread[k, g], bias * f[0][g]))
            for k, (n, f) in enumerate(zip(joints, fits, strict=True))
        }
        for g, bias in ((0, MODEL_BIAS["kp_scale"]), (1, MODEL_BIAS["kd_scale"]))
    )
    return GainFit(ticks, std, costs, kp, kd, step_fraction=u)


def _latency_spread(log, idx, ticks, std, start, u, max_ticks) -> np.ndarray:
    """(joints, 2): how far (kp_s, kd_s) move when the latency moves by its std, half the
    difference of the fits at ticks -+ std. The gains are fitted at the best latency as
    if it were exact; a lag mistaken by a fraction of a tick reads as damping (the kd
    fitted 0.6 ms off the true latency was 6-10 % off with a std of 1 %)."""
    if not np.isfinite(std) or std <= 0:
        return np.zeros((len(idx), 2))
    lo, hi = max(ticks - std, 0.0), min(ticks + std, float(max_ticks))
    if hi <= lo:
        return np.zeros((len(idx), 2))
    at = [np.array([f[0] for f in _gain_fits(log, idx, x, start, u)[0]]) for x in (lo, hi)]
    return np.abs(at[1] - at[0]) * std / (hi - lo)


class _InverseDynamics:
    """M a + bias of the nominal hung G1 at logged states, for trial encoder offsets.
    `known` (29,) holds the encoder offsets already known for the joints outside the
    group (0 where unknown): the group's gravity load depends on where the rest of the
    body truly is."""

    def __init__(self, log: HungLog, idx: np.ndarray, rows: np.ndarray, known: np.ndarray):
        sim = hung_g1(log.dt)
        self.model, self.data, self.sim = sim.model, sim.data, sim
        self.idx, self.rows = idx, rows
        self.q = log.q[rows - 1] - known
        self.dq = log.dq[rows - 1]
        self.acc = (log.dq[rows] - log.dq[rows - 1]) / log.dt

    def __call__(self, offsets: np.ndarray) -> np.ndarray:
        """(N, n_group) generalized force the nominal rigid body needs at each sample."""
        m, d, s = self.model, self.data, self.sim
        out = np.empty((len(self.rows), len(self.idx)))
        ma = np.zeros(m.nv)
        qpos = np.zeros(m.nq)
        qvel = np.zeros(m.nv)
        acc = np.zeros(m.nv)
        for n in range(len(self.rows)):
            qpos[s.qpos_adr] = self.q[n]
            qpos[s.qpos_adr[self.idx]] -= offsets
            qvel[s.dof_adr] = self.dq[n]
            acc[s.dof_adr] = self.acc[n]
            d.qpos[:] = qpos
            d.qvel[:] = qvel
            mujoco.mj_fwdPosition(m, d)
            mujoco.mj_fwdVelocity(m, d)
            mujoco.mj_mulM(m, d, ma, acc)
            out[n] = (ma + d.qfrc_bias)[s.dof_adr[self.idx]]
        return out


def check_clear_of_limits(log: HungLog, joints: tuple[str, ...]) -> None:
    """Raise CalibrationError naming each joint of `joints` whose logged angle comes
    within LIMIT_CLEARANCE of a joint limit (the limit's constraint force is not modeled)."""
    bad = []
    for name in joints:
        q = log.q[:, JOINT_NAMES.index(name)]
        spec = JOINTS[name]
        if q.min() < spec.lower + LIMIT_CLEARANCE or q.max() > spec.upper - LIMIT_CLEARANCE:
            bad.append(
                f"{name} (logged [{q.min():.3f}, {q.max():.3f}] rad, limits "
                f"[{spec.lower:.3f}, {spec.upper:.3f}])"
            )
    if bad:
        raise CalibrationError(
            f"{log.path}: the log reaches joint limits, whose forces the fits do not model: "
            + "; ".join(bad)
            + ". Excite with a smaller amplitude or stiffer commanded gains (gain_scale)."
        )


def smoothed(log: HungLog, cutoff_hz: float | None) -> HungLog:
    """The log with joint positions, velocities and torques low-passed, zero phase
    (4th-order Butterworth forwards and backwards), so that accelerations differenced
    from velocities are not dominated by sensor noise; None: the log unchanged."""
    if cutoff_hz is None:
        return log
    sos = butter(4, cutoff_hz, fs=1.0 / log.dt, output="sos")
    return replace(
        log,
        q=sosfiltfilt(sos, log.q, axis=0),
        dq=sosfiltfilt(sos, log.dq, axis=0),
        tau=sosfiltfilt(sos, log.tau, axis=0),
    )


def _jackknife_offsets(sol, sample_row: np.ndarray, blocks: int = JACKKNIFE_BLOCKS):
    """Delete-one-block jackknife std of the offsets, linearized: leaving out a stretch
    of the log (by sample time) moves the solution by one Gauss-Newton step on the rest
    (from the full solution's residuals and Jacobian). On a noisy robot with its own
    physics the Jacobian std alone let a hung ankle pitch offset through at 0.0092 rad
    off with a std of 0.0039."""
    J, r = sol.jac, sol.fun
    edges = np.linspace(sample_row.min(), sample_row.max() + 1, blocks + 1)
    steps = []
    for a, b in itertools.pairwise(edges):
        keep = (sample_row < a) | (sample_row >= b)
        steps.append(-np.linalg.lstsq(J[keep], r[keep], rcond=None)[0])
    steps = np.array(steps)
    return np.sqrt((blocks - 1) / blocks * np.sum((steps - steps.mean(0)) ** 2, 0))


def fit_dynamics(
    log: HungLog,
    joints: tuple[str, ...],
    gains: GainFit,
    stride: int = 2,
    cutoff_hz: float | None = None,
    known_offsets: dict[str, float] | None = None,
) -> DynamicsFit:
    """Encoder offsets, armature, viscous and Coulomb friction of `joints`.

    `known_offsets`: encoder offsets of other joints (e.g. groups calibrated before).
    The hung rigid-body model places those joints at logged angle minus offset; joints
    not named are taken as nominal. On a robot whose every joint is off, a group fitted
    with the rest assumed nominal absorbs their error (the waist and arms carry each
    other; docs/findings.md, Calibration).

    Raises CalibrationError when a joint slid too little for friction and armature, or
    when the log reaches a joint limit; encoder offsets the log cannot see are held at
    nominal and listed in `unidentifiable`."""
    idx = joint_indices(joints)
    check_clear_of_limits(log, joints)
    log = smoothed(log, cutoff_hz)
    first = round(0.25 / log.dt) + int(np.ceil(gains.latency_ticks)) + 1
    rows = np.arange(first, len(log.t), stride)
    known = np.zeros(len(JOINT_NAMES))
    for name, offset in (known_offsets or {}).items():
        if name not in joints:
            known[JOINT_NAMES.index(name)] = offset
    inv = _InverseDynamics(log, idx, rows, known)
    acc, v_prev, v_next = inv.acc[:, idx], log.dq[rows - 1][:, idx], log.dq[rows][:, idx]
    # The velocity viscous friction acts on, on average over the tick: the end velocity
    # for the fits' one-step model, earlier in the tick for a robot with its own faster
    # physics (`_tick_states`, the step fraction the gain fit chose). At the end velocity
    # a noise-free 4-substep robot's ankle armature came out 1.1-1.3 % low, here 0.0 %
    # (the same fit with armature shifted by viscous x (1 - b) x dt).
    b = _tick_fractions(gains.step_fraction)[1]
    v_tick = (1 - b) * v_prev + b * v_next
    sliding = (np.abs(v_prev) > SLIDE_SPEED) & (np.sign(v_prev) == np.sign(v_next))
    if log.bad_state is not None:  # a lost (interpolated) or off-period state: no acc
        sliding &= ~(log.bad_state[rows] | log.bad_state[rows - 1])[:, None]
    tau = log.tau[rows][:, idx]  # the torque the joints got over each tick (tau_est)
    unidentifiable = [
        f"{n}: friction and armature (only {int(sliding[:, k].sum())} samples sliding "
        f"faster than {SLIDE_SPEED} rad/s; need {MIN_SAMPLES})"
        for k, n in enumerate(joints)
        if sliding[:, k].sum() < MIN_SAMPLES
    ]
    if unidentifiable:
        raise CalibrationError("too little excitation: " + "; ".join(unidentifiable))
    free = np.ones(len(idx), dtype=bool)  # offsets being fitted; the others stay nominal

    def solve(free_offsets: np.ndarray, blocks: int = 0):
        offsets = np.zeros(len(idx))
        offsets[free] = free_offsets
        y_all = tau - inv(offsets)
        res, fits = [], []
        for k in range(len(idx)):
            mask = sliding[:, k]
            X = np.stack([acc[mask, k], v_tick[mask, k], np.sign(v_prev[mask, k])], axis=1)
            coef, std, _ = _linear_fit(X, y_all[mask, k], blocks)
            res.append(y_all[mask, k] - X @ coef)
            fits.append((coef, std))
        return np.concatenate(res), fits

    def fit_offsets():
        if not free.any():
            return None
        return least_squares(
            lambda o: solve(o)[0], np.zeros(int(free.sum())), diff_step=1e-4, x_scale=0.01
        )

    def evaluate(sol):
        """Offsets (0 where held), their std (inf where held), residuals, linear fits."""
        x = sol.x if sol is not None else np.zeros(0)
        r, fits = solve(x, JACKKNIFE_BLOCKS)
        value, std = np.zeros(len(idx)), np.full(len(idx), np.inf)
        if sol is not None:
            dof = max(len(r) - len(x) - 3 * len(idx), 1)
            cov = (r @ r / dof) * np.linalg.pinv(sol.jac.T @ sol.jac)
            value[free] = x
            std[free] = np.maximum(
                np.sqrt(np.clip(np.diag(cov), 0, None)), _jackknife_offsets(sol, sample_row)
            )
        return value, std, r, fits

    def with_offset_spread(fits, x: np.ndarray, x_std: np.ndarray) -> list:
        """The linear fits' stds widened by the offsets' own uncertainty: armature and
        friction are solved at the fitted offsets as if those were exact, but an offset
        off by its std moves the gravity and inertia the joint worked against. On a
        noisy hung robot the hips' armature followed the offsets the velocity noise moved
        (hip pitch -10 %, yaw -5.5 %; at the true offsets -3 % and -0.5 %)."""
        base = np.array([f[0] for f in fits])
        spread2 = np.zeros_like(base)
        for i in range(len(x)):
            step = np.zeros_like(x)
            step[i] = x_std[i]
            spread2 += (np.array([f[0] for f in solve(x + step)[1]]) - base) ** 2
        return [
            (c, _in_quadrature(sd, np.sqrt(v))) for (c, sd), v in zip(fits, spread2, strict=True)
        ]

    # The sample (row of `rows`) behind each residual, in solve()'s order (joint by joint).
    sample_row = np.concatenate([np.flatnonzero(sliding[:, k]) for k in range(len(idx))])
    held: dict[str, str] = {}
    sol = fit_offsets()
    sensitivity = np.linalg.norm(sol.jac, axis=0) / np.sqrt(len(sol.fun))
    for k in np.flatnonzero(sensitivity < MIN_OFFSET_SENSITIVITY):
        held[joints[k]] = (
            f"the model's torques change by {sensitivity[k]:.2g} N m/rad rms with it "
            f"(< {MIN_OFFSET_SENSITIVITY})"
        )
        free[k] = False
    if held:
        sol = fit_offsets()
    off_value, off_std, r, fits = evaluate(sol)
    loose = free & (off_std > MAX_OFFSET_STD)
    if loose.any():
        for k in np.flatnonzero(loose):
            held[joints[k]] = (
                f"fitted {off_value[k]:.4f} +- {off_std[k]:.4f} rad: std above the "
                f"{MAX_OFFSET_STD} rad goal; needs a load on the joint (e.g. the robot "
                "standing, so the ankles carry it) or a longer excitation"
            )
        free[loose] = False
        off_value, off_std, r, fits = evaluate(fit_offsets())
    fits = with_offset_spread(fits, off_value[free], off_std[free])
    arm_nominal = inv.model.dof_armature[inv.sim.dof_adr[idx]]
    return DynamicsFit(
        encoder_offset={
            n: Estimate(off_value[k], off_std[k]) for k, n in enumerate(joints) if free[k]
        },
        armature={
            n: Estimate(
                max(arm_nominal[k] + fits[k][0][0], 0.0),
                _in_quadrature(fits[k][1][0], MODEL_BIAS["armature"] * arm_nominal[k]),
            )
            for k, n in enumerate(joints)
        },
        friction_viscous={
            n: Estimate(max(fits[k][0][1], 0.0), fits[k][1][1]) for k, n in enumerate(joints)
        },
        friction_coulomb={
            n: Estimate(max(fits[k][0][2], 0.0), fits[k][1][2]) for k, n in enumerate(joints)
        },
        unidentifiable={
            f"{n}.encoder_offset": f"{why}; held at nominal" for n, why in held.items()
        },
        residual_rms=float(np.sqrt(np.mean(r**2))),
        offset_sensitivity={n: float(v) for n, v in zip(joints, sensitivity, strict=True)},
    )


def resimulate(log: HungLog, overlay: Overlay) -> np.ndarray:
    """Measured joint positions (K, 29) of the hung G1 with `overlay`, driven open loop
    by the logged commands through the virtual robot's CommandGate (`overlay.latency_ms`,
    sub-tick included), as `run_hung` drives it."""
    robot = hung_g1(log.dt, overlay)
    gate = CommandGate(stale_after_s=np.inf, latency_s=overlay.latency_ms / 1e3)
    c = log.cmd
    q = np.empty_like(log.q)
    for k in range(len(log.t)):
        now = k * log.dt
        gate.receive(now, MotorCommand(c["q"][k], c["dq"][k], c["tau"][k], c["kp"][k], c["kd"][k]))
        robot.apply_blend(gate.blend(now, log.dt))
        if gate.state != "waiting":
            robot.step()
        q[k] = robot.sensors().q
    return q
