"""Props: boxes (optionally with face glyphs), cylinders and triangle meshes, and how each
becomes bodies and geoms in an MjSpec with its contact material.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from demoforge.sim.font import LETTERS
from demoforge.sim.glyphs import add_glyph_material
from demoforge.sim.materials import Material

Vec3 = tuple[float, float, float]
DECOMPOSE_METHODS = ("coacd", "none")


@dataclass(frozen=True)
class Box:
    """A box or block prop."""

    name: str  # body and geom name
    size: Vec3  # full edge lengths [m]
    pos: Vec3  # centre in the world [m]
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)  # wxyz
    rgba: tuple[float, float, float, float] = (0.8, 0.2, 0.2, 1.0)
    material: str | Material | None = None  # None = the scene's default material
    glyphs: bool = False  # dice pips textured on the faces (1..6), so orientation is visible
    free: bool = True  # movable (free joint) or fixed to the world
    letter: str | None = None  # with glyphs: this letter (A-Z) large on every face, the face's count as dots


@dataclass(frozen=True)
class Cylinder:
    """An upright cylinder prop (axis along its local z)."""

    name: str  # body and geom name
    radius: float  # [m]
    height: float  # full height [m]
    pos: Vec3  # centre in the world [m]
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)  # wxyz
    rgba: tuple[float, float, float, float] = (0.2, 0.4, 0.8, 1.0)
    material: str | Material | None = None  # None = the scene's default material
    free: bool = True  # movable or fixed


@dataclass(frozen=True, eq=False)
class MeshProp:
    """A triangle-mesh prop; concave meshes are split into convex pieces for contacts."""

    name: str  # body name; piece geoms are `<name>_<k>`
    vertices: np.ndarray  # (V, 3) in the prop's frame [m]
    faces: np.ndarray  # (F, 3) vertex indices
    pos: Vec3  # prop frame origin in the world [m]
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)  # wxyz
    rgba: tuple[float, float, float, float] = (0.7, 0.7, 0.7, 1.0)
    material: str | Material | None = None  # None = the scene's default material
    decompose: str = "coacd"  # "coacd" (convex pieces) or "none" (one convex hull)
    free: bool = True  # movable or fixed
    # The pieces are those of `vertices` scaled by this after decomposing: uniform scaling keeps a piece
    # convex, so one (cached) decomposition of a unit mesh serves every drawn size.
    scale: float = 1.0


Prop = Box | Cylinder | MeshProp


def half_extents(prop: Prop) -> np.ndarray:
    """(3,) half extents [m] of `prop`'s bounding box about its frame origin, in its frame (a mesh's
    largest |vertex| per axis, so a mesh centred on its box gives that box)."""
    if isinstance(prop, Box):
        return np.asarray(prop.size, float) / 2
    if isinstance(prop, Cylinder):
        return np.array([prop.radius, prop.radius, prop.height / 2])
    return np.abs(np.asarray(prop.vertices, float)).max(axis=0) * prop.scale


def body_half_extents(model: mujoco.MjModel, body: int) -> np.ndarray:
    """(3,) half extents [m] of the box about `body`'s frame origin, in its frame, that holds every
    geom of the body: a mesh's vertices, another geom's bounding box (a box geom at the origin gives
    its own size)."""
    corners = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float)
    start, count = int(model.body_geomadr[body]), int(model.body_geomnum[body])
    reach = np.zeros(3)
    rot = np.zeros(9)
    for g in range(start, start + count):
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH:  # its box in the inertial frame is loose
            mesh = int(model.geom_dataid[g])
            first = int(model.mesh_vertadr[mesh])
            local = model.mesh_vert[first:first + int(model.mesh_vertnum[mesh])]
        else:
            local = model.geom_aabb[g, :3] + corners * model.geom_aabb[g, 3:]
        mujoco.mju_quat2Mat(rot, model.geom_quat[g])
        points = local @ rot.reshape(3, 3).T + model.geom_pos[g]
        reach = np.maximum(reach, np.abs(points).max(axis=0))
    return reach


def prop_problems(prop: Prop, where: str) -> list[str]:
    """Every reason `prop`'s geometry is unusable (materials are checked by the scene)."""
    problems = []
    if isinstance(prop, Box) and not all(s > 0 for s in prop.size):
        problems.append(f"{where}.size must be > 0 [m], got {prop.size}")
    if isinstance(prop, Box) and prop.letter is not None and not (prop.glyphs and prop.letter in LETTERS):
        problems.append(f"{where}.letter {prop.letter!r} needs glyphs=True and one letter of {LETTERS}")
    if isinstance(prop, Cylinder) and not (prop.radius > 0 and prop.height > 0):
        problems.append(f"{where}: radius and height must be > 0 [m], got {prop.radius}, {prop.height}")
    if isinstance(prop, MeshProp):
        if not prop.scale > 0:
            problems.append(f"{where}.scale must be > 0, got {prop.scale}")
        if prop.decompose not in DECOMPOSE_METHODS:
            problems.append(f"{where}.decompose {prop.decompose!r} is not one of {list(DECOMPOSE_METHODS)}")
        v, f = np.asarray(prop.vertices), np.asarray(prop.faces)
        if v.ndim != 2 or v.shape[1] != 3 or f.ndim != 2 or f.shape[1] != 3:
            problems.append(f"{where}: vertices must be (V, 3) and faces (F, 3), got {v.shape}, {f.shape}")
        elif f.size and (f.min() < 0 or f.max() >= len(v)):
            problems.append(f"{where}.faces index vertices outside [0, {len(v)})")
    return problems


def _contact(mj_geom, mat: Material) -> None:
    mj_geom.solref = list(mat.solref)
    mj_geom.solimp = list(mat.solimp)
    mj_geom.friction = list(mat.friction)
    mj_geom.density = mat.density
    mj_geom.condim = 4  # torsional friction too, so a pinched prop does not spin


def add_prop(mj: mujoco.MjSpec, prop: Prop, mat: Material, *, cache_dir: Path | None = None) -> None:
    """Add `prop` as a body (free or fixed) with `mat` on every geom."""
    body = mj.worldbody.add_body(name=prop.name, pos=list(prop.pos), quat=list(prop.quat))
    if prop.free:
        body.add_freejoint(name=prop.name)
    rgba = list(prop.rgba)
    if isinstance(prop, Box):
        geom = body.add_geom(name=prop.name, type=mujoco.mjtGeom.mjGEOM_BOX, size=[s / 2 for s in prop.size], rgba=rgba)
        if prop.glyphs:
            geom.material = add_glyph_material(mj, prop.name, prop.rgba, prop.letter)
            geom.rgba = [1, 1, 1, 1]
        _contact(geom, mat)
    elif isinstance(prop, Cylinder):
        geom = body.add_geom(name=prop.name, type=mujoco.mjtGeom.mjGEOM_CYLINDER,
                             size=[prop.radius, prop.height / 2, 0], rgba=rgba)
        _contact(geom, mat)
    else:
        from demoforge.sim.decompose import convex_pieces  # optional extra (CoACD)

        pieces = convex_pieces(np.asarray(prop.vertices, float), np.asarray(prop.faces, int),
                               method=prop.decompose, cache_dir=cache_dir)
        for k, (verts, faces) in enumerate(pieces):
            mesh = mj.add_mesh(name=f"{prop.name}_{k}")
            mesh.uservert = (np.asarray(verts, float) * prop.scale).flatten().tolist()
            mesh.userface = np.asarray(faces, int).flatten().tolist()
            geom = body.add_geom(name=f"{prop.name}_{k}", type=mujoco.mjtGeom.mjGEOM_MESH,
                                 meshname=mesh.name, rgba=rgba)
            _contact(geom, mat)
