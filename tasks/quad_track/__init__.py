"""`quad-track`: a Crazyflie follows figure-eights, circles and random smooth curves,
seeing a preview of the reference; scored by position RMSE and maximum error."""

from simreal.tasks.quad_track.config import QuadTrackConfig
from simreal.tasks.quad_track.env import QuadTrackEnv

__all__ = ["QuadTrackConfig", "QuadTrackEnv"]
