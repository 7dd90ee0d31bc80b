"""What a task package is made of: `TaskPackage`, a PDDL domain with a skill per operator
(`Skill`), a simulator evaluator per fluent predicate (`Predicate`), its problem families
(`Family`) and the object types its scenes build (`ObjectType`). Frozen records; finding and
registering packages is `demoforge.tasks.package`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demoforge.errors import TaskError


class TaskPackageError(TaskError):
    """A task package cannot be loaded, or clashes with one already registered."""


@dataclass(frozen=True)
class Skill:
    """One operator's skill."""

    name: str  # PDDL operator name
    params: tuple[str, ...]  # its parameters, in order (for arity checks and messages)
    body: Callable[..., Any]  # plans one call: (PlanBuilder, args, params dict) -> SkillPlan (skills.builder.SkillBody)


@dataclass(frozen=True)
class Predicate:
    """How the simulator decides one fluent predicate."""

    kinds: tuple[str, ...]  # argument kinds, in order: an object type ("block", "region") or a constant table ("face", "yaw")
    evaluate: Callable[..., bool]  # (Geometry, Binding, *argument names) -> bool: one ground atom of one state
    # Optional vectorized form (geometry, binding, at_rest, *index columns) -> (..., atoms) bool, the columns being
    # the arguments as indices per `kinds` (block, region, face and yaw kinds only; with another kind the form is
    # not used); None: `evaluate` is asked atom by atom (slower, same answer).
    vector: Callable[..., Any] | None = None
    # Kept: what an object shows of this predicate (its first argument) is not the policy's to change
    # unless the goal asks it. An episode whose goal holds while an atom of it that held at the start
    # has given way to another of the same object (the blocks world's face_up: a block knocked over
    # onto another face) is judged "disturbed", not a success (`tasks.simulate.disturbed`).
    kept: bool = False


@dataclass(frozen=True)
class Family:
    """A deterministic generator of problems of one kind (see `demoforge.tasks.families`)."""

    default_n: int  # task objects when the caller gives no `n`
    min_n: int  # fewest task objects the family makes sense with
    # (task block names, numpy Generator) -> (init atoms about those blocks, goal atoms); must draw only from the
    # Generator, so a seed gives the same problems everywhere.
    build: Callable[..., tuple[list, list]]
    regions: tuple = ()  # ((region name, tasks.scene.Region), ...): region objects of every problem
    fixed_n: bool = False  # n is always default_n (a caller giving another n is refused)
    # PDDL type of each task object, in the order `build` receives them (a subtype of `block` whose
    # ObjectType builds its prop); objects past the end, and distractors, are `block`s.
    types: tuple[str, ...] = ()


@dataclass(frozen=True)
class ObjectType:
    """A PDDL object type and how a scene realises it.

    The scene builder makes a free prop of every object whose type is `block` or a subtype of it
    (`(:types cup - block)`): a glyph-marked box for `block` itself, else what the type's `build`
    returns. Such objects take part in everything a block does: a sidecar entry (colour, role), a
    drawn size, reset sampling from `on_table`/`face_up`/`yaw`, the built-in predicates (read on the
    prop's bounding box), the grasp search, the environment state. `region` objects are the table
    rectangles of the sidecar's `regions`.
    """

    name: str  # PDDL type name
    built_as: str  # what the scene builder makes of an object of this type, in words
    # (object name, drawn size [m], rgba, material) -> a free prop (`demoforge.sim.Box`, `Cylinder` or `MeshProp`)
    # named after the object, its frame at the centre of its bounding box (where predicates and skills take the
    # object's centre; `pos` is set by the scene builder). None: the type is built as a block's box.
    build: Callable[..., Any] | None = None


@dataclass(frozen=True)
class TaskPackage:
    """A domain and everything that acts it out. Mappings are keyed by the PDDL name."""

    name: str  # package name; also the domain's library name (`--domain NAME`)
    domain: str | Path  # PDDL domain: a file path, or the text itself
    skills: Mapping[str, Skill] = field(default_factory=dict)  # operator -> skill
    predicates: Mapping[str, Predicate] = field(default_factory=dict)  # fluent predicate -> evaluator
    families: Mapping[str, Family] = field(default_factory=dict)  # family name -> generator
    object_types: Mapping[str, ObjectType] = field(default_factory=dict)  # PDDL type -> scene realisation
    origin: str = ""  # where it was found: "built-in", "entry point NAME", "path FILE", "module NAME" (set by register)
    source: Path | None = None  # the file of the module that defines it; None when registered in code (set by register)

    @property
    def domain_is_file(self) -> bool:
        """`domain` names a file (a Path, or text that is no PDDL), not the PDDL text itself."""
        return isinstance(self.domain, Path) or "(define" not in str(self.domain)

    def domain_text(self) -> str:
        """The domain's PDDL text."""
        if self.domain_is_file:
            path = Path(self.domain)
            if not path.is_file():
                raise TaskPackageError(f"task package {self.name!r}: domain {str(path)!r} is not a file; give the "
                                       "domain PDDL text or a path to it")
            return path.read_text(encoding="utf-8")
        return str(self.domain)

    def domain_file(self) -> str:
        """A name for the domain in messages and written task folders: its file name, else NAME.pddl."""
        if self.domain_is_file:
            return Path(self.domain).name
        return f"{self.name}.pddl"
