"""pymimir backend: lazy GBFS with the FF heuristic, in-process; a long plan is swapped for a
shorter one when a bounded optimal search finds one (SHORTEN_FROM, SHORTEN_STATES).

Successors are generated lifted by default: with pymimir 0.13.63 the grounded mode
returns different (valid) plans for the same input from one process to the next
(measured: 2 distinct plans over 6 runs), while lifted gave one plan in every run and
was as fast on blocks (8 blocks: 8 ms lifted, 11 ms grounded). `mode="grounded"` stays
available.

A loaded problem is cached by (domain, objects, static atoms, goal), so re-planning from
another state with the same goal builds that state from atoms on the cached problem
instead of parsing again (~ms instead of tens of ms). pymimir prepares a problem from
the init it was loaded with (in both modes a search from a state outside what that init
reaches can come back unsolvable), so such a verdict is only returned after loading the
problem afresh from the state itself.
"""

import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pymimir as mm
from pymimir.advanced.formalism import FluentGroundAtomList

from demoforge.errors import PlanningError
from demoforge.tasks.parse import Task, check_state, problem_text
from demoforge.tasks.pddl_text import Atom, strip_comments
from demoforge.tasks.planning import PlanResult, PlanStatus, checked, verdict
from demoforge.tasks.simulate import State, Step

NAME = "pymimir"
# A plan of SHORTEN_FROM steps or more is replaced by a shorter one when an optimal (blind A*)
# search finds one within SHORTEN_STATES states (a few ms; stack_three's plans are already
# shortest and its search stops at the bound).
SHORTEN_FROM = 3
SHORTEN_STATES = 500


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null: pymimir prints from C++, past sys.stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


@dataclass
class _Loaded:
    problem: mm.Problem
    heuristic: mm.FFHeuristic
    init: frozenset[Atom]  # atoms the problem was grounded from
    predicates: dict[str, object]  # fluent predicate name -> pymimir predicate
    objects: dict[str, object]  # object and constant name -> pymimir object
    known: frozenset[Atom]  # fluent atoms the problem was prepared with (grounding, heuristic)
    atoms: dict[Atom, object]  # fluent atom -> pymimir ground atom, filled as states are built


def _load(task: Task, init: frozenset[Atom], mode: str) -> _Loaded:
    try:
        with quiet_stdout():
            domain = mm.Domain(strip_comments(task.domain_text))
            problem = mm.Problem(domain, problem_text(task, init=init), mode=mode)
            heuristic = mm.FFHeuristic(problem)
    except Exception as exc:  # noqa: BLE001 - pymimir raises RuntimeError and others from C++
        raise PlanningError(f"pymimir could not load task {task.name!r} ({task.problem_file}): {exc}") from exc
    predicates = {p.get_name(): p for p in domain.get_predicates(ignore_static=True, ignore_derived=True)}
    objects = {o.get_name(): o for o in problem.get_objects()}
    objects.update({c.get_name(): mm.Object(c) for c in problem._advanced_problem.get_domain().get_constants()})
    # A state may only use atoms the problem already holds: a ground atom created after the
    # heuristic was built lies outside its tables, and searching from it crashed (SIGSEGV).
    repository = problem._advanced_problem.get_repositories()
    known = frozenset(
        (a.get_predicate().get_name(), *(o.get_name() for o in a.get_objects()))
        for a in repository.get_fluent_ground_atoms()
    )
    return _Loaded(problem, heuristic, init, predicates, objects, known, {})


def _state(loaded: _Loaded, atoms: frozenset[Atom]) -> mm.State:
    problem = loaded.problem
    ground = []
    for atom in sorted(atoms):
        if atom[0] not in loaded.predicates:
            continue
        made = loaded.atoms.get(atom)
        if made is None:
            predicate, args = loaded.predicates[atom[0]], [loaded.objects[x] for x in atom[1:]]
            made = loaded.atoms[atom] = problem.new_ground_atom(predicate, args)._advanced_ground_atom
        ground.append(made)
    repository = problem._search_context.get_state_repository()
    state, _ = repository.get_or_create_state(FluentGroundAtomList(ground), [])
    return mm.State(state, problem)


class MimirPlanner:
    """pymimir GBFS-lazy + FF. Not for concurrent use from several threads."""

    name = NAME

    def __init__(self, *, mode: str = "lifted", cache_size: int = 16) -> None:
        self.mode = mode  # pymimir successor generation: "lifted" or "grounded"
        self._cache: OrderedDict[tuple, _Loaded] = OrderedDict()
        self._cache_size = cache_size  # loaded problems kept (least recently used dropped)
        self._lock = threading.Lock()

    def plan(self, task: Task, *, state: State | None = None, time_budget_s: float) -> PlanResult:
        start = time.perf_counter()
        if state is not None:
            check_state(task, state)
        atoms = frozenset(task.init) if state is None else frozenset(state)
        statics = tuple(sorted(a for a in atoms if a[0] not in task.fluent_predicates))
        key = (task.domain_text, task.objects, statics, task.index.goal_text)
        with self._lock:
            loaded = self._cache.get(key)
            fluents = {a for a in atoms if a[0] in task.fluent_predicates}
            if loaded is not None and loaded.init != atoms and not fluents <= loaded.known:
                loaded = None
            fresh = loaded is None or loaded.init == atoms
            if loaded is None:
                loaded = self._remember(key, _load(task, atoms, self.mode))
            else:
                self._cache.move_to_end(key)
            status, steps = self._search(loaded, atoms, start, time_budget_s)
            if status in ("unsolvable", "exhausted") and not fresh:
                loaded = self._remember(key, _load(task, atoms, self.mode))
                status, steps = self._search(loaded, atoms, start, time_budget_s)
        if status == "solved":
            return checked(task, steps, state, NAME, start, "gbfs-lazy + ff, shortened by bounded A*")
        if status in ("unsolvable", "exhausted"):
            return verdict(PlanStatus.UNSOLVABLE, NAME, start, f"search {status}")
        if status in ("out_of_time", "timeout"):
            return verdict(PlanStatus.TIMEOUT, NAME, start, f"no plan within {time_budget_s:g} s")
        raise PlanningError(f"pymimir search on task {task.name!r} ({task.problem_file}) ended with status {status!r}")

    def _remember(self, key: tuple, loaded: _Loaded) -> _Loaded:
        self._cache[key] = loaded
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return loaded

    def _search(self, loaded: _Loaded, atoms: frozenset[Atom], start: float, budget_s: float) -> tuple[str, list[Step]]:
        # pymimir reads a limit under 1 ms as "no limit".
        left_ms = int((budget_s - (time.perf_counter() - start)) * 1000)
        if left_ms < 1:
            return "timeout", []
        problem = loaded.problem
        begin = problem.get_initial_state() if loaded.init == atoms else _state(loaded, atoms)
        with quiet_stdout():
            result = mm.gbfs_lazy(problem, begin, loaded.heuristic, max_time_seconds=left_ms / 1000)
            if result.status == "solved" and result.solution is not None and len(result.solution) >= SHORTEN_FROM:
                # GBFS takes the first plan it meets; where a much shorter one exists close by (two
                # rotates, not four flips, for a half turn) a small optimal search finds it.
                left_s = budget_s - (time.perf_counter() - start)
                if left_s * 1000 >= 1:
                    short = mm.astar_eager(problem, begin, mm.BlindHeuristic(problem), max_time_seconds=left_s,
                                           max_num_states=SHORTEN_STATES)
                    if short.status == "solved" and short.solution is not None \
                            and len(short.solution) < len(result.solution):
                        result = short
        if result.status != "solved" or result.solution is None:
            return str(result.status), []
        steps = [
            Step(a.get_action().get_name(), tuple(o.get_name() for o in a.get_objects())) for a in result.solution
        ]
        return "solved", steps
