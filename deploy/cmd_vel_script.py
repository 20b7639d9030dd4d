"""A scripted walking command: ROS 2 `geometry_msgs/Twist` on `cmd_vel`, one velocity
after another, each held for its time.

Why: a deployment is judged on a repeatable drive (walk out, turn, come back), and the
machine running it may have no ROS 2 for `ros2 topic pub`. This publishes the same
message on the same DDS topic (`rt/cmd_vel`, ROS 2 type naming) that `ros2 topic pub`
would, at a steady rate, so the node's half-second command decay never fires inside a
segment; after the last segment it sends zeros for a second, so the robot is told to stand
rather than left to the decay.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from simreal.deploy.dds import DdsParticipant, stream_qos, take_raw, topic_name
from simreal.deploy.dds import ros2 as msgs
from simreal.deploy.dds.unitree_hg import LOWSTATE_TOPIC, LowState_
from simreal.deploy.g1.links import CMD_VEL_TOPIC
from simreal.deploy.g1.messages import decode_lowstate
from simreal.deploy.g1.safety import check_domain

STOP_S = 1.0
"""Zeros are sent this long after the last segment."""


@dataclass(frozen=True)
class Segment:
    """(vx m/s, vy m/s, yaw rate rad/s) held for duration_s seconds."""

    velocity: tuple[float, float, float]
    duration_s: float


def parse_segment(text: str) -> Segment:
    """`VX,VY,YAW:SECONDS` (e.g. `0.5,0,0:6`); a malformed one is refused naming it."""
    command, sep, seconds = text.partition(":")
    parts = command.split(",")
    try:
        if not sep or len(parts) != 3:
            raise ValueError
        velocity = tuple(float(p) for p in parts)
        duration = float(seconds)
    except ValueError:
        raise ValueError(
            f"cmd_vel segment {text!r}: expected VX,VY,YAW_RATE:SECONDS, e.g. 0.5,0,0:6"
        ) from None
    if not all(math.isfinite(v) for v in (*velocity, duration)) or duration <= 0:
        raise ValueError(f"cmd_vel segment {text!r}: values must be finite, seconds > 0")
    return Segment(velocity, duration)  # type: ignore[arg-type]


def twist(velocity: tuple[float, float, float]) -> msgs.Twist:
    vx, vy, yaw_rate = velocity
    return msgs.Twist(msgs.Vector3(vx, vy, 0.0), msgs.Vector3(0.0, 0.0, yaw_rate))


CLOCKS = ("wall", "robot")
"""What `publish` can time its segments by: the host's clock, or RobotClock."""

ROBOT_CLOCK_TIMEOUT_S = 10.0
"""With the robot's clock: how long (wall time) it may go without advancing."""


class RobotClock:
    """The robot's own time: the `tick` of its newest LowState on rt/lowstate, read as
    milliseconds (the virtual robot's tick counts simulated milliseconds). Segments timed
    by it last robot seconds, so a simulated robot that falls behind real time (a loaded
    host) walks each segment for its whole length rather than a shortened one; a real
    robot runs in real time and needs no more than the host's clock. Raises, naming the
    topic, when no state comes or the tick stops advancing for ROBOT_CLOCK_TIMEOUT_S."""

    def __init__(self, dds: DdsParticipant):
        self.reader = dds.reader(LOWSTATE_TOPIC, LowState_, stream_qos(reliable=False, depth=16))
        self.tick_ms: int | None = None
        self.advanced_at = time.monotonic()

    def __call__(self) -> float:
        for data in take_raw(self.reader, 16):
            state = decode_lowstate(data)
            if state is not None and state.tick != self.tick_ms:
                self.tick_ms, self.advanced_at = state.tick, time.monotonic()
        if time.monotonic() - self.advanced_at > ROBOT_CLOCK_TIMEOUT_S:
            what = "no LowState" if self.tick_ms is None else "the tick stopped advancing"
            raise TimeoutError(
                f"cmd_vel --clock robot: {what} on {LOWSTATE_TOPIC} for "
                f"{ROBOT_CLOCK_TIMEOUT_S:g} s (is the robot on this DDS domain?)"
            )
        return math.nan if self.tick_ms is None else self.tick_ms / 1000.0


def publish(
    segments: list[Segment], domain: int, rate_hz: float = 20.0, clock: str = "wall"
) -> int:
    """Publish the segments in turn at `rate_hz`, then zeros for STOP_S; returns how many
    messages were written. Timing follows a clock, not the count of messages, so a
    stalled process does not stretch a segment: the host's (`wall`) or the robot's own
    (`robot`: RobotClock; nothing is sent before its first state)."""
    if not rate_hz > 0:
        raise ValueError(f"cmd_vel --rate must be > 0 Hz, got {rate_hz}")
    if clock not in CLOCKS:
        raise ValueError(f"cmd_vel --clock must be {' or '.join(CLOCKS)}, got {clock!r}")
    period = 1.0 / rate_hz
    written = 0
    with DdsParticipant(check_domain(domain, "--domain")) as dds:
        writer = dds.writer(topic_name(CMD_VEL_TOPIC), msgs.Twist)
        now_s = RobotClock(dds) if clock == "robot" else time.monotonic
        while math.isnan(now_s()):
            time.sleep(period)
        for segment in [*segments, Segment((0.0, 0.0, 0.0), STOP_S)]:
            message = twist(segment.velocity)
            end = now_s() + segment.duration_s
            print(f"cmd_vel {segment.velocity} for {segment.duration_s:g} s", flush=True)
            while (now := now_s()) < end:
                writer.write(message)
                written += 1
                time.sleep(min(period, end - now))
    return written
