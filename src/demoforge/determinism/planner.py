"""Checks of the planner plug-in point: a `PLANNERS` name or a factory of `Planner`s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from demoforge.determinism.core import CheckReport, DeterminismError, Harness, fail, first_difference
from demoforge.tasks import PLANNERS, Planner, PlanResult, PlanStatus, Task, load_task, make_planner, problem_text
from demoforge.tasks.simulate import State


def _factory(planner: str | Callable[[], Planner]) -> tuple[str, Callable[[], Planner]]:
    if isinstance(planner, str):
        if planner not in PLANNERS:
            raise DeterminismError(f"planner {planner!r} is not one of {sorted(PLANNERS)}; pass a name of PLANNERS "
                                   "or a factory () -> Planner")
        return f"planner {planner!r}", lambda: make_planner(planner)
    if hasattr(planner, "plan") and not isinstance(planner, type):
        raise DeterminismError(f"check_planner needs a factory, got the planner {planner!r}: a planner caches what "
                               "it loaded, so each run needs a new one; pass e.g. `lambda: MyPlanner()`")
    if not callable(planner):
        raise DeterminismError(f"cannot check {planner!r} as a planner: pass a name of PLANNERS or a factory")
    return f"planner {getattr(planner, '__name__', repr(planner))}", planner


def _record(result: PlanResult) -> dict:
    """What a planning call decides (its wall time left out)."""
    return {"status": result.status, "plan": result.plan, "planner": result.planner, "detail": result.detail,
            "attempts": result.attempts}


def _inputs(task: Task, state: State | None) -> dict:
    return {"problem": problem_text(task), "init": task.init, "domain": task.domain_text,
            "state": None if state is None else sorted(state)}


def check_planner(planner: str | Callable[[], Planner], task: Task | str | Path, *, state: State | None = None,
                  time_budget_s: float = 10.0, domain: str = "blocks") -> CheckReport:
    """Plan `task` (a parsed Task, or a problem file of `domain`) from `state` (default its init)
    with a new planner from `planner` (a key of `PLANNERS`, or a factory) twice, and once more
    with the first planner object: the verdicts and plans must be identical. A timeout is an
    error here: a budget that runs out cannot show determinism; raise `time_budget_s` [s]."""
    plugin, make = _factory(planner)
    if not isinstance(task, Task):
        task = load_task(task, domain)
    given = _inputs(task, state)
    made: list[Planner] = []

    def run(_seed: int) -> dict:
        p = make()
        made.append(p)
        result = p.plan(task, state=state, time_budget_s=time_budget_s)
        if result.status is PlanStatus.TIMEOUT:
            raise fail(plugin, f"it timed out on {task.name!r} within {time_budget_s:g} s ({result.detail})",
                       "raise time_budget_s, or check on a smaller problem")
        return _record(result)

    harness = Harness(f"{plugin} on {task.name}", run)
    first = harness.same_seed(0)
    harness.runs += 1
    again = _record(made[0].plan(task, state=state, time_budget_s=time_budget_s))
    harness.unchanged("task and state", given, _inputs(task, state))
    diff = first_difference(first, again)
    if diff is not None:
        raise fail(plugin, f"a second call on the same planner object gave another result: {diff}",
                   "keep caches from changing the result: a cached problem must plan as a freshly loaded one")
    harness.passed.append("a second call on the same planner object gives the same result")
    harness.notes.append("planners take no seed: the contract is the same plan for the same task and state")
    return harness.report()
