"""The G1's joints: hardware order, kinematic frames, limits, and the standing pose.

Numbers come from Unitree's public 29-DoF G1 description (BSD-3), revision 1.0,
written out here as the robot's own tables. A joint's frame is its child link's frame:
`pos` and `rpy` place it on the parent link (rpy is roll, pitch, yaw about the parent's
fixed x, y, z axes), and the joint turns about `axis` in that frame.
"""

from __future__ import annotations

from dataclasses import dataclass

Vec3 = tuple[float, float, float]

ROOT_LINK = "pelvis"

JOINT_NAMES: tuple[str, ...] = (
    "left_hip_pitch_joint",  # 0
    "left_hip_roll_joint",  # 1
    "left_hip_yaw_joint",  # 2
    "left_knee_joint",  # 3
    "left_ankle_pitch_joint",  # 4
    "left_ankle_roll_joint",  # 5
    "right_hip_pitch_joint",  # 6
    "right_hip_roll_joint",  # 7
    "right_hip_yaw_joint",  # 8
    "right_knee_joint",  # 9
    "right_ankle_pitch_joint",  # 10
    "right_ankle_roll_joint",  # 11
    "waist_yaw_joint",  # 12
    "waist_roll_joint",  # 13
    "waist_pitch_joint",  # 14
    "left_shoulder_pitch_joint",  # 15
    "left_shoulder_roll_joint",  # 16
    "left_shoulder_yaw_joint",  # 17
    "left_elbow_joint",  # 18
    "left_wrist_roll_joint",  # 19
    "left_wrist_pitch_joint",  # 20
    "left_wrist_yaw_joint",  # 21
    "right_shoulder_pitch_joint",  # 22
    "right_shoulder_roll_joint",  # 23
    "right_shoulder_yaw_joint",  # 24
    "right_elbow_joint",  # 25
    "right_wrist_roll_joint",  # 26
    "right_wrist_pitch_joint",  # 27
    "right_wrist_yaw_joint",  # 28
)
"""Unitree SDK motor order: the order of every joint vector that enters or leaves the robot."""


@dataclass(frozen=True)
class JointSpec:
    """One actuated revolute joint; angles in rad, torque in N m, speed in rad/s."""

    name: str
    parent: str
    child: str
    pos: Vec3
    rpy: Vec3
    axis: Vec3
    lower: float
    upper: float
    torque_limit: float
    velocity_limit: float

    @property
    def kind(self) -> str:
        """The joint without side and suffix (`left_hip_pitch_joint` -> `hip_pitch`)."""
        return self.name.removeprefix("left_").removeprefix("right_").removesuffix("_joint")


@dataclass(frozen=True)
class FixedMount:
    """A link (or a massless frame) rigidly mounted on a parent link."""

    name: str
    parent: str
    child: str
    pos: Vec3
    rpy: Vec3 = (0.0, 0.0, 0.0)


_X: Vec3 = (1.0, 0.0, 0.0)
_Y: Vec3 = (0.0, 1.0, 0.0)
_Z: Vec3 = (0.0, 0.0, 1.0)
_0: Vec3 = (0.0, 0.0, 0.0)
"""Axes and the zero offset, short so the tables below read as tables."""

# fmt: off
JOINTS: dict[str, JointSpec] = {j.name: j for j in (
    #         name                          parent                       child                        pos                                rpy                                 ax  lower         upper        torque velocity
    JointSpec("left_hip_pitch_joint",       "pelvis",                    "left_hip_pitch_link",       (0.0, 0.064452, -0.1027),          _0,                                 _Y, -2.5307,      2.8798,      88.0,  32.0),
    JointSpec("left_hip_roll_joint",        "left_hip_pitch_link",       "left_hip_roll_link",        (0.0, 0.052, -0.030465),           (0.0, -0.1749, 0.0),                _X, -0.5236,      2.9671,      139.0, 20.0),
    JointSpec("left_hip_yaw_joint",         "left_hip_roll_link",        "left_hip_yaw_link",         (0.025001, 0.0, -0.12412),         _0,                                 _Z, -2.7576,      2.7576,      88.0,  32.0),
    JointSpec("left_knee_joint",            "left_hip_yaw_link",         "left_knee_link",            (-0.078273, 0.0021489, -0.17734),  (0.0, 0.1749, 0.0),                 _Y, -0.087267,    2.8798,      139.0, 20.0),
    JointSpec("left_ankle_pitch_joint",     "left_knee_link",            "left_ankle_pitch_link",     (0.0, -9.4445e-05, -0.30001),      _0,                                 _Y, -0.87267,     0.5236,      50.0,  37.0),
    JointSpec("left_ankle_roll_joint",      "left_ankle_pitch_link",     "left_ankle_roll_link",      (0.0, 0.0, -0.017558),             _0,                                 _X, -0.2618,      0.2618,      50.0,  37.0),
    JointSpec("right_hip_pitch_joint",      "pelvis",                    "right_hip_pitch_link",      (0.0, -0.064452, -0.1027),         _0,                                 _Y, -2.5307,      2.8798,      88.0,  32.0),
    JointSpec("right_hip_roll_joint",       "right_hip_pitch_link",      "right_hip_roll_link",       (0.0, -0.052, -0.030465),          (0.0, -0.1749, 0.0),                _X, -2.9671,      0.5236,      139.0, 20.0),
    JointSpec("right_hip_yaw_joint",        "right_hip_roll_link",       "right_hip_yaw_link",        (0.025001, 0.0, -0.12412),         _0,                                 _Z, -2.7576,      2.7576,      88.0,  32.0),
    JointSpec("right_knee_joint",           "right_hip_yaw_link",        "right_knee_link",           (-0.078273, -0.0021489, -0.17734), (0.0, 0.1749, 0.0),                 _Y, -0.087267,    2.8798,      139.0, 20.0),
    JointSpec("right_ankle_pitch_joint",    "right_knee_link",           "right_ankle_pitch_link",    (0.0, 9.4445e-05, -0.30001),       _0,                                 _Y, -0.87267,     0.5236,      50.0,  37.0),
    JointSpec("right_ankle_roll_joint",     "right_ankle_pitch_link",    "right_ankle_roll_link",     (0.0, 0.0, -0.017558),             _0,                                 _X, -0.2618,      0.2618,      50.0,  37.0),
    JointSpec("waist_yaw_joint",            "pelvis",                    "waist_yaw_link",            _0,                                _0,                                 _Z, -2.618,       2.618,       88.0,  32.0),
    JointSpec("waist_roll_joint",           "waist_yaw_link",            "waist_roll_link",           (-0.0039635, 0.0, 0.044),          _0,                                 _X, -0.52,        0.52,        50.0,  37.0),
    JointSpec("waist_pitch_joint",          "waist_roll_link",           "torso_link",                _0,                                _0,                                 _Y, -0.52,        0.52,        50.0,  37.0),
    JointSpec("left_shoulder_pitch_joint",  "torso_link",                "left_shoulder_pitch_link",  (0.0039563, 0.10022, 0.24778),     (0.27931, 5.4949e-05, -0.00019159), _Y, -3.0892,      2.6704,      25.0,  37.0),
    JointSpec("left_shoulder_roll_joint",   "left_shoulder_pitch_link",  "left_shoulder_roll_link",   (0.0, 0.038, -0.013831),           (-0.27925, 0.0, 0.0),               _X, -1.5882,      2.2515,      25.0,  37.0),
    JointSpec("left_shoulder_yaw_joint",    "left_shoulder_roll_link",   "left_shoulder_yaw_link",    (0.0, 0.00624, -0.1032),           _0,                                 _Z, -2.618,       2.618,       25.0,  37.0),
    JointSpec("left_elbow_joint",           "left_shoulder_yaw_link",    "left_elbow_link",           (0.015783, 0.0, -0.080518),        _0,                                 _Y, -1.0472,      2.0944,      25.0,  37.0),
    JointSpec("left_wrist_roll_joint",      "left_elbow_link",           "left_wrist_roll_link",      (0.1, 0.00188791, -0.01),          _0,                                 _X, -1.972222054, 1.972222054, 25.0,  37.0),
    JointSpec("left_wrist_pitch_joint",     "left_wrist_roll_link",      "left_wrist_pitch_link",     (0.038, 0.0, 0.0),                 _0,                                 _Y, -1.614429558, 1.614429558, 5.0,   22.0),
    JointSpec("left_wrist_yaw_joint",       "left_wrist_pitch_link",     "left_wrist_yaw_link",       (0.046, 0.0, 0.0),                 _0,                                 _Z, -1.614429558, 1.614429558, 5.0,   22.0),
    JointSpec("right_shoulder_pitch_joint", "torso_link",                "right_shoulder_pitch_link", (0.0039563, -0.10021, 0.24778),    (-0.27931, 5.4949e-05, 0.00019159), _Y, -3.0892,      2.6704,      25.0,  37.0),
    JointSpec("right_shoulder_roll_joint",  "right_shoulder_pitch_link", "right_shoulder_roll_link",  (0.0, -0.038, -0.013831),          (0.27925, 0.0, 0.0),                _X, -2.2515,      1.5882,      25.0,  37.0),
    JointSpec("right_shoulder_yaw_joint",   "right_shoulder_roll_link",  "right_shoulder_yaw_link",   (0.0, -0.00624, -0.1032),          _0,                                 _Z, -2.618,       2.618,       25.0,  37.0),
    JointSpec("right_elbow_joint",          "right_shoulder_yaw_link",   "right_elbow_link",          (0.015783, 0.0, -0.080518),        _0,                                 _Y, -1.0472,      2.0944,      25.0,  37.0),
    JointSpec("right_wrist_roll_joint",     "right_elbow_link",          "right_wrist_roll_link",     (0.1, -0.00188791, -0.01),         _0,                                 _X, -1.972222054, 1.972222054, 25.0,  37.0),
    JointSpec("right_wrist_pitch_joint",    "right_wrist_roll_link",     "right_wrist_pitch_link",    (0.038, 0.0, 0.0),                 _0,                                 _Y, -1.614429558, 1.614429558, 5.0,   22.0),
    JointSpec("right_wrist_yaw_joint",      "right_wrist_pitch_link",    "right_wrist_yaw_link",      (0.046, 0.0, 0.0),                 _0,                                 _Z, -1.614429558, 1.614429558, 5.0,   22.0),
)}
"""Joint name -> its spec; iterate JOINT_NAMES for hardware order."""

LINK_MOUNTS: tuple[FixedMount, ...] = (
    FixedMount("pelvis_contour_joint",  "pelvis",               "pelvis_contour_link", _0),
    FixedMount("logo_joint",            "torso_link",           "logo_link",           (0.0039635, 0.0, -0.044)),
    FixedMount("head_joint",            "torso_link",           "head_link",           (0.0039635, 0.0, -0.044)),
    FixedMount("left_hand_palm_joint",  "left_wrist_yaw_link",  "left_rubber_hand",    (0.0415, 0.003, 0.0)),
    FixedMount("right_hand_palm_joint", "right_wrist_yaw_link", "right_rubber_hand",   (0.0415, -0.003, 0.0)),
)
"""Links with mass bolted to a parent: head, hands (rubber palms), shells."""

FRAMES: tuple[FixedMount, ...] = (
    FixedMount("imu_in_pelvis_joint",   "pelvis",               "imu_in_pelvis",       (0.04525, 0.0, -0.08339)),
    FixedMount("imu_in_torso_joint",    "torso_link",           "imu_in_torso",        (-0.03959, -0.00224, 0.14792)),
    FixedMount("d435_joint",            "torso_link",           "d435_link",           (0.0576235, 0.01753, 0.42987), (0.0, 0.8307767239493009, 0.0)),
    FixedMount("mid360_joint",          "torso_link",           "mid360_link",         (0.0002835, 3e-05, 0.41618), (0.0, 0.04014257279586953, 0.0)),
)
"""Massless sensor frames: the two IMUs, the head depth camera and the head lidar."""
# fmt: on

_STAND_POSE: dict[str, float] = {
    "left_hip_pitch_joint": -0.312,
    "left_knee_joint": 0.669,
    "left_ankle_pitch_joint": -0.363,
    "right_hip_pitch_joint": -0.312,
    "right_knee_joint": 0.669,
    "right_ankle_pitch_joint": -0.363,
    "left_shoulder_pitch_joint": 0.2,
    "left_shoulder_roll_joint": 0.2,
    "left_elbow_joint": 0.6,
    "right_shoulder_pitch_joint": 0.2,
    "right_shoulder_roll_joint": -0.2,
    "right_elbow_joint": 0.6,
}

DEFAULT_JOINT_POS: tuple[float, ...] = tuple(_STAND_POSE.get(name, 0.0) for name in JOINT_NAMES)
"""Standing pose (rad) in JOINT_NAMES order: knees bent so the PD joints have travel both
ways; hip pitch + knee + ankle pitch = -0.006 rad keeps the soles level, and the arms
hang slightly forward and out from the body. Pelvis about 0.76 m above the floor."""


def children_of(link: str) -> tuple[JointSpec | FixedMount, ...]:
    """The joints and mounts hanging from `link`: actuated ones first, in hardware order.

    Walking the tree this way makes MuJoCo's qpos order and PyBullet's joint indices
    follow JOINT_NAMES.
    """
    actuated = [JOINTS[name] for name in JOINT_NAMES if JOINTS[name].parent == link]
    fixed = [m for m in (*LINK_MOUNTS, *FRAMES) if m.parent == link]
    return (*actuated, *fixed)
