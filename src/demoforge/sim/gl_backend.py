"""Choosing MuJoCo's OpenGL backend, which must happen before mujoco is first imported.

mujoco binds its GL backend (and PyOpenGL its platform) at import time, and with
MUJOCO_GL=osmesa but no libOSMesa, `import mujoco` itself crashes. So demoforge.sim picks a
backend whose library is present: EGL by default, OSMesa when EGL is missing. With neither,
it sets MUJOCO_GL=disable so physics still works, and opening a renderer raises a SimError
with the install commands.
"""

from __future__ import annotations

import ctypes.util
import os
import sys

LIBRARIES = {"egl": "EGL", "osmesa": "OSMesa"}
disabled_because = ""  # why choose_gl_backend disabled rendering, for the renderer's error


def choose_gl_backend() -> str:
    """Set MUJOCO_GL (and PYOPENGL_PLATFORM) to a usable backend; returns it. A no-op once
    mujoco is imported, and for backends other than egl/osmesa the user asked for."""
    requested = os.environ.get("MUJOCO_GL", "").strip().lower()
    if "mujoco" in sys.modules or (requested and requested not in LIBRARIES):
        return requested
    order = ["osmesa"] if requested == "osmesa" else ["egl", "osmesa"]
    for backend in order:
        if ctypes.util.find_library(LIBRARIES[backend]):
            os.environ["MUJOCO_GL"] = backend
            os.environ.setdefault("PYOPENGL_PLATFORM", backend)
            return backend
    global disabled_because
    disabled_because = (f"MUJOCO_GL={requested or 'egl'} and no library for "
                        + " or ".join(f"{b} (lib{LIBRARIES[b]})" for b in order) + " was found")
    os.environ["MUJOCO_GL"] = "disable"
    return "disable"
