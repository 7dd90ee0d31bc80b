"""Our own symbolic simulation of a domain's operators, used to check every plan.

Preconditions may use negation, equality, or/imply and quantifiers; effects may be
conditional (`when`) and universal (`forall`). Conditions of an action are read in the
state before it, deletes apply before adds (PDDL semantics), and every step's arguments
must name declared objects of the parameter types.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import product

from pddl.logic.base import And, ExistsCondition, ForallCondition, Imply, Not, Or
from pddl.logic.effects import Forall, When
from pddl.logic.predicates import EqualTo, Predicate
from pddl.logic.terms import Variable

from demoforge.errors import PlanningError
from demoforge.tasks.parse import Task
from demoforge.tasks.pddl_text import Atom, format_atom
from demoforge.tasks.check import is_subtype, type_of

State = frozenset[Atom]


@dataclass(frozen=True)
class Step:
    """One ground action of a plan."""

    action: str  # operator name, e.g. "stack"
    args: tuple[str, ...]  # object names bound to its parameters, in order

    def __str__(self) -> str:
        return format_atom((self.action, *self.args))


def _objects_of_type(task: Task, typ: str) -> tuple[str, ...]:
    return task.index.of_type.get(typ, ())


def _ground(term, binding: Mapping[str, str]) -> str:
    return binding[str(term.name)] if isinstance(term, Variable) else str(term.name)


def _bindings(task: Task, variables, binding: Mapping[str, str]) -> Iterable[dict[str, str]]:
    variables = sorted(variables, key=lambda v: v.name)
    choices = [_objects_of_type(task, type_of(v.type_tags)) for v in variables]
    for values in product(*choices):
        yield {**binding, **{str(v.name): o for v, o in zip(variables, values, strict=True)}}


def holds(task: Task, formula, state: State, binding: Mapping[str, str] | None = None) -> bool:
    """Whether a condition holds in `state` under a variable binding."""
    binding = binding or {}
    if formula is None:
        return True
    if isinstance(formula, Predicate):
        return (str(formula.name), *(_ground(t, binding) for t in formula.terms)) in state
    if isinstance(formula, EqualTo):
        return _ground(formula.left, binding) == _ground(formula.right, binding)
    if isinstance(formula, Not):
        return not holds(task, formula.argument, state, binding)
    if isinstance(formula, And):
        return all(holds(task, f, state, binding) for f in formula.operands)
    if isinstance(formula, Or):
        return any(holds(task, f, state, binding) for f in formula.operands)
    if isinstance(formula, Imply):
        *premises, conclusion = formula.operands
        return not all(holds(task, f, state, binding) for f in premises) or holds(task, conclusion, state, binding)
    if isinstance(formula, ForallCondition):
        return all(holds(task, formula.condition, state, b) for b in _bindings(task, formula.variables, binding))
    if isinstance(formula, ExistsCondition):
        return any(holds(task, formula.condition, state, b) for b in _bindings(task, formula.variables, binding))
    raise PlanningError(f"the symbolic simulator cannot evaluate {type(formula).__name__}: {formula!r}")


def disturbed(task: Task, start: State, now: State) -> tuple[Atom, ...]:
    """The atoms of kept predicates (`Predicate.kept` of the task packages: the blocks world's
    face_up) that held in `start` and have given way in `now` to another atom of the same predicate
    and object, for objects the goal sets no atom of that predicate of: a block knocked over onto
    another face when the goal does not flip it. An object that shows none of them now (held,
    tilted) is not judged. Sorted; () when nothing was disturbed."""
    from demoforge.tasks.package import PREDICATES  # the registry: every package's predicates

    kept = {name for name in {a[0] for a in start} if name in PREDICATES and PREDICATES[name].kept}
    if not kept:
        return ()
    asked = _goal_subjects(task.goal, kept)
    out = []
    for atom in start:
        if atom[0] not in kept or len(atom) < 2 or atom in now or (atom[0], atom[1]) in asked or \
                (atom[0], None) in asked:
            continue
        if any(a[0] == atom[0] and len(a) > 1 and a[1] == atom[1] for a in now):
            out.append(atom)
    return tuple(sorted(out))


def _goal_subjects(formula, names: set[str]) -> set[tuple[str, str | None]]:
    """(predicate, first argument) of every atom of `names` the goal mentions; (predicate, None)
    when its first argument is a variable (a quantified goal: every object counts as asked)."""
    found: set[tuple[str, str | None]] = set()
    if isinstance(formula, Predicate):
        if str(formula.name) in names and formula.terms:
            first = formula.terms[0]
            found.add((str(formula.name), None if isinstance(first, Variable) else str(first.name)))
    elif isinstance(formula, Not):
        found |= _goal_subjects(formula.argument, names)
    elif isinstance(formula, (And, Or, Imply)):
        for part in formula.operands:
            found |= _goal_subjects(part, names)
    elif isinstance(formula, (ForallCondition, ExistsCondition)):
        found |= _goal_subjects(formula.condition, names)
    return found


def _effects(task: Task, effect, state: State, binding: Mapping[str, str], adds: set, dels: set) -> None:
    if effect is None:
        return
    if isinstance(effect, Predicate):
        adds.add((str(effect.name), *(_ground(t, binding) for t in effect.terms)))
    elif isinstance(effect, Not) and isinstance(effect.argument, Predicate):
        atom = effect.argument
        dels.add((str(atom.name), *(_ground(t, binding) for t in atom.terms)))
    elif isinstance(effect, And):
        for part in effect.operands:
            _effects(task, part, state, binding, adds, dels)
    elif isinstance(effect, When):
        if holds(task, effect.condition, state, binding):
            _effects(task, effect.effect, state, binding, adds, dels)
    elif isinstance(effect, Forall):
        for b in _bindings(task, effect.variables, binding):
            _effects(task, effect.effect, state, b, adds, dels)
    else:
        raise PlanningError(f"the symbolic simulator cannot apply effect {type(effect).__name__}: {effect!r}")


def _bind(task: Task, step: Step) -> tuple[object, dict[str, str]]:
    actions = task.index.actions
    action = actions.get(step.action)
    if action is None:
        raise PlanningError(f"step {step}: unknown action {step.action!r}; the domain has: {', '.join(sorted(actions))}")
    params = list(action.parameters)
    if len(params) != len(step.args):
        raise PlanningError(f"step {step}: {step.action} takes {len(params)} argument(s), got {len(step.args)}")
    types = task.index.object_types
    for param, arg in zip(params, step.args, strict=True):
        want = type_of(param.type_tags)
        if arg not in types or not is_subtype(task.domain, types[arg], want):
            raise PlanningError(f"step {step}: argument {arg!r} is not a declared {want}")
    return action, {str(p.name): a for p, a in zip(params, step.args, strict=True)}


def apply(task: Task, state: State, step: Step) -> State:
    """State after `step`; `PlanningError` if it is not applicable in `state`."""
    action, binding = _bind(task, step)
    if not holds(task, action.precondition, state, binding):
        raise PlanningError(f"step {step} is not applicable: its precondition fails in state {_show(task, state)}")
    adds: set[Atom] = set()
    dels: set[Atom] = set()
    _effects(task, action.effect, state, binding, adds, dels)
    return frozenset((state - dels) | adds)


def run_plan(task: Task, plan: Iterable[Step], state: State | None = None) -> State:
    """Apply a plan from `state` (default: the task's init), check it reaches the goal,
    and return the final state; `PlanningError` names the first bad step."""
    current = frozenset(task.init) if state is None else frozenset(state)
    for index, step in enumerate(plan):
        try:
            current = apply(task, current, step)
        except PlanningError as exc:
            raise PlanningError(f"plan for {task.name!r} fails at step {index}: {exc}") from None
    if not holds(task, task.goal, current):
        raise PlanningError(f"plan for {task.name!r} ends without reaching the goal; final state {_show(task, current)}")
    return current


def _show(task: Task, state: State) -> str:
    """The changing part of a state: static atoms (adjacency tables, ...) left out."""
    return " ".join(format_atom(a) for a in sorted(state) if a[0] in task.fluent_predicates)
