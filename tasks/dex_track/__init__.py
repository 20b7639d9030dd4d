"""`dex-track`: a generalist hand-object tracking controller for an Allegro-like hand
(after DexTrack): the object follows its reference motion for references never seen."""

from simreal.tasks.dex_track.config import DexTrackConfig
from simreal.tasks.dex_track.env import DexTrackEnv

__all__ = ["DexTrackConfig", "DexTrackEnv"]
