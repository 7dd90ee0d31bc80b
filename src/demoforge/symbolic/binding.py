"""What ties a PDDL problem's objects to a built scene: ids, sizes, regions, tolerances.

`bind_symbols(scene, task, params)` resolves every block object (a `block` or a subtype: any free
prop) to its prop body, the table top, the finger bodies of the robot card and the sidecar's regions (table
frame, see `demoforge.tasks.scene`) in the world frame. Everything the per-tick
evaluation needs is an array here, so `abstract` does no name lookups.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import mujoco
import numpy as np

from demoforge.errors import DemoforgeError, listing
from demoforge.sim import Scene, body_half_extents
from demoforge.tasks.parse import Task
from demoforge.tasks.pddl_text import Atom
from demoforge.tasks.scene import SceneParams
from demoforge.tasks.check import is_subtype, signatures

TABLE_GEOM = "table_top"


class SymbolError(DemoforgeError):
    """Symbols cannot be grounded in a scene, or a state does not abstract as required."""


@dataclass(frozen=True)
class Tolerances:
    """How far the simulator may be from the ideal for a predicate to hold."""

    z_gap_m: float = 0.004  # on, on_table: |bottom of the block - top of its support| [m]
    support_frac: float = 1.0  # on: centre of x within this fraction of y's half top face, horizontally [-]
    rest_speed_mps: float = 0.05  # on, on_table: largest linear speed of a resting block [m/s]
    tilt_rad: float = 0.26  # face_up: largest angle between the face axis and world up (15 deg) [rad]
    yaw_rad: float = 0.26  # yaw: largest deviation from the 90-degree step (15 deg) [rad]
    region_margin_m: float = 0.0  # in_region: the rectangle grown by this on every side [m]


@dataclass(frozen=True, eq=False)
class Binding:
    """A task's objects resolved against one compiled scene."""

    task: Task  # the parsed problem
    blocks: tuple[str, ...]  # block objects, sorted
    regions: tuple[str, ...]  # region objects, sorted
    body: np.ndarray  # (B,) body id per block (its geoms: every geom of that body)
    half: np.ndarray  # (B, 3) half extents of its bounding box in the block frame [m] (a box: half its edges)
    qvel: np.ndarray  # (B,) dof address of each block's free joint (linear velocity first)
    table_geom: int  # geom id of the table top
    table_top_z: float  # world height of the table top surface [m]
    table_box: np.ndarray  # (4,) table top [x_lo, x_hi, y_lo, y_hi] in the world [m]
    region_box: np.ndarray  # (R, 4) region [x_lo, x_hi, y_lo, y_hi] in the world [m]
    table_origin: np.ndarray  # (2,) world x, y of the table frame origin [m]
    fingers: tuple[np.ndarray, ...]  # per finger joint: body ids of that finger (int, sorted)
    candidates: tuple[Atom, ...]  # every ground atom of a fluent predicate, sorted; evaluated each call
    static_atoms: frozenset[Atom]  # init atoms of predicates no action changes, carried as given
    tolerances: Tolerances  # thresholds of every predicate


FREE_TYPE = "block"  # objects of this type or a subtype of it are free props (demoforge.taskapi.ObjectType)


def free_objects(task: Task) -> tuple[str, ...]:
    """The problem's objects that are free props: of type `block` or a subtype of it, sorted."""
    return tuple(sorted(n for n, t in task.objects if is_subtype(task.domain, t, FREE_TYPE)))


def _objects(task: Task, typ: str) -> list[str]:
    every = sorted((*task.objects, *task.constants))
    return [name for name, t in every if is_subtype(task.domain, t, typ)]


def _subtree(model: mujoco.MjModel, root: int) -> np.ndarray:
    bodies = {root}
    for b in range(root + 1, model.nbody):
        if model.body_parentid[b] in bodies:
            bodies.add(b)
    return np.array(sorted(bodies), dtype=int)


def bind_symbols(scene: Scene, task: Task, params: SceneParams, *, tolerances: Tolerances = Tolerances()) -> Binding:
    """Resolve `task`'s objects in `scene`; every missing or mismatched object reported at once."""
    from demoforge.symbolic.predicates import EVALUATORS
    from demoforge.tasks.package import describe

    model, spec = scene.model, scene.spec
    blocks = free_objects(task)
    regions = tuple(sorted(n for n, t in task.objects if t == "region"))
    problems = []
    boxes = {p.name: p for p in spec.props}
    for b in blocks:
        if b not in boxes or b not in scene.prop_qpos:
            problems.append(f"block {b!r} has no free prop in the scene; props: {sorted(boxes)}")
    sidecar_regions = dict(params.regions)
    problems += [f"region {r!r} is not in the scene sidecar; regions there: {sorted(sidecar_regions)}"
                 for r in regions if r not in sidecar_regions]
    sigs = signatures(task.domain)
    fluents = tuple((p, sigs[p]) for p in sorted(task.fluent_predicates))
    problems += [f"predicate {p!r} has no simulator evaluator (domain {task.domain_file}); known: {sorted(EVALUATORS)}"
                 f" (from task packages {describe()}); add a Predicate for it to your task package's `predicates` "
                 "and load it with --task-package" for p, _ in fluents if p not in EVALUATORS]
    if problems:
        raise SymbolError(f"cannot ground task {task.name!r} ({task.problem_file}) in its scene:"
                          + listing(problems, indent=""))
    table = spec.table
    cx, cy = table.center
    body = np.array([scene.props[b] for b in blocks], dtype=int)
    half = np.array([body_half_extents(model, int(i)) for i in body]).reshape(-1, 3)
    qvel = np.array([model.jnt_dofadr[model.body_jntadr[i]] for i in body], dtype=int)
    region_box = np.array([[r.x_m[0] + cx, r.x_m[1] + cx, r.y_m[0] + cy, r.y_m[1] + cy]
                           for r in (sidecar_regions[n] for n in regions)]).reshape(-1, 4)
    fingers = tuple(_subtree(model, int(b)) for b in scene.robot.finger_bodies)
    candidates = tuple(sorted(
        (name, *args) for name, types in fluents for args in product(*(_objects(task, t) for t in types))
    ))
    static = frozenset(a for a in task.init if a[0] not in task.fluent_predicates)
    return Binding(
        task=task, blocks=blocks, regions=regions, body=body, half=half, qvel=qvel,
        table_geom=model.geom(TABLE_GEOM).id, table_top_z=float(table.height),
        table_box=np.array([cx - table.size[0] / 2, cx + table.size[0] / 2, cy - table.size[1] / 2, cy + table.size[1] / 2]),
        region_box=region_box, table_origin=np.array([cx, cy]), fingers=fingers, candidates=candidates,
        static_atoms=static, tolerances=tolerances,
    )
