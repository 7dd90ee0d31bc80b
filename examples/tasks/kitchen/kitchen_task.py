"""A task package of mesh objects, written only against `demoforge.taskapi`: a cup goes into a bowl
or onto a plate.

    demoforge tasks list --task-package examples/tasks/kitchen/kitchen_task.py
    demoforge tasks gen cup_in_bowl --task-package examples/tasks/kitchen/kitchen_task.py --problems 4 --task-seed 0 --out t
    demoforge generate t/*.pddl --domain kitchen --task-package examples/tasks/kitchen/kitchen_task.py \\
        --episodes-per-problem 1 --out raw

Objects (PDDL subtypes of `block`, so each is a free prop sized by the scene draw):
- `cup`: a hollow cylinder with a floor (concave), split into convex pieces by CoACD;
- `bowl`: a flared open bowl (concave), split by CoACD;
- `plate`: a flat disc (convex: its hull).
Each shape is a solid of revolution made here with trimesh at unit size; the scene draw's size
scales it uniformly, so one decomposition (cached by demoforge) serves every drawn size. Nothing
is downloaded; the meshes need the `coacd` extra (CoACD, trimesh).

Predicates: `(in ?c ?b)` and `(upright ?c)` are this package's; `(on ?c ?p)` and `(on_table ?x)`
are the built-in ones, which read any free prop by its bounding box.
Skills: `put-in` and `put-on` pick the cup with the blocks skills' top-down grasp search (the
fingers close on its wall) and lower it upright onto the bowl's floor or the plate's top.
Families: `cup_in_bowl`, `cup_on_plate` (a cup and its container apart on the table).
"""

import math
from pathlib import Path

import numpy as np
import trimesh

from demoforge import taskapi as T

SECTIONS = 32  # facets around each solid of revolution
# Unit profiles (radius, height) from the axis at the bottom round to the axis at the top; 1 = the drawn scale.
CUP = ((0.0, 0.0), (0.5, 0.0), (0.5, 1.25), (0.42, 1.25), (0.42, 0.1), (0.0, 0.1))
BOWL = ((0.0, 0.0), (0.38, 0.0), (0.5, 0.28), (0.45, 0.28), (0.34, 0.05), (0.0, 0.05))
PLATE = ((0.0, 0.0), (0.5, 0.0), (0.5, 0.07), (0.0, 0.07))
BOWL_FLOOR = 0.05 / 0.28  # the bowl's floor thickness as a fraction of its height
BOWL_FLOOR_RADIUS = 0.34 / 0.5  # the flat of its floor as a fraction of its radius
# Scale [m] of each shape from the drawn size s [m] (the sidecar's block_size_m, 0.03-0.05 m by default):
# cups 4-6 cm across (the hand opens 8 cm), bowls 15-17 cm, plates 13-15 cm.
CUP_SCALE, BOWL_SCALE, PLATE_SCALE = 0.01, 0.12, 0.10


def _solid(profile: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(vertices, faces) of `profile` turned about the z axis, centred on its bounding box."""
    mesh = trimesh.creation.revolve(np.asarray(profile, float), sections=SECTIONS)
    return mesh.vertices - mesh.bounds.mean(axis=0), np.asarray(mesh.faces)


def _shape(profile: tuple, extra_m: float, decompose: str):
    vertices, faces = _solid(profile)

    def build(name: str, size_m: float, rgba: tuple, material) -> T.MeshProp:
        return T.MeshProp(name, vertices, faces, pos=(0.0, 0.0, 0.0), rgba=rgba, material=material,
                          decompose=decompose, scale=size_m + extra_m)

    return build


OBJECT_TYPES = {
    "cup": T.ObjectType("cup", "a hollow cylinder mesh with a floor, in CoACD's convex pieces",
                        _shape(CUP, CUP_SCALE, "coacd")),
    "bowl": T.ObjectType("bowl", "a flared open bowl mesh, in CoACD's convex pieces", _shape(BOWL, BOWL_SCALE, "coacd")),
    "plate": T.ObjectType("plate", "a flat disc mesh (its convex hull)", _shape(PLATE, PLATE_SCALE, "none")),
}


def upright(geo: T.Geometry, binding: T.Binding, x: str) -> bool:
    """(upright ?x): x's own z axis within the tilt tolerance of world up."""
    return bool(geo.rot[geo.index[x]][2, 2] >= math.cos(binding.tolerances.tilt_rad))


def inside(geo: T.Geometry, binding: T.Binding, c: str, b: str) -> bool:
    """(in ?c ?b): c upright, at rest and not held, its centre over b's floor, its bottom between b's
    bottom and b's rim."""
    i, j = geo.index[c], geo.index[b]
    if geo.held[i] or geo.speed[i] > binding.tolerances.rest_speed_mps or not upright(geo, binding, c):
        return False
    radial = float(np.linalg.norm(geo.pos[i, :2] - geo.pos[j, :2]))
    return bool(radial <= BOWL_FLOOR_RADIUS * binding.half[j][0] and geo.bottom[j] <= geo.bottom[i] <= geo.top[j])


def _put(b: T.PlanBuilder, operator: str, args: tuple[str, ...], params: dict, support_z: float,
         at: np.ndarray) -> T.SkillPlan:
    """Pick cup args[0] and set it down upright at `at` (x, y) [m] on a surface at height `support_z` [m]."""
    cup = args[0]
    centre, rot, _ = T.geometry.block(b.ctx, cup)
    candidates = T.top_down_candidates(b, cup, params)

    def put(draw, pos, tcp_rot):
        grip = (tcp_rot.T @ (centre - pos), tcp_rot.T @ rot)  # the cup keeps its pose in the hand
        return T.place_on(b, cup, at, support_z, 0.0, grip=grip, block_rot=rot)

    (draw, _, _), (target, target_rot) = T.grasp(b, cup, candidates, lift_z=T.carry_z(b, cup), then=put)
    params.update(draw)
    return b.plan(operator, args, params, (*target.tolist(), *T.geometry.quat(target_rot).tolist()))


def put_in(b: T.PlanBuilder, args: tuple[str, ...], params: dict) -> T.SkillPlan:
    """(put-in ?c ?b): the cup onto the middle of the bowl's floor."""
    bowl, rot, half = T.geometry.block(b.ctx, args[1])
    height = 2 * float(half[2])
    floor = float(bowl[2]) - height / 2 + BOWL_FLOOR * height
    return _put(b, "put-in", args, params, floor, bowl[:2])


def put_on(b: T.PlanBuilder, args: tuple[str, ...], params: dict) -> T.SkillPlan:
    """(put-on ?c ?p): the cup onto the middle of the plate."""
    plate, rot, half = T.geometry.block(b.ctx, args[1])
    return _put(b, "put-on", args, params, float(plate[2] + half[2]), plate[:2])


def _apart(blocks: list[str]) -> list:
    """Both objects standing on the table; the cup upright."""
    return [("on_table", blocks[0]), ("on_table", blocks[1]), ("upright", blocks[0])]


def cup_in_bowl(blocks: list[str], rng: np.random.Generator) -> tuple[list, list]:
    """A cup and a bowl apart on the table; the goal: the cup upright in the bowl."""
    return _apart(blocks), [("in", blocks[0], blocks[1]), ("upright", blocks[0])]


def cup_on_plate(blocks: list[str], rng: np.random.Generator) -> tuple[list, list]:
    """A cup and a plate apart on the table; the goal: the cup upright on the plate."""
    return _apart(blocks), [("on", blocks[0], blocks[1]), ("upright", blocks[0])]


PACKAGE = T.TaskPackage(
    name="kitchen",
    domain=Path(__file__).with_name("kitchen.pddl"),
    skills={"put-in": T.Skill("put-in", ("?c", "?b"), put_in), "put-on": T.Skill("put-on", ("?c", "?p"), put_on)},
    predicates={"in": T.Predicate(("cup", "bowl"), inside), "upright": T.Predicate(("cup",), upright)},
    families={
        "cup_in_bowl": T.Family(default_n=2, min_n=2, build=cup_in_bowl, fixed_n=True, types=("cup", "bowl")),
        "cup_on_plate": T.Family(default_n=2, min_n=2, build=cup_on_plate, fixed_n=True, types=("cup", "plate")),
    },
    object_types=OBJECT_TYPES,
)
