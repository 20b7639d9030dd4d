"""Pose streams in rosbag2 logs: reading two geometry_msgs/PoseStamped topics for the
extrinsics fit, and writing a synthetic sensor pair with a known transform to test it.

Times are the messages' header stamps (when the sensor measured), not the log times
(when the logger received them): a camera frame arrives later than it was taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from scipy.spatial.transform import Rotation

from simreal.calibration.extrinsics import Poses
from simreal.calibration.logdata import CalibrationError
from simreal.deploy.logs.messages import pose_stamped
from simreal.deploy.logs.reader import LogReadError, read_metadata
from simreal.deploy.logs.rosbag2 import Rosbag2Writer

POSE_TYPE = "geometry_msgs/msg/PoseStamped"


def read_pose_topics(path: Path | str, topics: tuple[str, ...]) -> dict[str, Poses]:
    """Each topic's poses (header-stamp times in s since the earliest stamp); raises
    CalibrationError naming every missing or mistyped topic and the topics the log has."""
    path = Path(path)
    try:
        info = read_metadata(path)
    except LogReadError as err:
        raise CalibrationError(f"extrinsics: {err}") from None
    have = {
        t["topic_metadata"]["name"]: t["topic_metadata"]["type"]
        for t in info["topics_with_message_count"]
    }
    errors = [f"{t} (missing)" for t in topics if t not in have]
    errors += [
        f"{t} (type {have[t]}, need {POSE_TYPE})"
        for t in topics
        if have.get(t, POSE_TYPE) != POSE_TYPE
    ]
    if errors:
        listing = ", ".join(f"{k} [{v}]" for k, v in sorted(have.items())) or "none"
        raise CalibrationError(
            f"{path}: extrinsics needs two {POSE_TYPE} topics; unusable: {', '.join(errors)}. "
            f"The log has: {listing}. Name them with --topic-a/--topic-b"
        )
    rows: dict[str, list[list[float]]] = {t: [] for t in topics}
    for name in info["relative_file_paths"]:
        with (path / Path(name).name).open("rb") as stream:
            reader = make_reader(stream, decoder_factories=[DecoderFactory()])
            for _, channel, _, m in reader.iter_decoded_messages(topics=list(topics)):
                s = m.header.stamp
                p, q = m.pose.position, m.pose.orientation
                rows[channel.topic].append(
                    [s.sec + s.nanosec * 1e-9, p.x, p.y, p.z, q.x, q.y, q.z, q.w]
                )
    arrays = {t: np.asarray(sorted(r)) for t, r in rows.items()}
    for t, a in arrays.items():
        if len(a) < 4:
            raise CalibrationError(f"{path}: topic {t} has {len(a)} messages; need at least 4")
    t0 = min(a[0, 0] for a in arrays.values())
    return {
        t: Poses(a[:, 0] - t0, a[:, 1:4], Rotation.from_quat(a[:, 4:8])) for t, a in arrays.items()
    }


@dataclass(frozen=True)
class SyntheticPair:
    """A synthetic log's setup: motion, rates and noise (defaults: a well-excited pair)."""

    seconds: float = 20.0
    rate_a_hz: float = 100.0
    rate_b_hz: float = 30.0
    stamp_offset_b_s: float = 0.0123
    """B's first stamp after A's: the streams are sampled at different times."""
    noise_rot_rad: float = 0.001
    noise_pos_m: float = 0.001
    single_axis: bool = False
    """Rotate about body z only (translation still 3-D): the degenerate case."""


def random_transform(rng: np.random.Generator, max_translation_m: float = 0.3):
    """A random rotation (uniform) and a translation in a cube of half-side `max_translation_m`."""
    return Rotation.random(random_state=rng), rng.uniform(-max_translation_m, max_translation_m, 3)


def _trajectory(cfg: SyntheticPair, rng: np.random.Generator, t: np.ndarray):
    """A's pose in its world: smooth sums of sines (rotation vector and position)."""
    freq = rng.uniform(0.1, 0.6, (3, 3))
    phase = rng.uniform(0, 2 * np.pi, (3, 3))
    amp = rng.uniform(0.3, 0.8, (3, 3))
    waves = (amp[None] * np.sin(2 * np.pi * freq[None] * t[:, None, None] + phase[None])).sum(2)
    if cfg.single_axis:
        rotvec = np.zeros((len(t), 3))
        rotvec[:, 2] = waves[:, 0] * 1.5
    else:
        rotvec = waves * 0.6
    position = (
        (amp * np.cos(2 * np.pi * freq * 0.7 * t[:, None, None] + phase)).sum(2)
        if len(t)
        else np.zeros((0, 3))
    )
    return position, Rotation.from_rotvec(rotvec)


def write_synthetic_pair(
    path: Path | str,
    x: tuple[Rotation, np.ndarray],
    seed: int,
    cfg: SyntheticPair = SyntheticPair(),
    topics: tuple[str, str] = ("/imu/pose", "/camera/pose"),
    frames: tuple[str, str] = ("imu_odom", "camera_odom"),
) -> Path:
    """Write a rosbag2 log of two sensors on one rigid body: A's pose at rate_a_hz, B's
    pose (B = A X, in B's own world, offset from A's by a random Y) at rate_b_hz, both
    with isotropic rotation and position noise."""
    rng = np.random.default_rng(seed)
    rx, tx = x
    ry, ty = random_transform(rng, 2.0)
    ta = np.arange(0.0, cfg.seconds, 1.0 / cfg.rate_a_hz)
    tb = np.arange(cfg.stamp_offset_b_s, cfg.seconds, 1.0 / cfg.rate_b_hz)
    t_all = np.concatenate([ta, tb])
    pos_all, rot_all = _trajectory(cfg, rng, t_all)
    pa, qa = pos_all[: len(ta)], rot_all[: len(ta)]
    pw, qw = pos_all[len(ta) :], rot_all[len(ta) :]
    # B in B's world: T_VB = Y^-1 T_WA X.
    qb = ry.inv() * qw * rx
    pb = ry.inv().apply(pw + qw.apply(tx) - ty)

    def noisy(p, q, n):
        dq = Rotation.from_rotvec(rng.normal(0, cfg.noise_rot_rad, (n, 3)))
        return p + rng.normal(0, cfg.noise_pos_m, (n, 3)), dq * q

    pa, qa = noisy(pa, qa, len(ta))
    pb, qb = noisy(pb, qb, len(tb))
    base_ns = 1_700_000_000_000_000_000
    with Rosbag2Writer(path, custom_data={"simreal.synthetic": "extrinsics pair"}) as bag:
        for topic in topics:
            bag.add_topic(topic, POSE_TYPE)
        for (topic, frame), times, p, q in (
            ((topics[0], frames[0]), ta, pa, qa),
            ((topics[1], frames[1]), tb, pb, qb),
        ):
            xyzw = q.as_quat()
            for k, tk in enumerate(times):
                ns = base_ns + round(float(tk) * 1e9)
                wxyz = (xyzw[k, 3], *xyzw[k, :3])
                bag.write(topic, pose_stamped(ns, frame, p[k], wxyz), ns)
    return Path(path)
