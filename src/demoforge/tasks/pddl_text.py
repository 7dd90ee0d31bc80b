"""Canonical PDDL text: one writer for every problem demoforge emits or hands a planner.

Objects are grouped by type and sorted, init atoms are sorted, so the same task always
gives the same bytes whatever order the input file or a Python set used.
"""

from collections.abc import Iterable

from pddl.logic.base import And, ExistsCondition, ForallCondition, Formula, Imply, Not, Or
from pddl.logic.predicates import EqualTo, Predicate
from pddl.logic.terms import Term, Variable

# A ground atom: predicate name then argument names, e.g. ("on", "red", "green").
Atom = tuple[str, ...]


def format_atom(atom: Atom) -> str:
    """`("on", "a", "b")` -> `(on a b)`."""
    return "(" + " ".join(atom) + ")"


def _term(term: Term) -> str:
    return f"?{term.name}" if isinstance(term, Variable) else str(term.name)


def _typed_vars(variables: Iterable[Variable]) -> str:
    parts = []
    for v in sorted(variables, key=lambda v: v.name):
        tags = sorted(v.type_tags)
        parts.append(f"?{v.name} - {tags[0]}" if tags else f"?{v.name}")
    return " ".join(parts)


def format_formula(formula: Formula) -> str:
    """PDDL text of a condition built by the `pddl` parser (operand order kept)."""
    if isinstance(formula, Predicate):
        return "(" + " ".join([formula.name, *(_term(t) for t in formula.terms)]) + ")"
    if isinstance(formula, EqualTo):
        return f"(= {_term(formula.left)} {_term(formula.right)})"
    if isinstance(formula, Not):
        return f"(not {format_formula(formula.argument)})"
    if isinstance(formula, And | Or | Imply):
        word = {And: "and", Or: "or", Imply: "imply"}[type(formula)]
        return f"({word} " + " ".join(format_formula(f) for f in formula.operands) + ")"
    if isinstance(formula, ForallCondition | ExistsCondition):
        word = "forall" if isinstance(formula, ForallCondition) else "exists"
        return f"({word} ({_typed_vars(formula.variables)}) {format_formula(formula.condition)})"
    raise TypeError(f"cannot write PDDL for {type(formula).__name__}: {formula!r}")


def problem_to_pddl(
    *,
    name: str,
    domain_name: str,
    objects: Iterable[tuple[str, str]],
    init: Iterable[Atom],
    goal: str,
    requirements: Iterable[str] = (),
) -> str:
    """Problem text from `(object, type)` pairs, init atoms and the goal's PDDL text;
    `requirements` (e.g. ":universal-preconditions") only where the goal needs them."""
    by_type: dict[str, list[str]] = {}
    for obj, typ in objects:
        by_type.setdefault(typ, []).append(obj)
    lines = [f"(define (problem {name})", f"  (:domain {domain_name})"]
    if requirements:
        lines.append(f"  (:requirements {' '.join(sorted(requirements))})")
    lines.append("  (:objects")
    for typ in sorted(by_type):
        lines.append(f"    {' '.join(sorted(by_type[typ]))} - {typ}")
    lines[-1] += ")"
    lines.append("  (:init")
    lines.extend(f"    {format_atom(a)}" for a in sorted(set(init)))
    lines[-1] += ")"
    lines.append(f"  (:goal {goal}))")
    return "\n".join(lines) + "\n"


def goal_of_atoms(atoms: Iterable[Atom]) -> str:
    """Conjunctive goal text of positive atoms, in the order given."""
    return "(and " + " ".join(format_atom(a) for a in atoms) + ")"


def strip_comments(text: str) -> str:
    """PDDL text without `;` comments (pymimir's string parser rejects a leading one)."""
    return "\n".join(line.split(";", 1)[0].rstrip() for line in text.splitlines()).strip() + "\n"
