"""Task-family generators: many PDDL problems of one kind, with their scene sidecars.

`generate_family(name, count=..., seed=..., **options)` is deterministic: task `i` draws
from `SeedSequence(seed, spawn_key=(crc32(name), split index, i))`, so the same
arguments give byte-identical files whatever else ran before. Blocks are named after
their colour; a train/test split keeps the colour (or glyph) sets of the two halves
disjoint so a policy can be tested on looks it never saw.
"""

import dataclasses
import os
import shutil
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from demoforge.errors import TaskError
from demoforge.dataset.guard import guard_output_dir
from demoforge.tasks import library
from demoforge.tasks import package as registry
from demoforge.tasks.package_records import Family
from demoforge.tasks.pddl_text import Atom, goal_of_atoms, problem_to_pddl
from demoforge.tasks.scene import (
    SIDECAR_SUFFIX, BlockLook, Interval, Region, SceneParams, materials_problems, scene_problems, scene_to_json,
)

DOMAIN = "blocks"  # library domain every family writes problems for
DOMAIN_NAME = "demoforge-blocks"
FACES = ("px", "nx", "py", "ny", "pz", "nz")  # block-frame axis pointing up
YAWS = ("yaw0", "yaw90", "yaw180", "yaw270")  # turn about the vertical, 90-degree steps
SPLITS = ("all", "train", "test")
SPLIT_BY = ("colour", "glyph")
# Colour name (also the block's PDDL name) -> RGBA. Train takes even rows, test odd.
COLOURS: tuple[tuple[str, tuple[float, float, float, float]], ...] = (
    ("red", (0.85, 0.10, 0.10, 1.0)), ("green", (0.10, 0.65, 0.20, 1.0)),
    ("blue", (0.10, 0.25, 0.85, 1.0)), ("yellow", (0.95, 0.85, 0.10, 1.0)),
    ("orange", (0.95, 0.50, 0.05, 1.0)), ("purple", (0.50, 0.15, 0.65, 1.0)),
    ("cyan", (0.10, 0.80, 0.85, 1.0)), ("magenta", (0.90, 0.15, 0.65, 1.0)),
    ("white", (0.95, 0.95, 0.95, 1.0)), ("black", (0.08, 0.08, 0.08, 1.0)),
    ("brown", (0.50, 0.30, 0.12, 1.0)), ("pink", (0.98, 0.60, 0.70, 1.0)),
    ("grey", (0.50, 0.50, 0.50, 1.0)), ("lime", (0.60, 0.90, 0.15, 1.0)),
    ("navy", (0.05, 0.10, 0.40, 1.0)), ("teal", (0.05, 0.50, 0.50, 1.0)),
)
GLYPHS = tuple("ABCDEFGHJKLMNPQRSTUVWXYZ")
# Regions of the pnp family, beside the default start windows (table frame) [m].
PNP_REGIONS = (("left", Region((0.0, 0.20), (0.18, 0.30))), ("right", Region((0.0, 0.20), (-0.30, -0.18))))


def _opposite(face: str) -> str:
    return ("n" if face[0] == "p" else "p") + face[1]


# The (up face, face tipped up) pairs whose 90-degree tip turns the yaw's reference heading
# counter-clockwise (+90 degrees); every other adjacent pair turns it clockwise. Derived from
# demoforge.symbolic.orientation's yaw convention (a tip is a turn about a level axis, so no
# yaw convention keeps the yaw over every tip); tests/skills/test_reorient.py holds the two
# together.
TIPS_CCW = frozenset({("px", "py"), ("px", "ny"), ("px", "nz"), ("nx", "nz"), ("py", "nx"), ("py", "pz"),
                      ("py", "nz"), ("ny", "nx"), ("pz", "px"), ("pz", "nx"), ("pz", "ny"), ("nz", "ny")})


def static_facts() -> tuple[Atom, ...]:
    """The domain's static relations every problem's init holds: 90-degree tips between
    adjacent faces, the yaw each tip leads to, and 90-degree yaw steps."""
    pairs = [(f, g) for f in FACES for g in FACES if g not in (f, _opposite(f))]
    tips = [("adjacent", f, g) for f, g in pairs]
    turns = [("tip_yaw", f, g, YAWS[i], YAWS[(i + (1 if (f, g) in TIPS_CCW else 3)) % 4])
             for f, g in pairs for i in range(4)]
    steps = [("yaw_step", YAWS[i], YAWS[(i + k) % 4]) for i in range(4) for k in (1, 3)]
    return tuple(sorted(tips + turns + steps))


@dataclass(frozen=True)
class FamilyOptions:
    """Options every family takes; `None` means the family's default."""

    n: int | None = None  # task blocks: tower height (stack_n, unstack), blocks to place (pnp)
    distractors: int = 0  # extra blocks on the table, not in the goal
    split: str = "all"  # "train" or "test": which half of the looks; "all": every look
    split_by: str = "colour"  # look the split keeps disjoint: "colour" or "glyph"
    block_size_m: Interval | None = None  # cube edge range [m]
    table_height_offset_m: Interval | None = None  # table top offset range [m]
    friction: Interval | None = None  # sliding friction range [-]
    placement_x_m: tuple[Interval, ...] | None = None  # start windows along x [m]
    placement_y_m: tuple[Interval, ...] | None = None  # start windows along y [m]
    materials: tuple = ()  # ((prop, MaterialRef), ...): the sidecars' `materials` (table, blocks, a block's name)


@dataclass(frozen=True)
class GeneratedTask:
    """One generated problem and its sidecar."""

    name: str  # problem name, also the file stem
    family: str  # generating family
    problem_pddl: str  # problem text (canonical: sorted objects and init)
    scene: SceneParams  # what PDDL cannot say (see demoforge.tasks.scene)


Build = Callable[[list[str], np.random.Generator], tuple[list[Atom], list[Atom]]]


def _on_table(blocks: list[str]) -> list[Atom]:
    return [a for b in blocks for a in (("on_table", b), ("clear", b))]


def _upright(blocks: list[str]) -> list[Atom]:
    return [a for b in blocks for a in (("face_up", b, "pz"), ("yaw", b, "yaw0"))]


def _tower(blocks: list[str]) -> list[Atom]:
    """blocks[0] on top, blocks[-1] on the table."""
    atoms = [("on", top, below) for top, below in zip(blocks, blocks[1:], strict=False)]
    return atoms + [("on_table", blocks[-1]), ("clear", blocks[0])]


def _stack(blocks: list[str], rng: np.random.Generator) -> tuple[list[Atom], list[Atom]]:
    return _on_table(blocks) + _upright(blocks), [a for a in _tower(blocks) if a[0] == "on"]


def _unstack(blocks: list[str], rng: np.random.Generator) -> tuple[list[Atom], list[Atom]]:
    return _tower(blocks) + _upright(blocks), [("on_table", b) for b in blocks]


def _pnp(blocks: list[str], rng: np.random.Generator) -> tuple[list[Atom], list[Atom]]:
    names = [r for r, _ in PNP_REGIONS]
    goal = [("in_region", b, names[int(rng.integers(len(names)))]) for b in blocks]
    return _on_table(blocks) + _upright(blocks), goal


def _two_different(options: tuple[str, ...], rng: np.random.Generator) -> tuple[str, str]:
    first, second = rng.choice(len(options), size=2, replace=False)
    return options[int(first)], options[int(second)]


def _flip(blocks: list[str], rng: np.random.Generator) -> tuple[list[Atom], list[Atom]]:
    faces = [_two_different(FACES, rng) for _ in blocks]
    init = _on_table(blocks) + [a for b, (f, _) in zip(blocks, faces, strict=True)
                                for a in (("face_up", b, f), ("yaw", b, "yaw0"))]
    return init, [("face_up", b, g) for b, (_, g) in zip(blocks, faces, strict=True)]


def _rotate(blocks: list[str], rng: np.random.Generator) -> tuple[list[Atom], list[Atom]]:
    yaws = [_two_different(YAWS, rng) for _ in blocks]
    init = _on_table(blocks) + [a for b, (y, _) in zip(blocks, yaws, strict=True)
                                for a in (("face_up", b, "pz"), ("yaw", b, y))]
    # The face stays in the goal: a flip moves the yaw too, and must not stand in for a turn.
    return init, [a for b, (_, g) in zip(blocks, yaws, strict=True) for a in (("face_up", b, "pz"), ("yaw", b, g))]


# The blocks world's families (its task package, demoforge.taskapi.blocks, provides them).
BLOCKS_FAMILIES: dict[str, Family] = {
    "stack_three": Family(3, 3, _stack, fixed_n=True),
    "stack_n": Family(4, 2, _stack),
    "unstack": Family(3, 2, _unstack),
    "pnp": Family(1, 1, _pnp, PNP_REGIONS),
    "flip": Family(1, 1, _flip),
    "rotate": Family(1, 1, _rotate),
}
# Every registered package's families (name -> Family): the names `generate_family` takes.
FAMILIES: Mapping[str, Family] = registry.FAMILIES


def _options(name: str, raw: dict) -> FamilyOptions:
    known = {f.name for f in dataclasses.fields(FamilyOptions)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise TaskError(f"unknown option(s) {', '.join(unknown)} for family {name!r}; options: {', '.join(sorted(known))}")
    return FamilyOptions(**raw)


def _check(name: str, opts: FamilyOptions, count: int) -> int:
    fam = registry.family(name)
    n = fam.default_n if opts.n is None else opts.n
    problems = []
    if fam.fixed_n and n != fam.default_n:
        other = " for other heights" if name == "stack_three" else ""
        problems.append(f"n: {name} always has {fam.default_n} blocks, got {n}; use "
                        f"{'stack_n' if name == 'stack_three' else 'another family'}{other}")
    elif n < fam.min_n:
        problems.append(f"n: family {name!r} needs at least {fam.min_n} block(s), got {n}")
    if opts.distractors < 0:
        problems.append(f"distractors: {opts.distractors} must be >= 0")
    if count < 0:
        problems.append(f"count: {count} must be >= 0")
    if opts.split not in SPLITS:
        problems.append(f"split: {opts.split!r} is not one of {', '.join(SPLITS)}")
    if opts.split_by not in SPLIT_BY:
        problems.append(f"split_by: {opts.split_by!r} is not one of {', '.join(SPLIT_BY)}")
    if not problems:
        colours, glyphs = _looks(opts)
        need = n + opts.distractors
        for what, pool in (("colours", colours), ("glyphs", glyphs)):
            if need > len(pool):
                problems.append(f"{need} blocks need {need} distinct {what} but split {opts.split!r} has "
                                f"{len(pool)}; lower n or distractors, or split the other look")
    if problems:
        raise TaskError(f"invalid options for task family {name!r}:\n" + "\n".join(problems))
    return n


def _looks(opts: FamilyOptions) -> tuple[tuple, tuple]:
    half = {"all": slice(None), "train": slice(0, None, 2), "test": slice(1, None, 2)}[opts.split]
    colours = COLOURS[half] if opts.split_by == "colour" else COLOURS
    glyphs = GLYPHS[half] if opts.split_by == "glyph" else GLYPHS
    return colours, glyphs


def _ranges(name: str, opts: FamilyOptions) -> dict:
    """The sidecar's ranges and windows: the options given, the defaults for the rest."""
    base = SceneParams(problem="", family=name, split=opts.split, seed=0, blocks=())
    ranges = {}
    for field in ("block_size_m", "table_height_offset_m", "friction", "placement_x_m", "placement_y_m"):
        value = getattr(opts, field)
        if value is None:
            ranges[field] = getattr(base, field)
            continue
        try:
            windows = field.startswith("placement")
            ranges[field] = tuple(tuple(w) for w in value) if windows else tuple(value)
        except TypeError:
            raise TaskError(f"invalid options for task family {name!r}:\n{field}: {value!r} is not "
                            f"{'a list of [lo, hi] intervals' if windows else 'a [lo, hi] pair'}") from None
    problems = scene_problems(dataclasses.replace(base, **ranges))
    if problems:
        raise TaskError(f"invalid scene options for family {name!r}:\n" + "\n".join(problems))
    return ranges


def _one(name: str, opts: FamilyOptions, ranges: dict, n: int, seed: int, index: int) -> GeneratedTask:
    key = (zlib.crc32(name.encode()), SPLITS.index(opts.split), index)
    structure, looks = np.random.SeedSequence(seed, spawn_key=key).spawn(2)
    rng = np.random.default_rng(structure)
    layout = registry.family(name)
    colours, glyphs = _looks(opts)
    count = n + opts.distractors
    picked = [colours[i] for i in rng.choice(len(colours), size=count, replace=False)]
    marks = [glyphs[i] for i in rng.choice(len(glyphs), size=count, replace=False)]
    blocks = [c for c, _ in picked]
    task, distractors = blocks[:n], blocks[n:]
    init, goal = layout.build(task, rng)
    declared = registry.domain_predicates(registry.owner("families", name))
    init += [a for a in _on_table(distractors) + _upright(distractors) if a[0] in declared]
    problem = f"{name}-{opts.split}-{index:04d}"
    types = layout.types + ("block",) * (len(blocks) - len(layout.types))
    objects = list(zip(blocks, types, strict=False)) + [(r, "region") for r, _ in layout.regions]
    pddl = problem_to_pddl(
        name=problem,
        domain_name=_domain_name(name),
        objects=objects,
        init=[*[a for a in (("hand_empty",),) if a[0] in declared], *init,
              *[a for a in static_facts() if a[0] in declared]],
        goal=goal_of_atoms(goal),
    )
    scene = SceneParams(
        problem=problem,
        family=name,
        split=opts.split,
        seed=int(looks.generate_state(1, dtype=np.uint64)[0] >> 1),
        blocks=tuple(sorted(
            (b, BlockLook(rgba, glyph, "task" if i < n else "distractor"))
            for i, ((b, rgba), glyph) in enumerate(zip(picked, marks, strict=True))
        )),
        regions=layout.regions,
        materials=tuple(sorted(opts.materials, key=lambda entry: entry[0])),
        **ranges,
    )
    problems = materials_problems(scene)
    if problems:
        raise TaskError(f"materials for {problem}: " + "; ".join(problems) + " (its blocks are named by colour, "
                        "drawn per problem: name `table` or `blocks` to reach every problem)")
    return GeneratedTask(problem, name, pddl, scene)


def _domain_name(family: str) -> str:
    """The `(:domain NAME)` of the package providing `family`."""
    pkg = registry.owner("families", family)
    return DOMAIN_NAME if pkg.name == DOMAIN else registry.domain_name(pkg)


def generate_family(name: str, *, count: int, seed: int, **options) -> list[GeneratedTask]:
    """`count` problems of family `name` (a key of `FAMILIES`, from any registered task package);
    options: `FamilyOptions`. Every problem's init also holds those of the blocks world's base facts
    (hand_empty, the distractors on the table upright, `static_facts`) whose predicates the family's
    domain declares."""
    registry.family(name)  # the error lists every family
    opts = _options(name, options)
    n = _check(name, opts, count)
    ranges = _ranges(name, opts)
    return [_one(name, opts, ranges, n, seed, i) for i in range(count)]


def _write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_tasks(tasks: list[GeneratedTask], out_dir: str | Path) -> list[Path]:
    """Write the domain, each `NAME.pddl` and `NAME.scene.json` under `out_dir`, a new or empty
    folder, or one holding exactly these files from an earlier run with the same options."""
    out = Path(out_dir)
    owners = {registry.owner("families", t.family).name for t in tasks} or {DOMAIN}
    files = {library.DOMAINS[d]: library.domain_text(d) for d in sorted(owners)}
    for task in tasks:
        files[f"{task.name}.pddl"] = task.problem_pddl
        files[f"{task.name}{SIDECAR_SUFFIX}"] = scene_to_json(task.scene)
    guard_output_dir(out, resumable=lambda folder: _same_files(folder, files))
    new = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        for name, text in files.items():
            _write(out / name, text)
            written.append(out / name)
    except BaseException:
        if new:  # a full disk part-way: no half set is left (a rerun writes it whole)
            shutil.rmtree(out, ignore_errors=True)
        raise
    return written


def _same_files(folder: Path, files: dict[str, str]) -> bool:
    """`folder` holds only these files, each with these contents (an earlier identical run)."""
    names = {p.name for p in folder.iterdir()} - {f"{n}.partial" for n in files}  # a killed run's, rewritten
    if not names <= set(files):
        return False
    return all((folder / n).is_file() and (folder / n).read_bytes() == files[n].encode("utf-8") for n in names)
