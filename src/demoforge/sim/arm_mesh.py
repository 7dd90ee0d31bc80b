"""The built-in Panda drawn with Franka's link meshes, for pictures only.

gymnasium-robotics' wheel (MIT licence; `pip install 'demoforge[mesh-arm]'`) carries Franka
Emika Panda visual meshes in `envs/assets/kitchen_franka/franka_assets/meshes/visual`, which
its chain.xml credits to Vikash Kumar's franka model (Apache-2.0, from franka_ros' meshes); both
licences allow use in a GPL-3.0-or-later project. They are authored in franka_ros' link frames,
which are the built-in arm's body frames (demoforge.sim.arm: the same offsets and axes), so each
mesh sits at its body's origin; the hand mesh in the hand frame, one finger mesh per finger body
(the second finger's body is already turned half a turn about z).

`dress_panda` turns each arm body's one primitive geom into its link mesh in a render-only copy
of a scene (demoforge.render.apply): geom ids, bodies and the state layout stay as they are, the
geoms stop colliding, and every body keeps the primitive arm's mass and inertia, so the copy
poses exactly as the recorded physics did. Nothing here touches the simulated arm.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import mujoco

from demoforge.errors import SimError

INSTALL = "pip install 'demoforge[mesh-arm]'"
MESH_DIR = ("envs", "assets", "kitchen_franka", "franka_assets", "meshes", "visual")
# arm body -> its visual mesh file (without .stl)
LINK_MESHES = {**{f"link{i}": f"link{i}" for i in range(8)}, "hand": "hand", "finger1": "finger", "finger2": "finger"}
WHITE = (0.93, 0.93, 0.92, 1.0)  # Franka's lacquer
DARK = (0.18, 0.18, 0.2, 1.0)  # finger pads


class MeshArmError(SimError):
    """The mesh arm cannot be drawn: its meshes are not installed or the robot is not the built-in Panda."""


def panda_mesh_dir() -> Path:
    """The folder of the Panda link meshes, found without importing gymnasium-robotics."""
    spec = importlib.util.find_spec("gymnasium_robotics")
    if spec is None or not spec.submodule_search_locations:
        raise MeshArmError(f"the mesh arm needs gymnasium-robotics' Panda meshes: {INSTALL}")
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*MESH_DIR)
    missing = sorted(name for name in set(LINK_MESHES.values()) if not (folder / f"{name}.stl").is_file())
    if missing:
        raise MeshArmError(f"{folder} lacks the Panda meshes {missing}; reinstall gymnasium-robotics: {INSTALL}")
    return folder


def dress_panda(mj: mujoco.MjSpec, base: mujoco.MjModel, prefix: str) -> None:
    """Draw the built-in Panda in `mj` (a scene's spec, robot bodies named `prefix` + body) with
    its link meshes; `base` is the scene's compiled model, whose masses and inertias the bodies keep."""
    folder = panda_mesh_dir()
    meshes = {}
    for body_name, mesh_name in LINK_MESHES.items():
        try:
            body = mj.body(prefix + body_name)
        except (KeyError, ValueError):
            body = None
        geoms = [] if body is None else list(body.geoms)
        if len(geoms) != 1:
            raise MeshArmError(f"robot body {prefix + body_name!r} is not the built-in Panda's (one primitive "
                               f"geom each); the mesh arm draws only the built-in arm (look key `arm: mesh`)")
        if mesh_name not in meshes:
            mesh = mj.add_mesh(name=f"panda_mesh/{mesh_name}")
            mesh.file = str(folder / f"{mesh_name}.stl")
            meshes[mesh_name] = mesh.name
        b = base.body(prefix + body_name)
        body.explicitinertial = True  # the primitive arm's inertia, not the mesh's
        body.mass, body.ipos, body.iquat = float(b.mass[0]), b.ipos.tolist(), b.iquat.tolist()
        body.inertia = b.inertia.tolist()
        g = geoms[0]
        g.type, g.meshname = mujoco.mjtGeom.mjGEOM_MESH, meshes[mesh_name]
        g.pos, g.quat, g.fromto = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [float("nan")] * 6
        g.contype = g.conaffinity = 0
        g.rgba = list(DARK if mesh_name == "finger" else WHITE)
