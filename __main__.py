"""`python -m simreal` run from the folder that holds a clone named `simreal`.

There Python imports the clone's root folder as a namespace package `simreal`, and this
file as its `__main__`. It hands over to the package's own entry point, which imports the
installed package in the folder's place, or says where to run from when none is installed.
"""

import os
import runpy

runpy.run_path(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "simreal", "__main__.py"),
    run_name="__main__",
)
