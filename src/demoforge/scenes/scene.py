"""A problem's physical scene: its PDDL blocks as box props (a subtype of block as its task package's
`ObjectType.build` makes it), sized and placed by a scene draw.

`task_scene_spec(task, params, draw)` is a pure function of its inputs, which is why an
scene package stores the draw (and the PDDL and sidecar) rather than MJCF: the
spec, and so the compiled model, is rebuilt bit for bit from them (checked by
`model_fingerprint`). One free glyph-textured cube per block (sidecar colour and letter,
drawn edge), the table raised by the drawn offset, blocks and table top of the materials the
sidecar names (`scenes.materials`: wood with the drawn sliding friction where it names none), and
each region as a 1 mm visual-only slab on the table top.

Blocks stand at nominal spots (a grid along the table's far half) in the spec; reset
states (`demoforge.symbolic.reset`) move them to sampled poses.
"""

from __future__ import annotations

import dataclasses
import hashlib

import mujoco
import numpy as np

from demoforge.errors import DemoforgeError, listing
from demoforge.randomize.scene import SceneDraw
from demoforge.scenes.materials import MaterialError, default_material, scene_materials
from demoforge.sim import Box, RobotCard, Scene, SceneSpec, Table, build_scene, half_extents, panda_card
from demoforge.sim.font import LETTERS
from demoforge.symbolic.binding import FREE_TYPE, Binding, Tolerances, bind_symbols, free_objects
from demoforge.tasks.parse import Task
from demoforge.tasks.package import OBJECT_TYPES, package_of_domain
from demoforge.tasks.scene import SceneParams

REGION_PREFIX = "region/"
REGION_RGBA = (0.95, 0.95, 0.75, 0.6)


class SceneBuildError(DemoforgeError):
    """A problem, its sidecar and a scene draw do not describe one scene."""


def _problems(task: Task, params: SceneParams, draw: SceneDraw) -> list[str]:
    blocks = list(free_objects(task))
    regions = sorted(n for n, t in task.objects if t == "region")
    looks, sizes, rects = dict(params.blocks), dict(draw.block_size_m), dict(params.regions)
    problems = []
    if params.problem != task.name:
        problems.append(f"sidecar is for problem {params.problem!r}, the PDDL problem is {task.name!r}")
    if draw.problem != task.name:
        problems.append(f"scene draw is for problem {draw.problem!r}, the PDDL problem is {task.name!r}")
    # one line per block: a block the sidecar lacks has no drawn size either (draws come from the sidecar)
    problems += [f"block {b!r} has no entry in the sidecar's blocks" + ("" if b in sizes else " (nor a drawn size)")
                 for b in blocks if b not in looks]
    problems += [f"sidecar block {b!r} is not a block object of the problem" for b in sorted(looks) if b not in blocks]
    problems += [f"block {b!r} has no drawn size" for b in blocks if b in looks and b not in sizes]
    problems += [f"region {r!r} has no rectangle in the sidecar's regions" for r in regions if r not in rects]
    problems += [f"drawn size of {b!r} is {s} m; it must be > 0" for b, s in sorted(sizes.items()) if not s > 0]
    problems += [f"sidecar blocks.{b}.glyph {look.glyph!r} is not a letter the block font draws; use one of "
                 f"{LETTERS}" for b, look in sorted(looks.items()) if look.glyph not in LETTERS]
    types = dict(task.objects)
    unbuilt = sorted({types[b] for b in blocks if types[b] != FREE_TYPE and _builder(types[b]) is None})
    if unbuilt and package_of_domain(task.domain_name) is None:  # a package's objects, the package not loaded here
        problems.append(f"object type(s) {', '.join(map(repr, unbuilt))} of domain {task.domain_name!r} come from a "
                        "task package that is not loaded: load it with --task-package PATH_OR_MODULE (the .py file "
                        "or module that defines its PACKAGE; a run config's task_packages:), or install it as a "
                        "`demoforge.tasks` entry point")
    elif unbuilt:
        problems += [f"object {b!r} is of type {types[b]!r}, which no task package builds: give its ObjectType a "
                     f"`build` (types built: {sorted(t for t, o in OBJECT_TYPES.items() if o.build is not None)})"
                     for b in blocks if types[b] in unbuilt]
    if not draw.friction > 0:
        problems.append(f"drawn friction {draw.friction} must be > 0")
    try:
        scene_materials(params, draw, timestep=SceneSpec().timestep)
    except MaterialError as exc:
        problems += [line.strip() for line in str(exc).splitlines()[1:]]
    return problems


def _builder(typ: str):
    """The prop builder of a free object type; None for `block` (a box) and for a type nobody builds."""
    found = OBJECT_TYPES.get(typ)
    return None if found is None else found.build


def task_scene_spec(task: Task, params: SceneParams, draw: SceneDraw, *, card: RobotCard | None = None) -> SceneSpec:
    """The scene of `task` under `draw`; all mismatches between the three reported at once."""
    problems = _problems(task, params, draw)
    if problems:
        raise SceneBuildError(f"cannot build the scene of {task.name!r} ({task.problem_file}):"
                            + listing(problems, indent=""))
    nominal = Table()
    table = dataclasses.replace(nominal, height=nominal.height + draw.table_height_offset_m)
    top, block_materials = scene_materials(params, draw, timestep=SceneSpec().timestep)
    table = dataclasses.replace(table, material=top)
    cx, cy = table.center
    sizes = dict(draw.block_size_m)
    blocks = free_objects(task)
    types = dict(task.objects)
    pitch = max(sizes.values(), default=0.05) + 0.03
    per_row = max(1, int(table.size[1] * 0.8 // pitch))
    props = []
    for k, (name, look) in enumerate((b, dict(params.blocks)[b]) for b in blocks):
        row, col = divmod(k, per_row)
        y = (col - (min(len(blocks), per_row) - 1) / 2) * pitch
        x = table.size[0] / 2 - 0.08 - row * pitch  # far half of the table, away from the start windows
        s = sizes[name]
        build = _builder(types[name])
        if build is None:
            props.append(Box(name, (s, s, s), (cx + x, cy + y, table.height + s / 2),
                             rgba=tuple(look.rgba), material=block_materials[name], glyphs=True, letter=look.glyph))
            continue
        prop = build(name, s, tuple(look.rgba), block_materials[name])
        props.append(dataclasses.replace(prop, pos=(cx + x, cy + y, table.height + float(half_extents(prop)[2]))))
    for name, rect in params.regions:
        if name not in {n for n, t in task.objects if t == "region"}:
            continue
        size = (rect.x_m[1] - rect.x_m[0], rect.y_m[1] - rect.y_m[0], 0.001)
        centre = (cx + sum(rect.x_m) / 2, cy + sum(rect.y_m) / 2, table.height + 0.0005)
        props.append(Box(REGION_PREFIX + name, size, centre, rgba=REGION_RGBA, free=False))
    return SceneSpec(props=tuple(props), robot=card or panda_card(), table=table,
                     material=default_material(draw))  # the regions' (never touched)


def build_task_scene(
    task: Task, params: SceneParams, draw: SceneDraw, *, card: RobotCard | None = None,
    tolerances: Tolerances = Tolerances(),
) -> tuple[Scene, Binding]:
    """Compile the scene of `task` under `draw` and bind the task's symbols to it."""
    spec = task_scene_spec(task, params, draw, card=card)
    scene = build_scene(spec)
    for prop in spec.props:
        if prop.name.startswith(REGION_PREFIX):
            g = scene.model.geom(prop.name).id
            scene.model.geom_contype[g] = 0  # regions are drawn, never touched
            scene.model.geom_conaffinity[g] = 0
    mujoco.mj_forward(scene.model, scene.data)
    return scene, bind_symbols(scene, task, params, tolerances=tolerances)


def model_fingerprint(model: mujoco.MjModel) -> str:
    """sha256 over the arrays that define the physics, to check a rebuilt model is the same."""
    h = hashlib.sha256()
    for name in ("nq", "nv", "nu", "nbody", "ngeom"):
        h.update(str(getattr(model, name)).encode())
    for name in ("opt.timestep", "body_pos", "body_quat", "body_mass", "geom_size", "geom_pos", "geom_quat",
                 "geom_friction", "geom_solref", "geom_solimp", "geom_contype", "geom_conaffinity", "qpos0",
                 "jnt_range", "actuator_gainprm", "actuator_biasprm", "key_qpos"):
        obj = model
        for part in name.split("."):
            obj = getattr(obj, part)
        h.update(np.ascontiguousarray(np.asarray(obj, dtype=np.float64)).tobytes())
    return h.hexdigest()
