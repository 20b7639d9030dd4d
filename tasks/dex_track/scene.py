"""The `dex-track` scene: the Allegro-like hand on its wrist, a table (the floor plane,
z = 0) and one object built from slot geoms (`objects.py`).

The hand touches the object but not the table in the trained scene (one contact pair
family fewer to simulate); the feasibility check builds the scene with
`hand_table_contact=True` so a reference whose hand goes through the table is caught.
"""

from __future__ import annotations

from simreal.robots.allegro import hand_xml, model_xml
from simreal.tasks.dex_track.objects import object_xml

TABLE_CONTYPE = 1


def build_scene(physics_dt: float, hand_table_contact: bool = False) -> str:
    conaffinity = 3 if hand_table_contact else 1
    return model_xml(
        "dex_track",
        f'timestep="{physics_dt:.9g}" integrator="implicitfast" cone="pyramidal"',
        f"""    <light pos="0.2 0 1.5" dir="0 0 -1"/>
    <geom name="table" type="plane" size="1 1 0.05" contype="{TABLE_CONTYPE}"
          conaffinity="{conaffinity}" rgba="0.75 0.7 0.6 1"/>
{hand_xml()}
{object_xml()}""",
        head='\n  <visual><global offwidth="640" offheight="480"/></visual>',
    )
