"""Task packages: a PDDL domain with everything the factory needs to act it out, and their registry.

A `TaskPackage` bundles a domain with a skill per operator, an evaluator over the MuJoCo state per
fluent predicate, the problem families that generate its problems, and the object types its scenes
build. The blocks world is one such package (`demoforge.taskapi.blocks`); a user's package is
written the same way against `demoforge.taskapi` and found by

- `load_package("path/to/task.py")` or `load_package("my.module")` (a module that defines `PACKAGE`),
  which the CLI's `--task-package` and the run config's `task_packages` call, or
- an installed distribution's entry point in the group `demoforge.tasks` naming such a module.

Every lookup the factory makes (`SKILLS`, `PREDICATES`, `FAMILIES`, `owner`, `family`,
`domain_file_of`) goes through this registry, so the built-in package has no private path. The registry lives at the bottom layer
(beside the PDDL code) because the skills, the predicates and the families all consult it; it
loads packages, built-in included, by module name as any plugin is loaded, which is what lets
it sit below the skills it hands out.

The records a package is made of (`TaskPackage`, `Skill`, `Predicate`, `Family`, `ObjectType`)
are `demoforge.tasks.package_records`.

Spawned worker processes start with an empty registry: `load_package` records each spec it loaded
in the environment variable `DEMOFORGE_TASK_PACKAGES`, which children inherit and load first (Ray
workers on other machines do not inherit it: install the package there, as an entry point).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from demoforge.errors import TaskError, listing
from demoforge.fields import option
from demoforge.tasks.package_records import Family, ObjectType, Predicate, Skill, TaskPackage, TaskPackageError

ENTRY_POINT_GROUP = "demoforge.tasks"
BUILTIN = ("demoforge.taskapi.blocks",)  # modules of the packages shipped with demoforge
ENV_VAR = "DEMOFORGE_TASK_PACKAGES"  # os.pathsep-joined specs loaded so far, for spawned workers


_PACKAGES: dict[str, TaskPackage] = {}
_LOADED: list[str] = []  # specs given to load_package, in order (recorded in ENV_VAR)
_STARTED = False


def _ensure() -> None:
    """Register the built-in packages, the installed ones and those a parent process loaded, once."""
    global _STARTED
    if _STARTED:
        return
    _STARTED = True
    for module in BUILTIN:
        register(_package_of(importlib.import_module(module), module), origin="built-in",
                 source=_module_file(sys.modules[module]))
    for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.value.split(":")[0] in BUILTIN:  # this checkout's own entry point: registered above
            continue
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken plug-in is named, not a bare traceback from every command
            raise TaskPackageError(f"entry point {ep.name} = {ep.value!r} (group {ENTRY_POINT_GROUP}) failed to import: "
                                   f"{type(exc).__name__}: {exc}; fix or uninstall the distribution that declares "
                                   "it") from exc
        register(loaded if isinstance(loaded, TaskPackage) else _package_of(loaded, ep.value),
                 origin=f"entry point {ep.name} ({ep.value})",
                 source=_module_file(sys.modules.get(ep.module)))
    for spec in filter(None, os.environ.get(ENV_VAR, "").split(os.pathsep)):
        load_package(spec)


def register(package: TaskPackage, *, origin: str | None = None, source: Path | None = None) -> TaskPackage:
    """Add `package` to the registry. A package of the same name registered again (the same spec
    loaded twice) is a no-op; an operator, predicate, family or object type that another package
    already provides raises, naming both packages. `source` is the file of the module that defines
    it (what a run's provenance hashes), where the loader knows one."""
    _ensure()
    if not isinstance(package, TaskPackage):
        raise TaskPackageError(f"register() takes a demoforge.taskapi.TaskPackage, got {type(package).__name__}")
    package = dataclasses.replace(package, origin=origin or package.origin or "registered in code",
                                  source=source or package.source)
    bad = _shape_problems(package)
    if bad:
        raise TaskPackageError(f"task package {package.name!r} ({package.origin}) is malformed:" + listing(bad))
    old = _PACKAGES.get(package.name)
    if old is not None:
        if old.origin == package.origin:
            return old
        raise TaskPackageError(f"task package {package.name!r} from {package.origin} is already registered from "
                               f"{old.origin}; rename one of them")
    clashes = []
    for what, one in (("skills", "skill"), ("predicates", "predicate"), ("families", "family")):
        for key in getattr(package, what):
            for other in _PACKAGES.values():
                if key in getattr(other, what):
                    clashes.append(f"{one} {key!r} is provided by both {other.name!r} ({other.origin}) and "
                                   f"{package.name!r} ({package.origin})")
    for key, typ in package.object_types.items():
        for other in _PACKAGES.values():
            if key in other.object_types and other.object_types[key] != typ:
                clashes.append(f"object type {key!r} is built differently by {other.name!r} ({other.origin}) and "
                               f"{package.name!r} ({package.origin})")
    clashes += [f"domain file {package.domain_file()!r} is written by both {p.name!r} ({p.origin}) and "
                f"{package.name!r} ({package.origin})" for p in _PACKAGES.values() if p.domain_file() == package.domain_file()]
    if clashes:
        raise TaskPackageError(f"cannot register task package {package.name!r}:" + listing(clashes)
                               + "\nrename the clashing names in one package")
    _PACKAGES[package.name] = package
    return package


def _shape_problems(package: TaskPackage) -> list[str]:
    """Every field of `package` that is not what the factory will call, one line each."""
    out = []
    for key, skill in package.skills.items():
        if not isinstance(skill, Skill) or skill.name != key or not callable(skill.body):
            out.append(f"skills[{key!r}]: must be Skill({key!r}, params, body) with a callable body, got {skill!r:.80}")
    for key, pred in package.predicates.items():
        if not isinstance(pred, Predicate) or not callable(pred.evaluate):
            out.append(f"predicates[{key!r}]: must be Predicate(kinds, evaluate) with a callable evaluate, "
                       f"got {pred!r:.80}")
    for key, fam in package.families.items():
        if not isinstance(fam, Family) or not callable(fam.build) or not 1 <= fam.min_n <= fam.default_n:
            out.append(f"families[{key!r}]: must be Family(default_n, min_n, build) with 1 <= min_n <= default_n "
                       f"and a callable build, got {fam!r:.80}")
    for key, typ in package.object_types.items():
        if not isinstance(typ, ObjectType) or typ.name != key or not (typ.build is None or callable(typ.build)):
            out.append(f"object_types[{key!r}]: must be ObjectType({key!r}, built_as, build) with build callable or "
                       f"None, got {typ!r:.80}")
    return out


def packages() -> tuple[TaskPackage, ...]:
    """Every registered package: built-in first, then in the order registered."""
    _ensure()
    return tuple(_PACKAGES.values())


def package(name: str) -> TaskPackage:
    """The package called `name`; the error lists every package."""
    _ensure()
    if name not in _PACKAGES:
        raise TaskPackageError(f"no task package {name!r}; packages: {', '.join(_PACKAGES)} (load one with "
                               "--task-package PATH_OR_MODULE)")
    return _PACKAGES[name]


def load_package(spec: str | Path) -> TaskPackage:
    """Load and register the package of `spec`: a `.py` file or a dotted module name whose module
    defines `PACKAGE` (a TaskPackage). Loading the same spec again returns the registered one."""
    _ensure()
    text = str(spec)
    if text.endswith(".py") or os.sep in text or "/" in text:
        path = Path(text).resolve()
        if not path.is_file():
            raise TaskPackageError(f"--task-package {text!r}: no such file; give a .py file that defines PACKAGE, "
                                   "or a dotted module name")
        name = f"demoforge_task_{path.stem}_{zlib.crc32(str(path).encode()):08x}"  # the same in every process
        module = sys.modules.get(name)
        if module is None:
            loader = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(loader)
            sys.modules[name] = module
            try:
                loader.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[name]
                raise TaskPackageError(f"--task-package {text!r} failed to import: {type(exc).__name__}: {exc}; "
                                       "fix the file (demoforge --debug shows the traceback)") from exc
        found = register(_package_of(module, str(path)), origin=f"path {path}", source=path)
        key = str(path)
    else:
        try:
            module = importlib.import_module(text)
        except ModuleNotFoundError as exc:
            raise TaskPackageError(f"--task-package {text!r}: no module {exc.name!r} can be imported; give a .py "
                                   "file, or install the module") from None
        found = register(_package_of(module, text), origin=f"module {text}", source=_module_file(module))
        key = text
    if key not in _LOADED:
        _LOADED.append(key)
        os.environ[ENV_VAR] = os.pathsep.join(_LOADED)
    return found


def _package_of(module: Any, where: str) -> TaskPackage:
    found = getattr(module, "PACKAGE", None)
    if not isinstance(found, TaskPackage):
        raise TaskPackageError(f"{where}: defines no PACKAGE (a demoforge.taskapi.TaskPackage), got "
                               f"{type(found).__name__}; add `PACKAGE = TaskPackage(...)` at module level")
    return found


class _Merged(Mapping):
    """Read-only union of one field over every registered package (built lazily, so importing a
    module that exposes one loads nothing)."""

    def __init__(self, what: str, pick: Callable[[Any], Any] = lambda v: v):
        self._what, self._pick = what, pick

    def _items(self) -> dict:
        # Built on every call (a few dozen entries): nothing to invalidate when a package is added.
        _ensure()
        return {k: self._pick(v) for p in _PACKAGES.values() for k, v in getattr(p, self._what).items()}

    def __getitem__(self, key):
        return self._items()[key]

    def __iter__(self) -> Iterator:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"<{self._what} of every task package: {sorted(self._items())}>"


SKILLS: Mapping[str, Skill] = _Merged("skills")  # operator -> skill, over every package
PREDICATES: Mapping[str, Predicate] = _Merged("predicates")  # predicate -> evaluator, over every package
FAMILIES: Mapping[str, Family] = _Merged("families")  # family -> generator, over every package
OBJECT_TYPES: Mapping[str, ObjectType] = _Merged("object_types")  # PDDL type -> scene realisation, over every package


def owner(what: str, key: str) -> TaskPackage | None:
    """The package providing `key` among its `what` ("skills", "predicates", "families"), or None."""
    _ensure()
    return next((p for p in _PACKAGES.values() if key in getattr(p, what)), None)


def family(name: str) -> Family:
    """The family `name`; the error lists every family and how to add one."""
    _ensure()
    found = owner("families", name)
    if found is None:
        raise TaskPackageError(f"unknown task family {name!r}; families: {', '.join(sorted(FAMILIES))} (a family of "
                               "your own comes with its task package: --task-package PATH_OR_MODULE)")
    return found.families[name]


def domain_file_of(name: str) -> str | None:
    """The file name a domain is written under when `name` is a package name, else None."""
    _ensure()
    found = _PACKAGES.get(name)
    return None if found is None else found.domain_file()


_DOMAIN_NAMES: dict[tuple[str, str], str] = {}  # (package name, origin) -> its domain's name, parsed once


def domain_name(pkg: TaskPackage) -> str:
    """The name in `pkg`'s `(define (domain NAME))`, parsed once per registered package."""
    from demoforge.tasks.parse import parse_domain  # lazy: parse imports this module (the registry is below it)

    key = (pkg.name, pkg.origin)
    if key not in _DOMAIN_NAMES:
        _DOMAIN_NAMES[key] = str(parse_domain(pkg.domain_text(), file=pkg.domain_file()).name)
    return _DOMAIN_NAMES[key]


_PREDICATES: dict[tuple[str, str], frozenset[str]] = {}  # (package name, origin) -> its domain's predicates


def domain_predicates(pkg: TaskPackage) -> frozenset[str]:
    """The predicate names `pkg`'s domain declares, parsed once per registered package."""
    from demoforge.tasks.parse import parse_domain  # lazy: parse imports this module (the registry is below it)

    key = (pkg.name, pkg.origin)
    if key not in _PREDICATES:
        domain = parse_domain(pkg.domain_text(), file=pkg.domain_file())
        _PREDICATES[key] = frozenset(str(p.name) for p in domain.predicates)
    return _PREDICATES[key]


def package_of_domain(pddl_name: str) -> TaskPackage | None:
    """The registered package whose domain is called `pddl_name` (its `(define (domain NAME))`), or None."""
    _ensure()
    for pkg in _PACKAGES.values():
        try:
            if domain_name(pkg) == pddl_name:
                return pkg
        except TaskError:
            continue
    return None


def packages_of(task: Any) -> tuple[TaskPackage, ...]:
    """The registered packages whose code acts out `task` (a parsed `tasks.parse.Task`): the one that
    brings its domain, and the owners of its operators' skills, its fluent predicates' evaluators
    and its objects' types, in registry order."""
    _ensure()
    keys = (("skills", [a.name for a in task.domain.actions]), ("predicates", sorted(task.fluent_predicates)),
            ("object_types", sorted({t for _, t in (*task.objects, *task.constants)})))
    used = {p.name for what, names in keys for n in names if (p := owner(what, n)) is not None}
    home = package_of_domain(task.domain_name)
    if home is not None:
        used.add(home.name)
    return tuple(p for p in _PACKAGES.values() if p.name in used)


def package_identity(pkg: TaskPackage) -> dict[str, Any]:
    """What a run records of a task package it used (run.json's `task_packages`): its name, where it
    was found, and the sha256 of its domain text and of the module that defines PACKAGE (None for a
    package registered in code), so a run made with a changed package is not the same run."""
    source = pkg.source
    return {"name": pkg.name, "origin": pkg.origin,
            "domain_sha256": hashlib.sha256(pkg.domain_text().encode()).hexdigest(),
            "source_sha256": None if source is None else hashlib.sha256(source.read_bytes()).hexdigest()}


def _module_file(module: Any) -> Path | None:
    """The file a module was loaded from; None for one that has none (a namespace, a module built in code)."""
    path = getattr(module, "__file__", None)
    return Path(path) if path and Path(path).is_file() else None


def describe() -> str:
    """The registered packages in one line, for error messages: "blocks (built-in), near (path ...)"."""
    return ", ".join(f"{p.name} ({p.origin})" for p in packages())


def missing_pieces(task: Any) -> list[str]:
    """What no registered package provides for the domain of `task` (a parsed `tasks.parse.Task`):
    each operator without a skill and each fluent predicate without an evaluator, one line each
    with the fix. Static predicates need none: they are carried from the init."""
    operators = sorted(a.name for a in task.domain.actions)
    no_skill = [o for o in operators if o not in SKILLS]
    no_eval = sorted(p for p in task.fluent_predicates if p not in PREDICATES)
    where = f"{task.domain_file}"
    fix = ("write it in the task package that brings this domain and load that package (--task-package "
           f"PATH_OR_MODULE, or task_packages: in a run config); packages loaded: {describe()}")
    out = []
    if no_skill:
        out.append(f"{where}: operator(s) {no_skill} have no skill; skills: {sorted(SKILLS)}; a Skill per operator: "
                   + fix)
    out += [f"{where}: predicate {p!r} has no simulator evaluator; evaluated: {sorted(PREDICATES)}; a Predicate for "
            f"it (an action changes it, so the simulator must observe it): " + fix for p in no_eval]
    return out


def _task_packages_value(value, where: str) -> tuple[str, ...]:
    """Load each task package as the option is read, so every later field (a family's name) and
    stage sees what it brings."""
    for spec in value:
        load_package(spec)
    return tuple(value)


def task_packages_option():
    """The `task_packages` field of the stage configs (one value per run), declared first so the
    fields after it see what the packages bring."""
    return option((), "Task package to load before anything else: a .py file or a module that defines PACKAGE "
                      "(demoforge.taskapi); repeatable.", flag="--task-package", shared=True,
                  normalize=_task_packages_value, metavar="SPEC")


def family_value(value: str, where: str) -> str:
    """A family some registered task package provides; the error lists them and how to add one."""
    family(value)
    return value
