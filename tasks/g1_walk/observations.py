"""Observation of `g1-walk`: the G1's 93 values, then the velocity command and the gait
clock (the same term objects as g1-pull's, so the deploy node feeds both alike). The
critic sees the clean policy observation, the G1's privileged terms (its base height is
above the ground under the pelvis), the command and the clock. On the robot the node
evaluates these terms on its own reading (`deploy/g1/observation.py`)."""

from __future__ import annotations

from simreal.tasks.g1.observations import (
    POLICY_OBSERVATION,
    POLICY_TERMS,
    PRIVILEGED_OBSERVATION,
)
from simreal.tasks.g1.walking_terms import COMMAND_VELOCITY, GAIT_TERMS
from simreal.tasks.terms import layout

WALK_TERMS = (COMMAND_VELOCITY, *GAIT_TERMS)
WALK_POLICY_TERMS = POLICY_TERMS + WALK_TERMS
WALK_POLICY_OBSERVATION = layout(WALK_POLICY_TERMS)
WALK_CRITIC_OBSERVATION = POLICY_OBSERVATION + PRIVILEGED_OBSERVATION + layout(WALK_TERMS)
