"""A run's materials (`generate --material`, README 'Materials'): laid over the problems' sidecars,
resolved and contact-linted before any episode (`demoforge.scenes.materials`, `scenes.material_lint`)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from demoforge.errors import listing
from demoforge.execute.problems import ExecuteError
from demoforge.scenes.material_lint import lint_materials
from demoforge.scenes.materials import MaterialError, material_arg_problems, named_materials, with_materials
from demoforge.scenes.problem import Problem, problem_robot
from demoforge.sim import SceneSpec
from demoforge.tasks.scene import EVERY_BLOCK, TABLE, MaterialRef, sidecar_path


def apply_materials(problems: list[Problem], materials: Mapping[str, MaterialRef]) -> list[Problem]:
    """`problems` with a run's materials over their sidecars'. A prop name no problem has, a
    package (its scenes are baked) and a material that cannot be built are refused, all at once."""
    bad = [f"{p.source}: a scene package's scenes are baked with their sidecars' materials; drop --material "
           "(YAML: execute.material), or declare the materials in the sidecars (`materials`, README 'Materials') and "
           "rebuild the package (`demoforge scenes build`; a run: --skip-scenes uses the PDDL problems)"
           for p in {p.source: p for p in problems if p.package is not None}.values()]
    props = sorted({TABLE, EVERY_BLOCK} | {b for p in problems for b, _ in p.params.blocks})
    bad += [f"--material {prop}=...: no problem of the run has a prop {prop!r}; props: {', '.join(props)}"
            for prop in sorted(materials) if prop not in props]
    bad += material_arg_problems(materials, timestep=SceneSpec().timestep)
    out = []
    for p in problems:
        own = {k: v for k, v in materials.items() if k in (TABLE, EVERY_BLOCK) or k in dict(p.params.blocks)}
        out.append(dataclasses.replace(p, params=with_materials(p.params, own)))
    if bad:
        raise ExecuteError("cannot generate:" + listing(bad))
    return out


def check_materials(problems: list[Problem], *, warn: Callable[[str], None]) -> None:
    """Refuse a run whose named materials cannot be built or whose contact lint finds an explosion
    (C001) in a pair of them, before any episode: every problem named at once; the lint's
    warnings (C002 penetration, C003 jitter) go to `warn`. Problems without named materials
    have today's combinations only and are not probed."""
    timestep = SceneSpec().timestep
    bad = []
    for p in problems:
        if p.params.materials:
            try:
                named_materials(p.params, timestep=timestep)
            except MaterialError as exc:
                where = sidecar_path(p.source) if p.package is None else Path(p.source) / p.name / "scene.json"
                bad += [f"{where}: {line.strip()}" for line in str(exc).splitlines()[1:]]
    if bad:
        raise ExecuteError("cannot generate:" + listing(bad))
    findings = lint_materials((p.params, problem_robot(p)) for p in problems)
    errors = [f.text() for f in findings if f.error]
    if errors:
        raise ExecuteError("cannot generate: the contact lint of the run's materials finds a pair that explodes "
                           "(change the material, e.g. raise its solref dampratio towards 1 as the presets have it):"
                           + listing(errors))
    for f in findings:
        warn(f"warning: contact lint: {f.text()}")


def print_warning(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
