"""The gait clock of the walking G1 tasks (`g1-pull`, `g1-walk`): a periodic reference
for when each foot should be on the ground while the robot walks.

With t the episode time, t0 the end of the standing start and T the gait period, the
left leg's phase is phi_L = ((t - t0) / T) mod 1 and the right leg's
phi_R = (phi_L + 1/2) mod 1; a leg is in stance while its phase is below the stance
fraction s (s > 1/2 gives a double-support share of 2 s - 1 of the period). While no
walking speed is commanded both legs are in stance and the clock reads (0, 0).
The policy sees (sin 2 pi phi_L, cos 2 pi phi_L); the reward asks the feet's contacts to
match the stance pattern (rewards.feet_phase_contact). Humanoid locomotion recipes
(legged_gym's humanoids, unitree_rl_gym's G1) use the same clock: without it PPO on this
task learnt to stand still and shuffle for millions of steps.
"""

from __future__ import annotations

import numpy as np

from simreal.robots.g1 import JOINT_NAMES

WALKING_SPEED_M_S = 0.05
"""A commanded speed above this asks for steps: the clock runs, feet_air_time pays."""
TURNING_RATE_RAD_S = 0.1
"""Under the `planar` rule, a commanded yaw rate above this asks for steps too."""
WALKING_RULES = ("forward", "planar")
"""What counts as a walking command: `forward` (g1-pull) the forward speed alone, `planar`
(g1-walk) any of forward speed, sideways speed and yaw rate (turning on the spot is
stepping too). The rule travels in the policy's metadata (`gait_walking_rule`)."""
LEG_REFERENCE_JOINTS = np.array(
    [
        [
            JOINT_NAMES.index(f"{side}_{joint}_joint")
            for joint in ("hip_pitch", "knee", "ankle_pitch")
        ]
        for side in ("left", "right")
    ]
)
"""(2, 3) SDK indices of the joints the gait reference moves, per leg."""
HIP_YAW_JOINTS = np.array(
    [JOINT_NAMES.index(f"{side}_hip_yaw_joint") for side in ("left", "right")]
)
"""(2,) SDK indices of the hip yaw joints the turning reference moves (left, right)."""
SIDE_REFERENCE_JOINTS = np.array(
    [
        [JOINT_NAMES.index(f"{side}_{joint}_joint") for joint in ("hip_roll", "ankle_roll")]
        for side in ("left", "right")
    ]
)
"""(2, 2) SDK indices of the joints the sideways stride moves (hip roll, ankle roll), per
leg."""


def gait_phase(t: np.ndarray, start_s: float, period_s: float) -> np.ndarray:
    """(N,) left-leg phase in [0, 1) at episode times t (N,)."""
    return np.mod((t - start_s) / period_s, 1.0)


def leg_phases(phase: np.ndarray) -> np.ndarray:
    """(N, 2) phases of the left and right leg, the right half a period behind."""
    return np.stack([phase, np.mod(phase + 0.5, 1.0)], axis=1)


def stance(phase: np.ndarray, walking: np.ndarray, stance_fraction: float) -> np.ndarray:
    """(N, 2) bool: left and right foot expected on the ground."""
    legs = leg_phases(phase)
    return (legs < stance_fraction) | ~walking[:, None]


def clock_observation(phase: np.ndarray, walking: np.ndarray) -> np.ndarray:
    """(N, 2) float32: (sin, cos) of 2 pi phase while walking, (0, 0) otherwise."""
    angle = 2.0 * np.pi * phase
    clock = np.stack([np.sin(angle), np.cos(angle)], axis=1) * walking[:, None]
    return clock.astype(np.float32)


def swing_lift(phase: np.ndarray, walking: np.ndarray, stance_fraction: float) -> np.ndarray:
    """(N, 2) in [0, 1]: how far each leg (left, right) is through its swing, as
    sin(pi u) with u the swing progress; 0 in stance and while standing."""
    legs = leg_phases(phase)
    u = np.clip((legs - stance_fraction) / (1.0 - stance_fraction), 0.0, 1.0)
    return np.sin(np.pi * u) * (legs >= stance_fraction) * walking[:, None]


def leg_reference(lift: np.ndarray, amplitude_rad: float) -> np.ndarray:
    """(N, 2, 3) joint-target offsets (hip pitch, knee, ankle pitch) per leg: the thigh
    swings forward by a * lift, the knee bends by 2 a * lift and the ankle pitches by
    -a * lift, so the sole stays parallel to the pelvis. Straight legs would lift it by
    (l_thigh + l_shank)(1 - cos a) at mid-swing (3 cm for a = 0.3 rad); from the G1's
    bent-knee default pose it rises more, 6-7 cm measured at a = 0.3."""
    pattern = np.array([-1.0, 2.0, -1.0]) * amplitude_rad
    return lift[..., None] * pattern


def stride_sweep(phase: np.ndarray, walking: np.ndarray, stance_fraction: float) -> np.ndarray:
    """(N, 2) in [-1, 1] per leg: -1 to +1 through stance (the foot travels backward under
    the pelvis when walking forward), +1 back to -1 through swing; 0 while standing."""
    legs = leg_phases(phase)
    in_stance = legs < stance_fraction
    u_stance = legs / stance_fraction
    u_swing = (legs - stance_fraction) / (1.0 - stance_fraction)
    sweep = np.where(in_stance, 2.0 * u_stance - 1.0, 1.0 - 2.0 * u_swing)
    return sweep * walking[:, None]


def stride_reference(sweep: np.ndarray, speed: np.ndarray, gain_rad_s_m: float) -> np.ndarray:
    """(N, 2, 3) joint-target offsets (hip pitch, knee, ankle pitch) per leg for a stride
    at the commanded forward speed (N,) m/s (negative: backward): the hip sweeps by
    gain * speed * sweep and the ankle takes the opposite, keeping the sole level. With
    stance share s, period T and leg length l, a foot under the pelvis travels
    2 gain |v| l per stance of s T seconds, so gain = s T / (2 l) matches the speed
    (0.37 rad s/m for s = 0.55, T = 0.8 s, l = 0.6 m)."""
    hip = gain_rad_s_m * speed[:, None] * sweep
    return np.stack([hip, np.zeros_like(hip), -hip], axis=-1)


def side_reference(sweep: np.ndarray, speed: np.ndarray, gain_rad_s_m: float) -> np.ndarray:
    """(N, 2, 2) joint-target offsets (hip roll, ankle roll) per leg for a sideways stride
    at the commanded sideways speed (N,) m/s (positive: to the left): the hip rolls by
    -gain * speed * sweep, so a stance foot travels to the right under a pelvis going
    left, and the ankle takes the opposite, keeping the sole level. Positive hip roll
    moves the G1's foot to its left (+y) by about 0.52 m per rad from the default pose
    (robots/g1/kinematics), so gain = s T / (2 * 0.52 m) = 0.42 rad s/m matches the
    speed with the default clock. The legs sweep half a period apart, so at full speed
    the feet close in on each other by up to twice the foot's sweep."""
    hip = -gain_rad_s_m * speed[:, None] * sweep
    return np.stack([hip, -hip], axis=-1)


def turn_reference(sweep: np.ndarray, yaw_rate: np.ndarray, gain_s: float) -> np.ndarray:
    """(N, 2) hip-yaw offsets (rad) per leg for turning at the commanded yaw rate (N,)
    rad/s: -gain * rate * sweep. A stance foot stays put on the ground while the pelvis
    turns above it, so the stance hip's yaw (thigh relative to pelvis) must run against
    the turn; the swinging leg winds back and lands already turned. The pelvis turns
    by rate * s T in a stance, so gain = s T / 2 matches the rate (0.22 s for s = 0.55,
    T = 0.8 s)."""
    return -gain_s * yaw_rate[:, None] * sweep


def walking(command: np.ndarray, rule: str = "forward") -> np.ndarray:
    """(N,) bool: the commands (N, 3) ask for steps under `rule` (WALKING_RULES)."""
    if rule == "forward":
        return np.abs(command[:, 0]) > WALKING_SPEED_M_S
    if rule == "planar":
        return (np.hypot(command[:, 0], command[:, 1]) > WALKING_SPEED_M_S) | (
            np.abs(command[:, 2]) > TURNING_RATE_RAD_S
        )
    raise ValueError(f"gait walking rule {rule!r}: choose one of {WALKING_RULES}")


def reference_offset(
    phase: np.ndarray,
    command: np.ndarray,
    stance_fraction: float,
    amplitude_rad: float,
    stride_gain: float,
    rule: str = "forward",
    turn_gain: float = 0.0,
    side_gain: float = 0.0,
) -> np.ndarray:
    """(N, 29) joint-target offsets (SDK order) of the stepping reference at gait phases
    (N,) under commands (N, 3): `leg_reference` of the swing lift, plus
    `stride_reference` at the commanded forward speed when stride_gain > 0,
    `turn_reference` at the commanded yaw rate when turn_gain > 0 and `side_reference` at
    the commanded sideways speed when side_gain > 0; zero with amplitude 0;
    `rule` decides which commands step (`walking`). Training adds it under the policy's
    action; so does the deploy node."""
    offset = np.zeros((phase.shape[0], len(JOINT_NAMES)))
    if amplitude_rad == 0.0:
        return offset
    moving = walking(command, rule)
    reference = leg_reference(swing_lift(phase, moving, stance_fraction), amplitude_rad)
    if stride_gain > 0.0 or turn_gain > 0.0 or side_gain > 0.0:
        sweep = stride_sweep(phase, moving, stance_fraction)
        if stride_gain > 0.0:
            reference += stride_reference(sweep, command[:, 0], stride_gain)
        if turn_gain > 0.0:
            offset[:, HIP_YAW_JOINTS] = turn_reference(sweep, command[:, 2], turn_gain)
        if side_gain > 0.0:
            offset[:, SIDE_REFERENCE_JOINTS] = side_reference(sweep, command[:, 1], side_gain)
    offset[:, LEG_REFERENCE_JOINTS] = reference
    return offset
