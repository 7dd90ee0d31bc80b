"""Checks of the task plug-in point: task families and reset-state samplers."""

from __future__ import annotations

import copy
from collections.abc import Callable

from demoforge.determinism.core import CheckReport, DeterminismError, Harness
from demoforge.randomize.scene import bake_profiles
from demoforge.scenes import build_task_scene
from demoforge.symbolic import ResetState, reset_rng, sample_reset_state
from demoforge.tasks import FAMILIES, GeneratedTask, domain_text, generate_family, parse_task
from demoforge.tasks import package as registry
from demoforge.tasks.families import DOMAIN

# (count=, seed=, **options) -> generated problems, as `generate_family` with its name bound
FamilyFn = Callable[..., list[GeneratedTask]]
# (scene, binding, params, draw, rng) -> ResetState, as `sample_reset_state`
ResetSampler = Callable[..., ResetState]


def _family(family: str | FamilyFn) -> tuple[str, FamilyFn]:
    if callable(family):
        return f"task family {getattr(family, '__name__', repr(family))}", family
    if family not in FAMILIES:
        raise DeterminismError(f"task family {family!r} is not one of {sorted(FAMILIES)}; pass a name of "
                               "FAMILIES or a callable (count=, seed=, **options) -> list[GeneratedTask]")
    return f"task family {family!r}", lambda **kw: generate_family(family, **kw)


def check_task_family(family: str | FamilyFn, *, count: int = 2, seed: int = 0, other_seed: int = 1,
                      reset_states: int = 1, require_seed_effect: bool = False, **options) -> CheckReport:
    """Generate `count` problems of `family` (a key of `FAMILIES`, or a callable taking
    `count=`, `seed=` and the `options`) twice from `seed` and once from `other_seed`; then check
    reset-state sampling (`check_reset_state`) on the first `reset_states` problems.
    `require_seed_effect`: identical output for the two seeds is an error (else a warning).

    Raises `DeterminismError` naming what differed; returns a `CheckReport`."""
    plugin, make = _family(family)
    given = copy.deepcopy(options)
    harness = Harness(plugin, lambda s: make(count=count, seed=s, **options))
    first = harness.same_seed(seed)
    if not isinstance(first, list) or not all(isinstance(t, GeneratedTask) for t in first):
        raise DeterminismError(f"{plugin}: returned {type(first).__name__}, not a list of GeneratedTask; a family "
                               "returns what generate_family returns")
    harness.other_seed(seed, other_seed, first, required=require_seed_effect)
    harness.unchanged("options", given, options)
    for task in first[:reset_states]:
        sub = check_reset_state(task, seed=seed, other_seed=other_seed, require_seed_effect=require_seed_effect)
        harness.runs += sub.runs
        harness.passed += [f"reset state of {task.name}: {p}" for p in sub.passed]
        harness.warnings += [f"reset state of {task.name}: {w}" for w in sub.warnings]
    return harness.report()


def check_reset_state(task: GeneratedTask, *, sampler: ResetSampler = sample_reset_state, seed: int = 0,
                      other_seed: int = 1, index: int = 0, require_seed_effect: bool = False) -> CheckReport:
    """Sample reset state `index` of `task` (scene profile 0 of a package built with `seed`) with
    `sampler` twice, each in a freshly built scene, then from `other_seed`: the physics
    snapshots must be byte-identical, and differ for the other seed."""
    name = getattr(sampler, "__name__", repr(sampler))
    # The domain of the package whose family made it; a callable family that no package registers
    # makes blocks problems (its GeneratedTask names its family, not its domain).
    owner = registry.owner("families", task.family)
    parsed = parse_task(task.problem_pddl, domain_text=domain_text(owner.name if owner else DOMAIN),
                        problem_file=f"{task.name}.pddl")

    def run(s: int) -> ResetState:
        draw = bake_profiles(task.scene, 1, s)[0]
        scene, binding = build_task_scene(parsed, task.scene, draw)
        return sampler(scene, binding, task.scene, draw, reset_rng(task.scene, s, 0, index))

    harness = Harness(f"reset sampler {name} on {task.name}", run)
    first = harness.same_seed(seed)
    harness.other_seed(seed, other_seed, first, required=require_seed_effect)
    harness.notes.append("the scene parameters and draw are frozen records, so they cannot be changed")
    return harness.report()
