"""The symbolic state of a live simulation: every true ground atom of a problem.

Per call the state is read once (`measure`) and every candidate atom is answered at once:
a binding's candidates are compiled, on first use, into index arrays per predicate, so a
tick costs a few NumPy operations whatever the number of atoms. Each predicate's evaluator
comes from the task package that provides it (`demoforge.tasks.package`); one without a
vectorized form is asked atom by atom.
The compiled form agrees with the per-atom evaluators (tests/symbolic/test_abstract.py).
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable
from typing import NamedTuple

import mujoco
import numpy as np

from demoforge.symbolic import predicates as P
from demoforge.symbolic.binding import Binding
from demoforge.symbolic.orientation import FACES, YAWS
from demoforge.tasks import package as registry
from demoforge.tasks.package_records import Predicate
from demoforge.tasks.pddl_text import Atom, format_atom

_ATOM_SETS = 4096  # distinct truth vectors remembered per binding (an episode visits a few dozen)


class _Part(NamedTuple):
    """The candidates of one predicate."""

    name: str
    ks: np.ndarray  # their positions in Binding.candidates
    args: list[tuple[str, ...]]  # their arguments
    evaluate: Callable  # the per-atom evaluator (geometry, binding, *names) -> bool
    vector: Callable | None  # (geometry, binding, at rest, *cols) -> (..., len(ks)) bool; None: atom by atom
    cols: list[np.ndarray]  # the arguments as indices (blocks, regions, FACES, YAWS; -2: unknown name)


class _Program:
    """A binding's candidate atoms as index arrays per predicate."""

    def __init__(self, binding: Binding):
        # Weakly: this program is the value of _PROGRAMS[binding], and a strong reference would keep
        # the binding, its cached constants and with them the scene's model alive for ever (the
        # UR5e's meshes: about 40 MB an episode).
        self._binding = weakref.ref(binding)
        tables = {"block": {b: i for i, b in enumerate(binding.blocks)},
                  "region": {r: i for i, r in enumerate(binding.regions)},
                  "face": {f: i for i, f in enumerate(FACES)}, "yaw": {y: i for i, y in enumerate(YAWS)}}
        by_predicate: dict[str, list[int]] = {}
        for k, atom in enumerate(binding.candidates):
            by_predicate.setdefault(atom[0], []).append(k)
        self.parts = []
        for name, ks in by_predicate.items():
            args = [binding.candidates[k][1:] for k in ks]
            pred = registry.PREDICATES[name]  # bind_symbols refused a predicate no package evaluates
            vector = pred.vector if all(kind in tables for kind in pred.kinds) else None
            cols = [np.array([tables[kind].get(a[j], -2) for a in args], dtype=np.int64)
                    for j, kind in enumerate(pred.kinds)] if vector is not None else []
            self.parts.append(_Part(name, np.array(ks), args, pred.evaluate, vector, cols))
        self._sets: dict[bytes, frozenset[Atom]] = {}

    @property
    def binding(self) -> Binding:
        return self._binding()

    def truth(self, geo: P.Geometry) -> np.ndarray:
        """(..., len(candidates)) bool for a Geometry of one state (...= ()) or of stacked states."""
        b = self.binding
        lead = geo.speed.shape[:-1]
        out = np.zeros(lead + (len(b.candidates),), bool)
        rest = geo.speed <= b.tolerances.rest_speed_mps
        for part in self.parts:
            if part.vector is not None:
                out[..., part.ks] = part.vector(geo, b, rest, *part.cols)
                continue
            for at in np.ndindex(lead):  # no vectorized form: atom by atom
                one = _unstacked(geo, at)
                out[at + (part.ks,)] = [bool(part.evaluate(one, b, *a)) for a in part.args]
        return out

    def atoms(self, truth: np.ndarray) -> frozenset[Atom]:
        key = truth.tobytes()
        found = self._sets.get(key)
        if found is None:
            if len(self._sets) >= _ATOM_SETS:
                self._sets.clear()
            cands = self.binding.candidates
            found = self._sets[key] = frozenset(self.binding.static_atoms.union(cands[k] for k in np.flatnonzero(truth)))
        return found


def _unstacked(geo: P.Geometry, at: tuple[int, ...]) -> P.Geometry:
    if not at:
        return geo
    fields = {f.name: getattr(geo, f.name) for f in dataclasses.fields(geo)}
    return P.Geometry(**{k: v if k == "names" else v[at] for k, v in fields.items()})


def _on_table(geo, b, rest, x):
    return geo.on_table_geom[..., x] & ~geo.held[..., x] & rest[..., x]


def _in_region(geo, b, rest, x, r):
    m = b.tolerances.region_margin_m
    box = b.region_box[r]
    px, py = geo.pos[..., x, 0], geo.pos[..., x, 1]
    inside = (box[:, 0] - m <= px) & (px <= box[:, 1] + m) & (box[:, 2] - m <= py) & (py <= box[:, 3] + m)
    return _on_table(geo, b, rest, x) & inside


def _code_is(codes, x, want):
    return (want >= 0) & (codes[..., x] == want)


# The blocks world's predicates (its task package, demoforge.taskapi.blocks, provides them): the
# per-atom evaluator, argument kinds, and the vectorized form over (..., atoms).
BLOCKS_PREDICATES: dict[str, Predicate] = {
    "on": Predicate(("block", "block"), P.on,
                    lambda geo, b, rest, x, y: geo.on_geom[..., x, y] & ~geo.held[..., x] & rest[..., x]),
    "on_table": Predicate(("block",), P.on_table, _on_table),
    "holding": Predicate(("block",), P.holding, lambda geo, b, rest, x: geo.held[..., x]),
    "hand_empty": Predicate((), P.hand_empty, lambda geo, b, rest: ~geo.held.any(axis=-1)[..., None]),
    "clear": Predicate(("block",), P.clear,
                       lambda geo, b, rest, x: ~geo.held[..., x] & ~geo.on_geom[..., :, x].any(axis=-2)),
    "face_up": Predicate(("block", "face"), P.face_up_is, lambda geo, b, rest, x, f: _code_is(geo.face_code, x, f),
                         kept=True),  # a block the goal does not turn over must not be knocked over
    "yaw": Predicate(("block", "yaw"), P.yaw_is, lambda geo, b, rest, x, a: _code_is(geo.yaw_code, x, a)),
    "in_region": Predicate(("block", "region"), P.in_region, _in_region),
}

_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _program(binding: Binding) -> _Program:
    prog = _PROGRAMS.get(binding)
    if prog is None:
        prog = _PROGRAMS[binding] = _Program(binding)
    return prog


def abstract_truth(model: mujoco.MjModel, data: mujoco.MjData, binding: Binding) -> np.ndarray:
    """(len(binding.candidates),) bool: which candidate atoms hold now."""
    return _program(binding).truth(P.measure(model, data, binding))


def truth_of_samples(model: mujoco.MjModel, binding: Binding, samples: P.Sample) -> np.ndarray:
    """(T, len(binding.candidates)) bool for samples stacked along a leading axis (`stack_samples`):
    the per-tick abstraction of a whole recording in one pass."""
    return _program(binding).truth(P.geometry(model, binding, samples))


def abstract(model: mujoco.MjModel, data: mujoco.MjData, binding: Binding) -> frozenset[Atom]:
    """Exactly the true atoms of the task's predicates over its objects and constants.

    Fluent predicates are evaluated on `data` (kinematics and contacts must be current, as
    after `mj_forward` or `mj_step`); static ones (adjacency tables) are the task's init
    atoms of those predicates, which no action and no physics can change. Equal states give
    the same frozenset object, so hashing it again is free."""
    prog = _program(binding)
    return prog.atoms(prog.truth(P.measure(model, data, binding)))


def abstract_per_atom(model: mujoco.MjModel, data: mujoco.MjData, binding: Binding) -> frozenset[Atom]:
    """`abstract` by asking each atom's evaluator in turn: the reference the compiled form is tested against."""
    geo = P.measure(model, data, binding)
    true = [atom for atom in binding.candidates if P.EVALUATORS[atom[0]](geo, binding, *atom[1:])]
    return frozenset(binding.static_atoms.union(true))


def disagreement(actual: frozenset[Atom], expected: frozenset[Atom]) -> str:
    """`missing ...; extra ...` in PDDL syntax, for error messages."""
    missing = " ".join(format_atom(a) for a in sorted(expected - actual)) or "none"
    extra = " ".join(format_atom(a) for a in sorted(actual - expected)) or "none"
    return f"missing {missing}; extra {extra}"
