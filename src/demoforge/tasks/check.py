"""Checks the `pddl` parser leaves out: every atom of a domain or problem must use a
declared predicate with its arity and types, declared objects, constants and variables.

Each check returns every problem it finds as a message `FILE[:LINE]: what; fix`, so a
caller can report them all at once.
"""

import re
from collections.abc import Iterator

from pddl.core import Domain, Problem
from pddl.logic.base import And, ExistsCondition, ForallCondition, Imply, Not, Or
from pddl.logic.effects import Forall, When
from pddl.logic.predicates import EqualTo, Predicate
from pddl.logic.terms import Constant, Variable

ROOT_TYPE = "object"


def locate(text: str, token: str, *, after: str | None = None) -> int | None:
    """1-based line of the first whole-word `token` in `text` (after `after` if given)."""
    start = 0
    if after is not None:
        found = text.find(after)
        start = found if found >= 0 else 0
    match = re.search(rf"(?<![\w\-?]){re.escape(token)}(?![\w\-])", text[start:])
    if match is None:
        return None
    return text.count("\n", 0, start + match.start()) + 1


def where(file: str, text: str, token: str, *, after: str | None = None) -> str:
    line = locate(text, token, after=after)
    return f"{file}:{line}" if line is not None else file


def type_of(tags: frozenset[str] | set[str]) -> str:
    return str(sorted(tags)[0]) if tags else ROOT_TYPE


def is_subtype(domain: Domain, sub: str, sup: str) -> bool:
    """Whether type `sub` is `sup` or below it in the domain's type hierarchy."""
    seen = set()
    current: str | None = sub
    while current is not None and current not in seen:
        if current == sup or sup == ROOT_TYPE:
            return True
        seen.add(current)
        parent = domain.types.get(current)
        current = str(parent) if parent is not None else None
    return False


def signatures(domain: Domain) -> dict[str, tuple[str, ...]]:
    """Predicate name -> parameter types."""
    return {
        str(p.name): tuple(type_of(t.type_tags) for t in p.terms)
        for p in sorted(domain.predicates, key=lambda p: p.name)
    }


def atoms_in(node: object) -> Iterator[tuple[Predicate | EqualTo, frozenset[str]]]:
    """Every atom in a condition or effect, with the variables quantified around it."""
    yield from _walk(node, frozenset())


def changed_atoms(effect: object) -> Iterator[Predicate]:
    """The atoms an effect adds or deletes (a conditional effect's condition only reads)."""
    for atom, _ in _walk(effect, frozenset(), effects=True):
        if isinstance(atom, Predicate):
            yield atom


def _walk(node: object, bound: frozenset[str], *, effects: bool = False) -> Iterator[tuple[Predicate | EqualTo, frozenset[str]]]:
    if node is None:
        return
    if isinstance(node, Predicate | EqualTo):
        yield node, bound
    elif isinstance(node, Not):
        yield from _walk(node.argument, bound, effects=effects)
    elif isinstance(node, And | Or | Imply):
        for operand in node.operands:
            yield from _walk(operand, bound, effects=effects)
    elif isinstance(node, ForallCondition | ExistsCondition):
        yield from _walk(node.condition, bound | {v.name for v in node.variables}, effects=effects)
    elif isinstance(node, Forall):
        yield from _walk(node.effect, bound | {v.name for v in node.variables}, effects=effects)
    elif isinstance(node, When):
        if not effects:
            yield from _walk(node.condition, bound)
        yield from _walk(node.effect, bound, effects=effects)
    else:
        raise TypeError(f"unexpected PDDL node {type(node).__name__}: {node!r}")


def check_domain(domain: Domain, text: str, file: str) -> list[str]:
    """Problems in the actions of a parsed domain (predicates, arity, variables)."""
    sigs = signatures(domain)
    declared = ", ".join(sigs)
    problems = []
    for action in sorted(domain.actions, key=lambda a: a.name):
        params = {v.name: type_of(v.type_tags) for v in action.parameters}
        anchor = f"(:action {action.name}"
        for part, formula in (("precondition", action.precondition), ("effect", action.effect)):
            for atom, bound in atoms_in(formula):
                for term in atom.terms if isinstance(atom, Predicate) else (atom.left, atom.right):
                    if isinstance(term, Variable) and term.name not in params and term.name not in bound:
                        at = where(file, text, f"?{term.name}", after=anchor)
                        problems.append(
                            f"{at}: action {action.name!r} {part} uses undeclared variable ?{term.name}; "
                            f"declare it in :parameters ({', '.join('?' + p for p in params)})"
                        )
                if not isinstance(atom, Predicate):
                    continue
                at = where(file, text, atom.name, after=anchor)
                if atom.name not in sigs:
                    problems.append(
                        f"{at}: action {action.name!r} {part} uses unknown predicate {atom.name!r}; "
                        f"declared predicates: {declared}"
                    )
                elif len(atom.terms) != len(sigs[atom.name]):
                    problems.append(
                        f"{at}: action {action.name!r} {part}: ({atom.name} ...) takes "
                        f"{len(sigs[atom.name])} argument(s), got {len(atom.terms)}"
                    )
    return problems


def _domain_hint(name: str) -> str:
    """"; pass --domain P" when a registered task package P has the domain called `name`."""
    from demoforge.tasks.package import package_of_domain  # lazy: the registry parses domains with this module

    pkg = package_of_domain(name)
    return "" if pkg is None else f"; task package {pkg.name!r} ({pkg.origin}) has that domain: pass --domain {pkg.name}"


def check_problem(domain: Domain, problem: Problem, text: str, file: str) -> list[str]:
    """Problems of a parsed problem against its domain: names, types, arities."""
    # One function: one pass over the problem's objects and atoms that reports every problem at once;
    # the per-atom checks share the name and signature tables built before the loop.
    problems = []
    if problem.domain_name != domain.name:
        problems.append(
            f"{where(file, text, str(problem.domain_name))}: problem is for domain "
            f"{problem.domain_name!r} but the domain given is {domain.name!r}{_domain_hint(str(problem.domain_name))}"
        )
    known_types = {ROOT_TYPE, *map(str, domain.types)}
    constants = {c.name: type_of(c.type_tags) for c in domain.constants}
    objects: dict[str, str] = {}
    for obj in sorted(problem.objects, key=lambda o: o.name):
        typ = type_of(obj.type_tags)
        objects[obj.name] = typ
        if typ not in known_types:
            problems.append(
                f"{where(file, text, typ, after='(:objects')}: object {obj.name!r} has unknown type "
                f"{typ!r}; the domain declares: {', '.join(sorted(known_types))}"
            )
        if obj.name in constants:
            problems.append(
                f"{where(file, text, obj.name, after='(:objects')}: object {obj.name!r} is already a "
                f"constant of domain {domain.name!r}; rename it"
            )
    names = {**constants, **objects}
    sigs = signatures(domain)
    init_atoms = sorted(problem.init, key=lambda a: (getattr(a, "name", ""), str(a)))
    sections = [(":init", "(:init", a, frozenset()) for a in init_atoms]
    sections += [(":goal", "(:goal", a, b) for a, b in atoms_in(problem.goal)]
    for section, anchor, atom, bound in sections:
        if not isinstance(atom, Predicate | EqualTo):
            problems.append(f"{file}: {section} holds {atom!r}; only atoms are allowed there")
            continue
        terms = atom.terms if isinstance(atom, Predicate) else (atom.left, atom.right)
        shown = f"({atom.name} {' '.join(t.name for t in terms)})" if isinstance(atom, Predicate) else str(atom)
        for term in terms:
            if isinstance(term, Constant) and term.name not in names:
                problems.append(
                    f"{where(file, text, term.name, after=anchor)}: {section} atom {shown} mentions "
                    f"undeclared object {term.name!r}; declare it in :objects"
                )
            elif isinstance(term, Variable) and term.name not in bound:
                problems.append(f"{where(file, text, '?' + term.name, after=anchor)}: {section} uses "
                                f"unbound variable ?{term.name}")
        if not isinstance(atom, Predicate):
            continue
        at = where(file, text, atom.name, after=anchor)
        if atom.name not in sigs:
            problems.append(
                f"{at}: {section} atom {shown} uses unknown predicate {atom.name!r}; "
                f"the domain declares: {', '.join(sigs)}"
            )
            continue
        expected = sigs[atom.name]
        if len(terms) != len(expected):
            problems.append(
                f"{at}: {section} atom {shown} has {len(terms)} argument(s); "
                f"{atom.name} takes {len(expected)} ({' '.join(expected)})"
            )
            continue
        for term, want in zip(terms, expected, strict=True):
            have = names.get(term.name) if isinstance(term, Constant) else None
            if have is not None and have in known_types and not is_subtype(domain, have, want):
                problems.append(
                    f"{at}: {section} atom {shown}: {term.name!r} is a {have}, {atom.name} expects a {want}"
                )
    return problems
