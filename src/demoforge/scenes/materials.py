"""Contact materials by name: what each prop of a task scene is made of.

A scene sidecar's `materials` (`demoforge.tasks.scene`) and a run's `--material PROP=VALUE`
name a material per prop: the `table` top, `blocks` (every block without its own entry) or a
block by name; the value is a preset of `demoforge.sim.MATERIALS` or a custom material's
numbers. `scene_materials(params, draw)` resolves them into `sim.Material`s; a prop nobody
names is wood with the draw's sliding friction, as every scene was before materials had names,
so a sidecar without `materials` builds the same model bit for bit. A named material keeps its
own friction (the sidecar's `friction` range is drawn for the unnamed props only).

`with_materials(params, overrides)` lays a run's choices over a sidecar's: `blocks` from the run
replaces the sidecar's per-block entries, a block named by the run replaces everything else.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from demoforge.errors import DemoforgeError, listing
from demoforge.randomize.scene import SceneDraw
from demoforge.sim import MATERIALS, Material, material, material_problems
from demoforge.tasks.scene import (
    EVERY_BLOCK,
    TABLE,
    CustomMaterial,
    MaterialRef,
    SceneParams,
    material_ref_from_json,
    material_ref_problems,
    material_ref_to_json,
)

BASE_MATERIAL = "wood"  # props nobody names: wood contacts with the drawn sliding friction


class MaterialError(DemoforgeError):
    """A material named for a scene is unknown, malformed or cannot be simulated."""


def resolve(ref: MaterialRef, *, where: str) -> Material:
    """The Material of a preset name or a custom material; the error lists the presets."""
    if isinstance(ref, CustomMaterial):
        return Material(ref.name, ref.solref, ref.solimp, ref.friction, float(ref.density))
    if not isinstance(ref, str):
        raise MaterialError(f"{where}: {ref!r} is neither a preset name nor a custom material; presets: "
                            f"{', '.join(sorted(MATERIALS))}")
    if ref not in MATERIALS:
        raise MaterialError(f"{where}: unknown material {ref!r}; presets: {', '.join(sorted(MATERIALS))}, or a custom "
                            "material {\"solref\": [timeconst, dampratio], \"solimp\": [dmin, dmax, width, midpoint, "
                            "power], \"friction\": [sliding, torsional, rolling], \"density\": kg/m^3}")
    return material(ref)


def material_ref(value: MaterialRef | Material | Mapping, *, where: str) -> MaterialRef:
    """A run's material as the sidecar holds it: a name as it is, a `sim.Material` or a JSON-like
    mapping as a CustomMaterial (checked for its shape)."""
    if isinstance(value, Material):
        value = {"solref": list(value.solref), "solimp": list(value.solimp), "friction": list(value.friction),
                 "density": value.density, "name": value.name}
    if isinstance(value, Mapping):
        try:
            return material_ref_from_json(dict(value), field=where)
        except DemoforgeError as exc:
            raise MaterialError(str(exc).replace("\n", "; ")) from None
    return value


def default_material(draw: SceneDraw) -> Material:
    """What an unnamed prop is made of in `draw`: wood with the drawn sliding friction."""
    base = material(BASE_MATERIAL)
    return dataclasses.replace(base, name=f"{base.name}-mu{draw.friction:.4g}",
                               friction=(draw.friction, *base.friction[1:]))


def named_materials(params: SceneParams, *, timestep: float) -> dict[str, Material]:
    """The declared material of each prop that has one (`table` and block names; `blocks`
    expanded), every unknown name and unresolvable value reported at once."""
    declared = dict(params.materials)
    blocks = sorted(n for n, _ in params.blocks)
    props = [TABLE, EVERY_BLOCK, *blocks]
    problems, out = [], {}
    for prop, ref in sorted(declared.items()):
        where = f"materials.{prop}"
        if prop not in props:
            problems.append(f"{where}: no such prop; props: {', '.join(props)}")
            continue
        try:
            mat = resolve(ref, where=where)
        except MaterialError as exc:
            problems.append(str(exc))
            continue
        bad = material_problems(mat, timestep=timestep, where=where)
        if bad:
            problems += bad
            continue
        for target in (blocks if prop == EVERY_BLOCK else [prop]):
            if prop == EVERY_BLOCK and target in declared:
                continue  # a block's own entry wins over `blocks`
            out[target] = mat
    if problems:
        raise MaterialError(f"materials of {params.problem!r}:" + listing(problems, indent=""))
    return dict(sorted(out.items()))


def scene_materials(params: SceneParams, draw: SceneDraw, *, timestep: float) -> tuple[Material, dict[str, Material]]:
    """(table top, {block: material}) of `params`' scene under `draw`."""
    named = named_materials(params, timestep=timestep)
    default = default_material(draw)
    return named.get(TABLE, default), {b: named.get(b, default) for b, _ in sorted(params.blocks)}


def with_materials(params: SceneParams, overrides: Mapping[str, MaterialRef]) -> SceneParams:
    """`params` with a run's material choices laid over the sidecar's (see the module docstring);
    the keys must be props of the scene (`table_or_block_problems`)."""
    if not overrides:
        return params
    merged = dict(params.materials)
    if EVERY_BLOCK in overrides:
        merged = {k: v for k, v in merged.items() if k == TABLE}
    merged.update(overrides)
    return dataclasses.replace(params, materials=tuple(sorted(merged.items())))


def material_arg_problems(materials: Mapping[str, MaterialRef], *, timestep: float,
                          where: str = "--material") -> list[str]:
    """Every run material (`PROP -> MaterialRef`) that names no preset or cannot be simulated at
    `timestep` [s]; which props exist is the scenes' to say (`execute.apply_materials`)."""
    problems = []
    for prop, ref in sorted(materials.items()):
        label = f"{where} {prop}".strip()
        try:
            problems += material_problems(resolve(ref, where=label), timestep=timestep, where=label)
        except MaterialError as exc:
            problems.append(str(exc))
    return problems


def parse_material_args(items: tuple[str, ...] | list[str], *, where: str = "--material") -> dict[str, MaterialRef]:
    """`PROP=VALUE` entries (VALUE: a preset name or a custom material as a JSON object) as a
    mapping; the entries may be given in one comma list or many (a list option splits text at
    commas, so a JSON value's commas are rejoined here: an entry ends at a comma outside brackets)."""
    text = ",".join(items)
    entries, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"{": 1, "[": 1, "}": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    entries.append(text[start:])
    out, problems = {}, []
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        prop, sep, value = entry.partition("=")
        prop, value = prop.strip(), value.strip()
        if not sep or not prop or not value:
            problems.append(f"{where} {entry!r}: give PROP=MATERIAL, e.g. table=rubber, blocks=steel or red=wood")
            continue
        if prop in out:
            problems.append(f"{where} {entry!r}: {prop!r} is given twice; give each prop once")
            continue
        try:
            if value.startswith("{"):
                try:
                    data = json.loads(value)
                except json.JSONDecodeError as exc:
                    raise MaterialError(f"{where} {prop}: {value!r} is not a JSON object ({exc.msg}); write it as "
                                        "{\"solref\": [...], \"solimp\": [...], \"friction\": [...], "
                                        "\"density\": ...}") from None
                out[prop] = material_ref_from_json(data, field=f"{where} {prop}")
            else:
                out[prop] = value
                problems += material_ref_problems(f"{where} {prop}", value)
        except DemoforgeError as exc:
            problems += str(exc).split("\n")
    if problems:
        raise MaterialError("invalid materials:" + listing(problems, indent=""))
    return out


def materials_to_args(materials: Mapping[str, MaterialRef]) -> tuple[str, ...]:
    """The canonical `PROP=VALUE` entries of a mapping (sorted; custom values as compact sorted JSON)."""
    return tuple(f"{prop}={v if isinstance(v, str) else json.dumps(material_ref_to_json(v), sort_keys=True)}"
                 for prop, v in sorted(materials.items()))
