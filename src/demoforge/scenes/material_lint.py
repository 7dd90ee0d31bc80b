"""The contact lint of a scene's named materials: every pair that can touch, probed once.

A task scene whose sidecar (or run) names materials (`scenes.materials`) has new material
combinations: block on table, block on block, finger pad against block. `lint_materials`
probes each distinct pair once (`sim.lint_pairs.lint_pair`: the heaviest block the sidecar can
draw, settling on the other surface under the scene's physics options) and returns the
findings, C001 (an explosion: the simulator went unstable, created energy or its accelerations
blew up) first. A scene without named materials has only the combinations every run had before
and is not probed.

A finger pad usually has the higher contact priority (the built-in arm's pads do), so its own
parameters make the finger-block contact; the probe still judges the block's mass on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from demoforge.randomize.scene import SceneDraw
from demoforge.scenes.materials import scene_materials
from demoforge.sim import Material, RobotCard, SceneSpec, build_scene, panda_card
from demoforge.sim.lint_classify import Finding
from demoforge.sim.lint_pairs import Surface, finger_surfaces, lint_pair, material_surface
from demoforge.tasks.scene import SceneParams


@dataclass(frozen=True)
class PairFinding:
    """A lint finding of one material pair of a problem's scene."""

    problem: str  # the first problem whose scene has the pair
    pair: str  # "block 'red' (steel ...) on table top (rubber ...)": the pair and its values
    finding: Finding  # what the linter found on the pair's probe

    @property
    def error(self) -> bool:
        return self.finding.severity == "error"

    def text(self) -> str:
        f = self.finding
        return (f"{self.problem}: {self.pair}: {f.code} {f.message} (value {f.value:.4g} {f.unit}, threshold "
                f"{f.threshold:.4g} {f.unit}); fix: {f.fix}")


def _values(mat: Material) -> str:
    return (f"{mat.name}: solref {list(mat.solref)}, solimp {list(mat.solimp)}, friction {list(mat.friction)}, "
            f"density {mat.density:g} kg/m^3")


def _surface_values(s: Surface) -> str:
    return (f"solref {list(s.solref)}, solimp {list(s.solimp)}, friction {list(s.friction)}, priority {s.priority}")


def _key(mat: Material, s: Surface) -> tuple:
    """A pair by its values (names and labels aside): what the probe's physics depends on."""
    return (mat.solref, mat.solimp, mat.friction, mat.density, s.solref, s.solimp, s.friction, s.priority,
            s.solmix, s.condim)


def material_pairs(params: SceneParams, fingers: list[Surface], *,
                   timestep: float) -> list[tuple[str, Material, Surface]]:
    """(label, block material, surface) of every pair that can touch in `params`' scene: each block
    on the table top, each block on each other block, each finger surface against each block;
    one entry per distinct pair of values (a pair's first blocks name it)."""
    nominal = SceneDraw(params.problem, tuple((b, params.block_size_m[1]) for b, _ in params.blocks),
                        0.0, params.friction[1])  # the highest friction the unnamed props may draw
    top, blocks = scene_materials(params, nominal, timestep=timestep)
    out: dict[tuple, tuple[str, Material, Surface]] = {}

    def add(label: str, mat: Material, surface: Surface) -> None:
        out.setdefault(_key(mat, surface), (label, mat, surface))

    for b, mat in blocks.items():
        add(f"block {b!r} ({_values(mat)}) on the table top ({_values(top)})", mat,
            material_surface(top, "table top"))
        for other, mat2 in blocks.items():
            if other != b:
                add(f"block {b!r} ({_values(mat)}) on block {other!r} ({_values(mat2)})", mat,
                    material_surface(mat2, f"block {other!r}"))
        for s in fingers:
            add(f"{s.label} ({_surface_values(s)}) against block {b!r} ({_values(mat)})", mat, s)
    return list(out.values())


def lint_materials(scenes: Iterable[tuple[SceneParams, RobotCard | None]]) -> list[PairFinding]:
    """Lint every material pair of the scenes that name materials (`(sidecar, robot card)`, None:
    the built-in arm), each distinct pair once; C001 findings first, then in scene order."""
    timestep = SceneSpec().timestep
    fingers: dict[str, list[Surface]] = {}
    done: set[tuple] = set()
    found: list[PairFinding] = []
    for params, card in scenes:
        if not params.materials:
            continue
        card = card or panda_card()
        if card.name not in fingers:
            bare = build_scene(SceneSpec(robot=card))
            fingers[card.name] = finger_surfaces(bare.model, bare.robot.finger_bodies)
        edge = params.block_size_m[1]
        for label, mat, surface in material_pairs(params, fingers[card.name], timestep=timestep):
            key = (*_key(mat, surface), edge)
            if key in done:
                continue
            done.add(key)
            report = lint_pair(mat, surface, edge=edge, timestep=timestep)
            found += [PairFinding(params.problem, label, f) for f in report.findings]
    return sorted(found, key=lambda p: not p.error)
