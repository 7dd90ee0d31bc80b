"""The symbolic state of a live simulation: every true ground atom of a problem."""

from __future__ import annotations

import mujoco

from demoforge.symbolic.binding import Binding
from demoforge.symbolic.predicates import EVALUATORS, measure
from demoforge.tasks.pddl_text import Atom, format_atom


def abstract(model: mujoco.MjModel, data: mujoco.MjData, binding: Binding) -> frozenset[Atom]:
    """Exactly the true atoms of the task's predicates over its objects and constants.

    Fluent predicates are evaluated on `data` (kinematics and contacts must be current, as
    after `mj_forward` or `mj_step`); static ones (adjacency tables) are the task's init
    atoms of those predicates, which no action and no physics can change."""
    geo = measure(model, data, binding)
    true = [atom for atom in binding.candidates if EVALUATORS[atom[0]](geo, binding, *atom[1:])]
    return frozenset(binding.static_atoms.union(true))


def disagreement(actual: frozenset[Atom], expected: frozenset[Atom]) -> str:
    """`missing ...; extra ...` in PDDL syntax, for error messages."""
    missing = " ".join(format_atom(a) for a in sorted(expected - actual)) or "none"
    extra = " ".join(format_atom(a) for a in sorted(actual - expected)) or "none"
    return f"missing {missing}; extra {extra}"
