"""Scene parameters PDDL cannot express, carried in a sidecar beside each problem.

A generated problem `NAME.pddl` has `NAME.scene.json` next to it. It holds ranges and
choices for the physical scene, not draws: the scene randomizer samples from them per
episode, seeded from `seed`. JSON schema `demoforge.scene/1` (lengths [m], all keys
required but `materials`, unknown keys rejected, keys sorted, two-space indent, trailing newline):

    {
      "schema": "demoforge.scene/1",
      "problem": "stack_three-train-0000",    # the PDDL problem name
      "family": "stack_three",                # task family that generated it
      "split": "train",                        # "train", "test" or "all"
      "seed": 1234567890123,                   # entropy for this problem's draws (uint63)
      "block_size_m": [0.03, 0.05],            # cube edge length range [m]
      "table_height_offset_m": [-0.02, 0.02],  # table top offset from nominal [m]
      "friction": [0.6, 1.2],                  # sliding friction coefficient range [-]
      "placement_x_m": [[-0.05, 0.25]],        # start windows along table x: one or several
      "placement_y_m": [[-0.1, 0.1]],          #   sorted, disjoint [lo, hi] intervals [m]
      "regions": {"left": {"x_m": [lo, hi], "y_m": [lo, hi]}},  # named table regions [m]
      "blocks": {                              # one entry per PDDL block object
        "red": {"rgba": [r, g, b, a], "glyph": "A", "role": "task"}   # role: task|distractor
      },
      "materials": {                           # optional: contact materials by prop
        "table": "rubber",                     # a preset of demoforge.sim.MATERIALS, or
        "blocks": "wood",                      #   every block without its own entry
        "red": {"solref": [0.004, 1.0], "solimp": [0.95, 0.99, 0.001, 0.5, 2.0],
                "friction": [0.5, 0.005, 0.0001], "density": 7850.0}   # a custom material
      }
    }

`materials` is optional within schema /1: a sidecar without it (every sidecar written before it
existed) means what it always meant (blocks and table top wood with the drawn sliding friction)
and is written back without it, byte for byte, so the datasets and packages that copy
sidecars do not change. An older reader refuses a sidecar that has it (unknown key, by name),
so no reader can silently drop a material; a /2 would only have orphaned every /1 file on disk
and in packages (whose copies are checksummed). A declared material brings its own sliding
friction: the `friction` range is drawn for the props without one. A custom material is
checked here for its shape; whether MuJoCo can resolve it (`sim.material_problems`, against the
scene's timestep) and which presets exist is checked where scenes are built (`scenes.materials`).

Coordinates are in the table frame: origin at the centre of the table top, x away from
the robot, y to its left, z up. A block may start anywhere in the product of the x and y
windows (its whole footprint inside) unless its PDDL init puts it in a region; region
rectangles are where (in_region b r) holds. Distractors are the blocks whose role is
"distractor": present in the scene and the PDDL, absent from the goal.
"""

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from demoforge.errors import TaskError, listing

SCHEMA = "demoforge.scene/1"
SIDECAR_SUFFIX = ".scene.json"  # NAME.pddl's sidecar is NAME.scene.json


def sidecar_path(problem: str | Path) -> Path:
    """The scene sidecar beside the PDDL problem file `problem`."""
    problem = Path(problem)
    return problem.with_name(problem.name.removesuffix(".pddl") + SIDECAR_SUFFIX)
ROLES = ("task", "distractor")
TABLE, EVERY_BLOCK = "table", "blocks"  # materials keys beside block names: the table top, every block
CUSTOM_KEYS = {"solref": 2, "solimp": 5, "friction": 3, "density": 1}  # a custom material's keys and lengths

Interval = tuple[float, float]


@dataclass(frozen=True)
class BlockLook:
    """What one block looks like; its identity in the PDDL is the object name."""

    rgba: tuple[float, float, float, float]  # colour, components in [0, 1]
    glyph: str  # symbol printed on its faces
    role: str  # "task" (named in the goal or the task's init) or "distractor"


@dataclass(frozen=True)
class Region:
    """A named rectangle on the table top (table frame)."""

    x_m: Interval  # extent along x [m]
    y_m: Interval  # extent along y [m]


@dataclass(frozen=True)
class CustomMaterial:
    """A material given by its numbers (a sidecar's `materials` entry that names no preset)."""

    solref: tuple[float, float]  # (timeconst [s], dampratio [-])
    solimp: tuple[float, float, float, float, float]  # (dmin, dmax, width [m], midpoint, power)
    friction: tuple[float, float, float]  # (sliding [-], torsional [m], rolling [m])
    density: float  # [kg/m^3]
    name: str = "custom"  # a label for messages


MaterialRef = str | CustomMaterial  # a preset name or a custom material


@dataclass(frozen=True)
class SceneParams:
    """Ranges and looks for one problem's scene (see the module docstring for JSON)."""

    problem: str  # PDDL problem name
    family: str  # generating task family
    split: str  # "train", "test" or "all"
    seed: int  # entropy for this problem's physical draws
    blocks: tuple[tuple[str, BlockLook], ...]  # (object name, look), sorted by name
    regions: tuple[tuple[str, Region], ...] = ()  # (region object name, rectangle), sorted
    block_size_m: Interval = (0.03, 0.05)  # cube edge range [m]
    table_height_offset_m: Interval = (-0.02, 0.02)  # table top height offset range [m]
    friction: Interval = (0.6, 1.2)  # sliding friction range [-]
    placement_x_m: tuple[Interval, ...] = ((-0.05, 0.25),)  # disjoint start windows [m]
    placement_y_m: tuple[Interval, ...] = ((-0.1, 0.1),)  # disjoint start windows [m]
    # (prop, material) sorted by prop: "table", "blocks" (every block without its own) or a block
    # name; empty: wood with the drawn friction everywhere (the sidecar has no `materials` key)
    materials: tuple[tuple[str, MaterialRef], ...] = ()


def interval_problems(field: str, value: object, *, positive: bool = False) -> list[str]:
    if not (isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value)):
        return [f"{field}: {value!r} is not a [lo, hi] pair of numbers"]
    lo, hi = value
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [f"{field}: {list(value)} must be finite numbers"]
    if lo > hi:
        return [f"{field}: lo {lo} > hi {hi}; swap them"]
    if positive and lo <= 0:
        return [f"{field}: {lo} must be > 0"]
    return []


def windows_problems(field: str, value: object) -> list[str]:
    """A window list must hold sorted, non-overlapping [lo, hi] intervals (at least one)."""
    if not isinstance(value, list | tuple) or not value:
        return [f"{field}: {value!r} must be a non-empty list of [lo, hi] intervals"]
    problems = [p for i, w in enumerate(value) for p in interval_problems(f"{field}[{i}]", w)]
    if not problems:
        for i in range(1, len(value)):
            if value[i][0] <= value[i - 1][1]:
                problems.append(f"{field}: interval {list(value[i])} overlaps or precedes {list(value[i - 1])}; "
                                "give sorted, disjoint intervals")
    return problems


def fit_problems(scene: SceneParams) -> list[str]:
    """A block not in a region starts inside the placement windows, so a window narrower than the
    largest block edge the draw may give fails the reset sampling of every episode that draws one
    (the run stops), and a window no block fits fails them all; refused before any run starts."""
    edge = scene.block_size_m[1]
    out = []
    for field, windows in (("placement_x_m", scene.placement_x_m), ("placement_y_m", scene.placement_y_m)):
        widest = max(hi - lo for lo, hi in windows)
        if widest < edge:
            out.append(f"{field}: the widest window is {widest:g} m wide, narrower than the largest block edge "
                       f"(block_size_m up to {edge:g} m); widen a window to at least {edge:g} m or draw smaller blocks")
    return out


def material_ref_problems(field: str, value: object) -> list[str]:
    """The shape of one `materials` entry: a preset name or a custom material's numbers."""
    if isinstance(value, str):
        return [] if value.strip() else [f"{field}: an empty name; give a preset (e.g. wood, rubber, steel)"]
    if not isinstance(value, CustomMaterial):
        return [f"{field}: {value!r} is neither a preset name nor a custom material with keys "
                f"{', '.join(CUSTOM_KEYS)}"]
    problems = []
    for key, n in CUSTOM_KEYS.items():
        v = getattr(value, key)
        numbers = (v,) if n == 1 else v
        if not (isinstance(numbers, tuple) and len(numbers) == n
                and all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in numbers)):
            problems.append(f"{field}.{key}: {v!r} must be {'a finite number' if n == 1 else f'{n} finite numbers'}")
    return problems


def materials_problems(scene: SceneParams) -> list[str]:
    """Every `materials` entry that names no prop of the scene or is malformed."""
    props = [TABLE, EVERY_BLOCK, *sorted(n for n, _ in scene.blocks)]
    problems = []
    for prop, value in scene.materials:
        if prop not in props:
            problems.append(f"materials.{prop}: no such prop; props: {', '.join(props)}")
        problems += material_ref_problems(f"materials.{prop}", value)
    return problems


def scene_problems(scene: SceneParams) -> list[str]:
    """Every inconsistency in `scene`, as `field: what` messages."""
    problems = interval_problems("block_size_m", scene.block_size_m, positive=True)
    problems += interval_problems("table_height_offset_m", scene.table_height_offset_m)
    problems += interval_problems("friction", scene.friction, positive=True)
    problems += windows_problems("placement_x_m", scene.placement_x_m)
    problems += windows_problems("placement_y_m", scene.placement_y_m)
    if not problems:  # block sizes and windows are sound: whether the blocks fit the windows
        problems += fit_problems(scene)
    if scene.split not in ("train", "test", "all"):
        problems.append(f"split: {scene.split!r} is not one of train, test, all")
    for name, region in scene.regions:
        problems += interval_problems(f"regions.{name}.x_m", region.x_m)
        problems += interval_problems(f"regions.{name}.y_m", region.y_m)
    rects = [(n, r) for n, r in scene.regions if not interval_problems("x", r.x_m) + interval_problems("y", r.y_m)]
    for i, (a, ra) in enumerate(rects):
        for b, rb in rects[i + 1:]:
            if ra.x_m[0] < rb.x_m[1] and rb.x_m[0] < ra.x_m[1] and ra.y_m[0] < rb.y_m[1] and rb.y_m[0] < ra.y_m[1]:
                problems.append(f"regions: {a!r} and {b!r} overlap; (in_region ...) must name one region")
    for name, look in scene.blocks:
        if look.role not in ROLES:
            problems.append(f"blocks.{name}.role: {look.role!r} is not one of {', '.join(ROLES)}")
        if len(look.rgba) != 4 or not all(0.0 <= c <= 1.0 for c in look.rgba):
            problems.append(f"blocks.{name}.rgba: {list(look.rgba)} must be 4 numbers in [0, 1]")
    return problems + materials_problems(scene)


def material_ref_to_json(value: MaterialRef) -> str | dict:
    if isinstance(value, str):
        return value
    data = {k: getattr(value, k) if n == 1 else list(getattr(value, k)) for k, n in CUSTOM_KEYS.items()}
    return data if value.name == "custom" else {**data, "name": value.name}


def material_ref_from_json(value: object, *, field: str) -> MaterialRef:
    """A `materials` entry from JSON (or YAML): a name, or an object with the CUSTOM_KEYS (and `name`)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise TaskError(f"{field}: {value!r} is neither a preset name nor an object with keys "
                        f"{', '.join(CUSTOM_KEYS)}")
    known = {*CUSTOM_KEYS, "name"}
    problems = [f"{field}: missing key {k!r}" for k in CUSTOM_KEYS if k not in value]
    problems += [f"{field}: unknown key {k!r}; known: {', '.join(sorted(known))}" for k in sorted(set(value) - known)]
    if problems:
        raise TaskError("\n".join(problems))
    seq = {k: tuple(value[k]) if n > 1 and isinstance(value[k], list | tuple) else value[k]
           for k, n in CUSTOM_KEYS.items()}
    custom = CustomMaterial(**seq, name=str(value.get("name", "custom")))
    problems = material_ref_problems(field, custom)
    if problems:
        raise TaskError("\n".join(problems))
    return custom


def scene_to_json(scene: SceneParams) -> str:
    problems = scene_problems(scene)
    if problems:
        raise TaskError(f"scene parameters of {scene.problem!r} are invalid:" + listing(problems, indent=""))
    data = {
        "schema": SCHEMA,
        "problem": scene.problem,
        "family": scene.family,
        "split": scene.split,
        "seed": scene.seed,
        "block_size_m": list(scene.block_size_m),
        "table_height_offset_m": list(scene.table_height_offset_m),
        "friction": list(scene.friction),
        "placement_x_m": [list(w) for w in scene.placement_x_m],
        "placement_y_m": [list(w) for w in scene.placement_y_m],
        "regions": {n: {"x_m": list(r.x_m), "y_m": list(r.y_m)} for n, r in scene.regions},
        "blocks": {n: {"rgba": list(b.rgba), "glyph": b.glyph, "role": b.role} for n, b in scene.blocks},
    }
    if scene.materials:  # absent when none is declared: such sidecars keep their bytes
        data["materials"] = {prop: material_ref_to_json(m) for prop, m in scene.materials}
    text = json.dumps(data, indent=2, sort_keys=True)
    # Number lists on one line ([0.03, 0.05]) keep the file readable; still plain JSON.
    return re.sub(r"\[\s+([-+0-9.eE,\s]+?)\s+\]", lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]",
                  text) + "\n"


_KEYS = {"schema", "problem", "family", "split", "seed", "block_size_m", "table_height_offset_m", "friction",
         "placement_x_m", "placement_y_m", "regions", "blocks"}
_OPTIONAL = {"materials"}


def scene_from_json(text: str, *, file: str = "<scene>") -> SceneParams:
    """Read a sidecar; every missing, unknown or malformed field is reported at once."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskError(f"{file}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise TaskError(f"{file}: top level must be an object with keys {', '.join(sorted(_KEYS))}")
    problems = [f"missing key {k!r}" for k in sorted(_KEYS - data.keys())]
    problems += [f"unknown key {k!r}; known: {', '.join(sorted(_KEYS | _OPTIONAL))}"
                 for k in sorted(data.keys() - _KEYS - _OPTIONAL)]
    if not problems and data["schema"] != SCHEMA:
        problems.append(f"schema: {data['schema']!r}, this demoforge reads {SCHEMA!r}")
    if problems:
        raise TaskError(f"{file}: invalid scene sidecar:" + listing(problems, indent=""))
    materials = data.get("materials", {})
    if not isinstance(materials, dict):
        problems.append(f"materials: {materials!r} must be an object {{prop: preset name or custom material}}")
        materials = {}
    refs = []
    for prop, value in sorted(materials.items()):
        try:
            refs.append((str(prop), material_ref_from_json(value, field=f"materials.{prop}")))
        except TaskError as exc:
            problems += str(exc).split("\n")
    if problems:
        raise TaskError(f"{file}: invalid scene sidecar:" + listing(problems, indent=""))
    try:
        scene = SceneParams(
            problem=str(data["problem"]),
            family=str(data["family"]),
            split=str(data["split"]),
            seed=int(data["seed"]),
            block_size_m=tuple(data["block_size_m"]),
            table_height_offset_m=tuple(data["table_height_offset_m"]),
            friction=tuple(data["friction"]),
            placement_x_m=tuple(tuple(w) for w in data["placement_x_m"]),
            placement_y_m=tuple(tuple(w) for w in data["placement_y_m"]),
            regions=tuple(sorted((n, Region(tuple(r["x_m"]), tuple(r["y_m"]))) for n, r in data["regions"].items())),
            blocks=tuple(sorted(
                (n, BlockLook(tuple(b["rgba"]), str(b["glyph"]), str(b["role"]))) for n, b in data["blocks"].items()
            )),
            materials=tuple(refs),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TaskError(f"{file}: invalid scene sidecar: {type(exc).__name__}: {exc}") from None
    problems = scene_problems(scene)
    if problems:
        raise TaskError(f"{file}: invalid scene sidecar:" + listing(problems, indent=""))
    return scene
