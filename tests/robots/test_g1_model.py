"""The Unitree G1 description: its MuJoCo model and its URDF, against the published facts.

Expected numbers are written out here from docs/facts.md, independently of the
robot's own tables, so a wrong table fails a test.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pybullet
import pytest

from simreal.robots.g1 import (
    ACTUATORS,
    DEFAULT_JOINT_POS,
    JOINT_NAMES,
    JOINTS,
    build_mjcf,
    build_urdf,
    describe,
)
from simreal.robots.g1.mjcf import self_collision_excludes

TOTAL_MASS = 33.34
SIDES = ("left", "right")

# docs/facts.md: Unitree SDK motor order.
SDK_ORDER = (
    *(
        f"{side}_{j}_joint"
        for side in SIDES
        for j in ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
    ),
    "waist_yaw_joint",
    "waist_roll_joint",
    "waist_pitch_joint",
    *(
        f"{side}_{j}_joint"
        for side in SIDES
        for j in (
            "shoulder_pitch",
            "shoulder_roll",
            "shoulder_yaw",
            "elbow",
            "wrist_roll",
            "wrist_pitch",
            "wrist_yaw",
        )
    ),
)

# docs/facts.md: (lower, upper, torque N m, velocity rad/s), rounded there to 4 decimals.
_LIMITS = {
    "hip_pitch": (-2.5307, 2.8798, 88, 32),
    "hip_yaw": (-2.7576, 2.7576, 88, 32),
    "knee": (-0.0873, 2.8798, 139, 20),
    "ankle_pitch": (-0.8727, 0.5236, 50, 37),
    "ankle_roll": (-0.2618, 0.2618, 50, 37),
    "waist_yaw": (-2.618, 2.618, 88, 32),
    "waist_roll": (-0.52, 0.52, 50, 37),
    "waist_pitch": (-0.52, 0.52, 50, 37),
    "shoulder_pitch": (-3.0892, 2.6704, 25, 37),
    "shoulder_yaw": (-2.618, 2.618, 25, 37),
    "elbow": (-1.0472, 2.0944, 25, 37),
    "wrist_roll": (-1.9722, 1.9722, 25, 37),
    "wrist_pitch": (-1.6144, 1.6144, 5, 22),
    "wrist_yaw": (-1.6144, 1.6144, 5, 22),
}
_SIDED_LIMITS = {
    "left_hip_roll_joint": (-0.5236, 2.9671, 139, 20),
    "right_hip_roll_joint": (-2.9671, 0.5236, 139, 20),
    "left_shoulder_roll_joint": (-1.5882, 2.2515, 25, 37),
    "right_shoulder_roll_joint": (-2.2515, 1.5882, 25, 37),
}
# docs/facts.md: (kp, kd) per joint kind.
_GAINS = {
    **dict.fromkeys(("hip_pitch", "hip_yaw", "waist_yaw"), (40.2, 2.6)),
    **dict.fromkeys(("hip_roll", "knee"), (99.1, 6.3)),
    **dict.fromkeys(("ankle_pitch", "ankle_roll", "waist_roll", "waist_pitch"), (28.5, 1.8)),
    **dict.fromkeys(
        ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_roll"), (14.3, 0.9)
    ),
    **dict.fromkeys(("wrist_pitch", "wrist_yaw"), (16.8, 1.1)),
}


def _kind(name: str) -> str:
    return name.removeprefix("left_").removeprefix("right_").removesuffix("_joint")


EXPECTED_LIMITS = np.array([_SIDED_LIMITS.get(n) or _LIMITS[_kind(n)] for n in SDK_ORDER])
EXPECTED_GAINS = np.array([_GAINS[_kind(n)] for n in SDK_ORDER])
FACTS_ROUNDING = 1e-4


pytestmark = pytest.mark.usefixtures("work_in_tmp")


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(build_mjcf())


def standing_data(model: mujoco.MjModel) -> mujoco.MjData:
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("stand").id)
    mujoco.mj_forward(model, data)
    return data


def upright(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """z of gravity projected into the torso frame (-1 when upright)."""
    return -data.xmat[model.body("torso_link").id].reshape(3, 3)[2, 2]


def test_joint_names_are_the_sdk_motor_order():
    assert JOINT_NAMES == SDK_ORDER
    assert len(DEFAULT_JOINT_POS) == 29


def test_mjcf_has_29_actuated_hinges_in_sdk_order(model):
    assert model.opt.timestep == 0.005
    assert model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE and model.joint(0).name == "pelvis"
    assert model.body(model.jnt_bodyid[0]).name == "pelvis"
    assert model.njnt == 30 and model.nu == 29
    assert all(model.jnt_type[1:] == mujoco.mjtJoint.mjJNT_HINGE)
    assert tuple(model.joint(i).name for i in range(1, 30)) == SDK_ORDER
    # qpos/qvel follow the same order, and actuator i drives joint i.
    np.testing.assert_array_equal(model.jnt_qposadr[1:], np.arange(7, 36))
    np.testing.assert_array_equal(model.actuator_trnid[:, 0], np.arange(1, 30))


def test_limits_match_facts(model):
    np.testing.assert_allclose(model.jnt_range[1:], EXPECTED_LIMITS[:, :2], atol=FACTS_ROUNDING)
    assert all(model.jnt_limited[1:])
    torque = EXPECTED_LIMITS[:, 2]
    assert all(model.actuator_forcelimited)
    np.testing.assert_array_equal(model.actuator_forcerange, np.stack([-torque, torque], axis=1))
    velocity = [JOINTS[n].velocity_limit for n in SDK_ORDER]
    np.testing.assert_array_equal(velocity, EXPECTED_LIMITS[:, 3])


def test_pd_gains_armature_and_action_scale(model):
    kp, kd = EXPECTED_GAINS.T
    np.testing.assert_allclose(model.actuator_gainprm[:, 0], kp)
    np.testing.assert_allclose(model.actuator_biasprm[:, :3], np.stack([0 * kp, -kp, -kd], 1))
    armature = kp / (2 * math.pi * 10) ** 2
    np.testing.assert_allclose(model.dof_armature[6:], armature, rtol=1e-8)
    # The gains are a 10 Hz, damping-ratio-2 oscillator on the rotor armature.
    np.testing.assert_allclose(kd, 4 * armature * 2 * math.pi * 10, rtol=0.06)
    scale = [ACTUATORS[n].action_scale for n in SDK_ORDER]
    np.testing.assert_allclose(scale, 0.25 * EXPECTED_LIMITS[:, 2] / kp, rtol=1e-12)


def test_total_mass_and_link_inertia(model):
    assert model.body_subtreemass[model.body("pelvis").id] == pytest.approx(TOTAL_MASS, rel=0.01)
    # Torso, straight from the source description: mass, centre of mass, full tensor.
    torso = model.body("torso_link").id
    assert model.body_mass[torso] == pytest.approx(6.78)
    np.testing.assert_allclose(model.body_ipos[torso], [0.000931, 0.000346, 0.15082])
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, model.body_iquat[torso])
    rot = rot.reshape(3, 3)
    tensor = rot @ np.diag(model.body_inertia[torso]) @ rot.T
    expected = [
        [0.05905, 3.3302e-05, -0.0017715],
        [3.3302e-05, 0.047014, -2.2399e-05],
        [-0.0017715, -2.2399e-05, 0.025652],
    ]
    np.testing.assert_allclose(tensor, expected, atol=1e-9)


def test_stand_keyframe_rests_the_soles_on_the_floor(model):
    data = standing_data(model)
    np.testing.assert_allclose(data.qpos[7:], DEFAULT_JOINT_POS)
    np.testing.assert_allclose(data.ctrl, DEFAULT_JOINT_POS)
    assert 0.72 < data.qpos[2] < 0.8
    for foot in ("left_foot", "right_foot"):
        geom = model.geom(foot).id
        rot = data.geom_xmat[geom].reshape(3, 3)
        corners = np.array([[x, y, -1.0] for x in (-1, 1) for y in (-1, 1)])
        lowest = (data.geom_xpos[geom] + corners * model.geom_size[geom] @ rot.T)[:, 2]
        assert lowest.min() == pytest.approx(0.0, abs=1e-9)
        assert lowest.max() < 0.005  # level within 5 mm over the sole


def test_stands_for_10_s_on_its_own_feet(model):
    """PD holding the default pose, feet on the floor, no support: 2000 steps of 5 ms.

    The hold is 10x stiffer than the policy gains (the torque limits stay): at the
    policy gains the robot has no static stance (see the next test).
    """
    stiff = mujoco.MjModel.from_xml_string(build_mjcf())
    stiff.actuator_gainprm[:, 0] *= 10.0
    stiff.actuator_biasprm[:, 1:3] *= 10.0
    data = standing_data(stiff)
    pelvis = stiff.body("pelvis").id
    limit = stiff.actuator_forcerange[:, 1]
    lowest, most_tilted, most_torque = np.inf, -np.inf, 0.0
    for _ in range(2000):
        mujoco.mj_step(stiff, data)
        lowest = min(lowest, data.xpos[pelvis, 2])
        most_tilted = max(most_tilted, upright(stiff, data))
        most_torque = max(most_torque, np.max(np.abs(data.actuator_force) / limit))
    assert lowest > 0.6
    assert most_tilted < -0.9
    assert most_torque <= 1.0
    # Only the soles touch the floor, and they carry the whole weight.
    soles = {stiff.geom("left_foot").id, stiff.geom("right_foot").id}
    floor = stiff.geom("floor").id
    touching = {int(g) for c in data.contact[: data.ncon] for g in c.geom if g != floor}
    assert touching == soles and data.ncon >= 4
    force = np.zeros(6)
    normal = 0.0
    for i in range(data.ncon):
        mujoco.mj_contactForce(stiff, data, i, force)
        normal += force[0]
    weight = TOTAL_MASS * 9.81
    assert normal == pytest.approx(weight, rel=0.02)
    # At rest the IMUs read gravity and the hand sensors the hand's own weight.
    assert np.linalg.norm(data.sensor("imu_pelvis_accel").data) == pytest.approx(9.81, rel=0.01)
    assert np.linalg.norm(data.sensor("imu_torso_gyro").data) < 1e-2
    hand = np.linalg.norm(data.sensor("left_hand_force").data)
    assert hand == pytest.approx(0.17 * 9.81, rel=0.02)


def test_policy_gains_alone_cannot_hold_a_stance(model):
    """Why the hold above is stiffer: both ankle pitches give 2 x 28.5 N m/rad against a
    toppling m g h of about 210 N m/rad, so the robot needs a balancing policy."""
    data = standing_data(model)
    pelvis = model.body("pelvis").id
    fell_after_s = None
    for step in range(2000):
        mujoco.mj_step(model, data)
        if data.xpos[pelvis, 2] < 0.6 or upright(model, data) > -0.9:
            fell_after_s = (step + 1) * model.opt.timestep
            break
    assert fell_after_s is not None and fell_after_s < 5.0


def test_pd_torque_is_clipped_at_the_torque_limit(model):
    data = standing_data(model)
    data.ctrl[:] = model.actuator_ctrlrange[:, 1]  # targets far from the pose: PD saturates
    limit = model.actuator_forcerange[:, 1]
    saturated = np.zeros(model.nu, dtype=bool)
    for _ in range(20):
        mujoco.mj_step(model, data)
        assert np.all(np.abs(data.actuator_force) <= limit + 1e-9)
        np.testing.assert_allclose(data.qfrc_actuator[6:], data.actuator_force)
        saturated |= np.isclose(np.abs(data.actuator_force), limit)
    assert saturated[
        [JOINT_NAMES.index("left_knee_joint"), JOINT_NAMES.index("waist_yaw_joint")]
    ].all()


def test_urdf_loads_in_pybullet_with_the_same_joints_and_mass(tmp_path):
    path = tmp_path / "g1.urdf"
    path.write_text(build_urdf())
    client = pybullet.connect(pybullet.DIRECT)
    try:
        robot = pybullet.loadURDF(
            str(path), flags=pybullet.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client
        )
        infos = [
            pybullet.getJointInfo(robot, i, physicsClientId=client)
            for i in range(pybullet.getNumJoints(robot, physicsClientId=client))
        ]
        mass = sum(
            pybullet.getDynamicsInfo(robot, link, physicsClientId=client)[0]
            for link in range(-1, len(infos))
        )
    finally:
        pybullet.disconnect(client)
    revolute = [info for info in infos if info[2] == pybullet.JOINT_REVOLUTE]
    assert tuple(info[1].decode() for info in revolute) == SDK_ORDER
    limits = np.array([info[8:12] for info in revolute])  # lower, upper, effort, velocity
    np.testing.assert_allclose(limits, EXPECTED_LIMITS, atol=FACTS_ROUNDING)
    assert mass == pytest.approx(TOTAL_MASS, rel=0.01)


def test_describe_lists_the_joints_in_hardware_order():
    rows = describe().splitlines()[-29:]
    assert [row.split()[1] for row in rows] == list(SDK_ORDER)
    assert rows[3].split()[-1] == "0.669"  # left knee default


def _robot_contacts(model: mujoco.MjModel, data: mujoco.MjData) -> list[tuple[str, str]]:
    """Body pairs of the robot touching each other (floor contacts left out)."""
    floor = model.geom("floor").id
    return [
        (model.body(model.geom_bodyid[c.geom1]).name, model.body(model.geom_bodyid[c.geom2]).name)
        for c in data.contact[: data.ncon]
        if floor not in (c.geom1, c.geom2)
    ]


def test_self_collision_is_on_with_a_short_rule_based_exclude_list(model):
    excludes = self_collision_excludes()
    assert len(excludes) == len(set(excludes)) <= 40
    # every exclusion is a kinematic neighbour pair or a pair touching at the default pose
    for a, b in excludes:
        assert model.body(a).id and model.body(b).id
    assert ("pelvis", "torso_link") in excludes
    # the hands, arms and legs are NOT excluded from the body they could pass through
    for pair in (
        ("left_rubber_hand", "torso_link"),
        ("pelvis", "right_rubber_hand"),
        ("left_elbow_link", "torso_link"),
        ("left_knee_link", "right_knee_link"),
    ):
        assert tuple(sorted(pair)) not in excludes
    assert model.nexclude == len(excludes)


def test_no_robot_contact_at_the_default_pose(model):
    data = standing_data(model)
    assert _robot_contacts(model, data) == []


def test_an_arm_through_the_torso_is_a_contact(model):
    """Left shoulder rolled in and elbow folded: the forearm and hand sweep into the
    chest. With self-collision that is a contact the solver pushes apart; without it the
    limb passes through unseen."""
    data = standing_data(model)
    qpos = data.qpos.copy()
    for name, angle in (
        ("left_shoulder_pitch_joint", -1.2),
        ("left_shoulder_roll_joint", -1.2),
        ("left_elbow_joint", 1.4),
    ):
        qpos[model.jnt_qposadr[model.joint(name).id]] = angle
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    contacts = _robot_contacts(model, data)
    assert any("torso_link" in pair and any("left" in b for b in pair) for pair in contacts), (
        contacts
    )
    ideal = mujoco.MjModel.from_xml_string(build_mjcf(self_collision=False))
    ideal_data = mujoco.MjData(ideal)
    ideal_data.qpos[:] = qpos
    mujoco.mj_forward(ideal, ideal_data)
    assert _robot_contacts(ideal, ideal_data) == []


def test_self_penetration_measures_the_deepest_robot_contact(model):
    from simreal.robots.g1.contacts import SelfPenetration

    measure = SelfPenetration(model)
    data = standing_data(model)
    standing = data.qpos.copy()
    folded = standing.copy()
    for name, angle in (
        ("left_shoulder_pitch_joint", -1.2),
        ("left_shoulder_roll_joint", -1.2),
        ("left_elbow_joint", 1.4),
    ):
        folded[model.jnt_qposadr[model.joint(name).id]] = angle
    depth = measure(np.stack([standing, folded]))
    assert depth[0] == 0.0  # feet on the floor do not count
    assert 0.005 < depth[1] < 0.2


def test_self_contact_sensor_counts_robot_contacts_and_their_depth(model):
    """The engine-side sensor the `self_contact` reward reads agrees with the evaluation's
    own collision query: nothing at the default pose (the soles on the floor do not count),
    the folded arm's contacts and their deepest penetration; absent without self-collision."""
    from simreal.robots.g1.contacts import SelfPenetration
    from simreal.robots.g1.mjcf import SELF_CONTACT_SENSOR

    sensor = model.sensor(SELF_CONTACT_SENSOR)
    data = standing_data(model)
    mujoco.mj_forward(model, data)
    assert data.ncon > 0  # the soles
    assert data.sensordata[sensor.adr[0]] == 0.0
    for name, angle in (
        ("left_shoulder_pitch_joint", -1.2),
        ("left_shoulder_roll_joint", -1.2),
        ("left_elbow_joint", 1.4),
    ):
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = angle
    mujoco.mj_forward(model, data)
    found, dist = data.sensordata[sensor.adr[0] : sensor.adr[0] + 2]
    assert found == len(_robot_contacts(model, data)) > 0
    assert -dist == pytest.approx(SelfPenetration(model)(data.qpos)[0])
    ideal = mujoco.MjModel.from_xml_string(build_mjcf(self_collision=False))
    with pytest.raises(KeyError):
        ideal.sensor(SELF_CONTACT_SENSOR)
