"""Parse PDDL domains and problems with `pddl` into a sorted, validated `Task`.

The `pddl` parsers cost ~100 ms to build and ~3 ms to reuse, so one of each is kept per
process (behind a lock: they are stateful). A parser that raised is left in a broken
state, so it is rebuilt after every failure.
"""

import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pddl.core import Domain, Problem
from pddl.logic.base import And, Formula
from pddl.logic.predicates import Predicate
from pddl.parser.domain import DomainParser, _extend_domain_requirements
from pddl.parser.problem import ProblemParser

from demoforge.errors import TaskError, listing
from demoforge.tasks import library
from demoforge.tasks.pddl_text import Atom, format_atom, format_formula, problem_to_pddl
from demoforge.tasks.check import ROOT_TYPE, changed_atoms, check_domain, check_problem, is_subtype, locate, signatures, type_of


@dataclass(frozen=True)
class TaskIndex:
    """Lookups derived once per task, so simulation and state checks stay cheap."""

    signatures: dict[str, tuple[str, ...]]  # predicate -> parameter types
    object_types: dict[str, str]  # object or constant name -> its type
    of_type: dict[str, tuple[str, ...]]  # type -> names of that type or below, sorted
    actions: dict[str, object]  # action name -> `pddl` action
    goal_text: str  # the goal as canonical PDDL text
    requirements: tuple[str, ...]  # the problem's own :requirements, e.g. (":equality",)


@dataclass(frozen=True)
class Task:
    """A parsed, checked planning task; everything that came from a set is sorted."""

    name: str  # problem name
    domain_name: str  # name in the domain's (define (domain ...))
    domain_file: str  # where the domain text came from (path, or library:<name>)
    problem_file: str  # where the problem text came from
    domain_text: str  # domain PDDL exactly as read
    objects: tuple[tuple[str, str], ...]  # (name, type) of the problem's objects, by name
    constants: tuple[tuple[str, str], ...]  # (name, type) of the domain's constants, by name
    init: tuple[Atom, ...]  # initial atoms, sorted
    goal: Formula  # goal condition as parsed by `pddl`
    fluent_predicates: frozenset[str]  # predicates some action changes; the rest are static
    domain: Domain  # `pddl`'s domain, read by the symbolic simulator
    problem: Problem  # `pddl`'s problem
    index: TaskIndex = field(compare=False, repr=False)  # derived lookups


def goal_atoms(task: Task) -> list[Atom]:
    """The goal's atoms when it is a conjunction of atoms (in the goal's order), else []."""
    goal = task.goal
    parts = goal.operands if isinstance(goal, And) else (goal,)
    if not all(isinstance(p, Predicate) for p in parts):
        return []
    return [(str(p.name), *(str(t.name) for t in p.terms)) for p in parts]


_lock = threading.Lock()
_parsers: dict[str, DomainParser | ProblemParser] = {}
_domains: dict[str, Domain] = {}  # domain text -> checked domain


def _parse(kind: str, text: str, file: str, domain: Domain | None = None) -> Domain | Problem:
    with _lock:
        parser = _parsers.get(kind)
        if parser is None:
            parser = _parsers[kind] = DomainParser() if kind == "domain" else ProblemParser()
        if domain is not None:
            # pddl 0.5.1 checks a goal's (= ...) and (forall ...) against requirements its
            # problem parser never sets; give it the domain's, as PDDL intends.
            inner = getattr(getattr(parser, "_transformer", None), "_domain_transformer", None)
            if inner is not None:
                inner._extended_requirements = _extend_domain_requirements(set(domain.requirements))
        limit = getattr(sys, "tracebacklimit", None)
        try:
            return parser(text)
        except Exception as exc:  # noqa: BLE001 - lark and pddl raise many unrelated types
            del _parsers[kind]
            raise TaskError(_parse_message(exc, text, file, kind)) from exc
        finally:  # pddl 0.5 sets sys.tracebacklimit = 0 and leaves it there when a parse fails
            if limit is None:
                sys.__dict__.pop("tracebacklimit", None)
            else:
                sys.tracebacklimit = limit


def _parse_message(exc: Exception, text: str, file: str, kind: str) -> str:
    line = getattr(exc, "line", None)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if not isinstance(line, int) or line < 1:
        quoted = re.search(r"'([^'\s]+)'", message)
        line = locate(text, quoted.group(1)) if quoted else None
    at = f"{file}:{line}" if line else file
    return f"{at}: invalid PDDL {kind}: {message}"


def _read(path: Path, kind: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskError(f"cannot read PDDL {kind} {str(path)!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise TaskError(f"PDDL {kind} {str(path)!r} is not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} "
                        f"at offset {exc.start}); save it as UTF-8") from None


def parse_domain(text: str, *, file: str = "<domain>") -> Domain:
    """Parse and check a domain; identical texts are parsed once per process."""
    cached = _domains.get(text)
    if cached is not None:
        return cached
    domain = _parse("domain", text, file)
    problems = check_domain(domain, text, file)
    if problems:
        raise TaskError(f"{len(problems)} problem(s) in PDDL domain:" + listing(problems, indent=""))
    _domains[text] = domain
    return domain


def _fluents(domain: Domain) -> frozenset[str]:
    return frozenset(str(atom.name) for action in domain.actions for atom in changed_atoms(action.effect))


def _atom(predicate) -> Atom:
    return (str(predicate.name), *(str(t.name) for t in predicate.terms))


def parse_task(
    problem_text: str,
    *,
    domain_text: str,
    problem_file: str = "<problem>",
    domain_file: str = "<domain>",
) -> Task:
    """Parse a problem against its domain and check every name, type and arity."""
    domain = parse_domain(domain_text, file=domain_file)
    problem = _parse("problem", problem_text, problem_file, domain)
    problems = check_problem(domain, problem, problem_text, problem_file)
    if problems:
        raise TaskError(f"{len(problems)} problem(s) in PDDL problem:" + listing(problems, indent=""))
    objects = tuple(sorted((str(o.name), type_of(o.type_tags)) for o in problem.objects))
    constants = tuple(sorted((str(c.name), type_of(c.type_tags)) for c in domain.constants))
    every = sorted((*objects, *constants))
    types = {ROOT_TYPE, *map(str, domain.types)}
    index = TaskIndex(
        signatures=signatures(domain),
        object_types=dict(every),
        of_type={t: tuple(n for n, nt in every if is_subtype(domain, nt, t)) for t in sorted(types)},
        actions={str(a.name): a for a in sorted(domain.actions, key=lambda a: a.name)},
        goal_text=format_formula(problem.goal),
        requirements=tuple(sorted(str(r) for r in problem.requirements)),
    )
    return Task(
        name=str(problem.name),
        domain_name=str(domain.name),
        domain_file=domain_file,
        problem_file=problem_file,
        domain_text=domain_text,
        objects=objects,
        constants=constants,
        init=tuple(sorted(_atom(a) for a in problem.init)),
        goal=problem.goal,
        fluent_predicates=_fluents(domain),
        domain=domain,
        problem=problem,
        index=index,
    )


MAX_NAME = 120  # a problem's name names its shard folders and scene files (file names end at 255 bytes)
SAFE_NAME = re.compile(rf"[A-Za-z0-9_][A-Za-z0-9_.\-]{{0,{MAX_NAME - 1}}}")


def name_problem(name: str, source: str) -> str | None:
    """Why `name` (a problem's name, from file `source`) cannot name demoforge's files, or None.
    Valid PDDL may still be refused here: a name over MAX_NAME characters."""
    if SAFE_NAME.fullmatch(name):
        return None
    return (f"{source}: problem name {name[:60]!r}{'...' if len(name) > 60 else ''} ({len(name)} characters) must be "
            f"1-{MAX_NAME} letters, digits, '-', '_' or '.' (it names files); rename the problem in its "
            "(define (problem NAME) ...)")


def load_task(problem: str | Path, domain: str | Path = "blocks") -> Task:
    """Load a problem file; `domain` is a library name (`library.DOMAINS`) or a file."""
    problem_path = Path(problem)
    if isinstance(domain, str) and (domain in library.DOMAINS or (
            not Path(domain).exists() and Path(domain).name == domain and "." not in domain)):
        # a library name; a bare name that is no file is one whose task package was not loaded (the library says)
        domain_file, domain_text = f"library:{domain}", library.domain_text(domain)
    else:
        domain_file, domain_text = str(domain), _read(Path(domain), "domain")
    return parse_task(
        _read(problem_path, "problem"),
        domain_text=domain_text,
        problem_file=str(problem_path),
        domain_file=domain_file,
    )


def problem_text(task: Task, *, init: tuple[Atom, ...] | frozenset[Atom] | None = None) -> str:
    """Canonical problem text of `task`, optionally from another initial state."""
    return problem_to_pddl(
        name=task.name,
        domain_name=task.domain_name,
        objects=task.objects,
        init=task.init if init is None else init,
        goal=task.index.goal_text,
        requirements=task.index.requirements,
    )


def with_goal(task: Task, atoms: list[Atom] | tuple[Atom, ...]) -> Task:
    """`task` (same domain, objects and init) with the conjunction of `atoms` as its goal."""
    text = "(and " + " ".join(format_atom(a) for a in atoms) + ")"
    pddl = problem_to_pddl(name=task.name, domain_name=task.domain_name, objects=task.objects, init=task.init,
                           goal=text, requirements=task.index.requirements)
    return parse_task(pddl, domain_text=task.domain_text, problem_file=task.problem_file,
                      domain_file=task.domain_file)


def check_state(task: Task, state: frozenset[Atom] | set[Atom], *, what: str = "state") -> None:
    """Raise `TaskError` listing every atom of `state` the task cannot hold."""
    sigs = task.index.signatures
    names = task.index.object_types
    problems = []
    for atom in sorted(state):
        if atom and atom[0] in sigs and len(atom) - 1 == len(sigs[atom[0]]) and all(a in names for a in atom[1:]):
            continue
        if not atom or atom[0] not in sigs:
            problems.append(f"{atom!r}: unknown predicate; the domain declares: {', '.join(sigs)}")
        elif len(atom) - 1 != len(sigs[atom[0]]):
            problems.append(f"{atom!r}: {atom[0]} takes {len(sigs[atom[0]])} argument(s)")
        else:
            problems += [f"{atom!r}: undeclared object {a!r}" for a in atom[1:] if a not in names]
    if problems:
        raise TaskError(f"{what} for task {task.name!r} ({task.problem_file}) is invalid:"
                        + listing(problems, indent=""))

