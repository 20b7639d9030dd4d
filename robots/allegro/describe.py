"""`simreal robot allegro`: the joint table in action order."""

from __future__ import annotations

from simreal.robots.allegro.hand import JOINT_NAMES, hand_mass, joint_limits, servo


def describe() -> str:
    lower, upper = joint_limits()
    rows = [f"Allegro-like right hand on a 6-DoF wrist: {hand_mass():.3f} kg, 22 actuated joints"]
    rows.append(
        f"{'#':>2} {'joint':<12} {'lower':>7} {'upper':>7} {'kp':>7} {'kd':>6} {'limit':>6}"
    )
    for i, (name, lo, hi) in enumerate(zip(JOINT_NAMES, lower, upper, strict=True)):
        g = servo(name)
        rows.append(
            f"{i:>2} {name:<12} {lo:>7.3f} {hi:>7.3f} {g.kp:>7.1f} {g.kd:>6.2f} {g.force_limit:>6.1f}"
        )
    return "\n".join(rows)


def build_urdf() -> str:
    raise NotImplementedError("the Allegro-like hand has a MuJoCo description only (--mjcf)")
