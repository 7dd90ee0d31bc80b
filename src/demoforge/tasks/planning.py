"""The planner plug-in point, its result record, the fallback chain and the one planner factory
(`make_planner(name, **options)`, names in `PLANNERS`).

Every backend checks its plan with our symbolic simulator (`simulate.run_plan`) before
returning it, so a `SOLVED` result always carries a plan that reaches the goal from the
state it was asked about.
"""

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from demoforge.errors import PlanningError
from demoforge.tasks.parse import Task
from demoforge.tasks.simulate import State, Step, run_plan


class PlanStatus(enum.StrEnum):
    SOLVED = "solved"
    UNSOLVABLE = "unsolvable"  # the planner proved no plan exists (or exhausted a complete search)
    TIMEOUT = "timeout"  # the time budget ran out before a plan or a proof


@dataclass(frozen=True)
class PlanResult:
    """Outcome of one planning call."""

    status: PlanStatus
    plan: tuple[Step, ...] | None  # checked plan when SOLVED, else None
    planner: str  # backend that found the plan or gave the verdict
    time_s: float  # wall time of the call, loading included [s]
    detail: str = ""  # why, in words (the backend's status, the exit code, ...)
    attempts: tuple[str, ...] = ()  # "backend: status" for each backend tried, in order

    @property
    def solved(self) -> bool:
        return self.status is PlanStatus.SOLVED


class Planner(Protocol):
    """A planning backend. Unsolvable and timed-out tasks are results, not exceptions;
    `PlanningError` is for real failures (a crash, an unreadable planner output)."""

    name: str

    def plan(self, task: Task, *, state: State | None = None, time_budget_s: float) -> PlanResult:
        """Plan from `state` (a set of true atoms; default the task's init) to the goal."""
        ...


def checked(task: Task, steps: list[Step], state: State | None, planner: str, start_s: float, detail: str) -> PlanResult:
    """A SOLVED result once the plan is checked by the symbolic simulator."""
    run_plan(task, steps, state)
    elapsed = time.perf_counter() - start_s
    return PlanResult(PlanStatus.SOLVED, tuple(steps), planner, elapsed, detail, (f"{planner}: solved",))


def verdict(status: PlanStatus, planner: str, start_s: float, detail: str) -> PlanResult:
    elapsed = time.perf_counter() - start_s
    return PlanResult(status, None, planner, elapsed, detail, (f"{planner}: {status.value}",))


@dataclass
class FallbackPlanner:
    """Try `primary` within the caller's budget; if it times out (or the budget is zero),
    ask `fallback` with `fallback_budget_s`. An UNSOLVABLE verdict is final."""

    primary: Planner
    fallback: Planner
    fallback_budget_s: float = 30.0  # budget of the fallback call [s]
    name: str = "fallback"

    def plan(self, task: Task, *, state: State | None = None, time_budget_s: float) -> PlanResult:
        start = time.perf_counter()
        attempts: tuple[str, ...] = ()
        if time_budget_s > 0:
            first = self.primary.plan(task, state=state, time_budget_s=time_budget_s)
            if first.status is not PlanStatus.TIMEOUT:
                return first
            attempts = first.attempts
        else:
            attempts = (f"{self.primary.name}: skipped (zero budget)",)
        second = self.fallback.plan(task, state=state, time_budget_s=self.fallback_budget_s)
        return PlanResult(
            second.status,
            second.plan,
            second.planner,
            time.perf_counter() - start,
            second.detail,
            attempts + second.attempts,
        )


def _pymimir(**options) -> Planner:
    from demoforge.tasks.mimir import MimirPlanner

    return MimirPlanner(**options)


def _fast_downward(**options) -> Planner:
    from demoforge.tasks.fast_downward import FastDownwardPlanner

    return FastDownwardPlanner(**options)


def _fallback(*, fallback_budget_s: float = 30.0) -> Planner:
    return FallbackPlanner(_pymimir(), _fast_downward(), fallback_budget_s=fallback_budget_s)


# name -> (constructor, the keyword options it takes): every planner demoforge builds comes from here
PLANNERS: dict[str, tuple[Callable[..., Planner], tuple[str, ...]]] = {
    "pymimir": (_pymimir, ("mode", "cache_size")),  # MimirPlanner: in-process GBFS + FF
    "fast-downward": (_fast_downward, ("search",)),  # FastDownwardPlanner: lama-first as a subprocess
    "fallback": (_fallback, ("fallback_budget_s",)),  # pymimir within the caller's budget, then fast-downward
}


def make_planner(name: str = "fallback", **options) -> Planner:
    """A new planner of backend `name` (a key of `PLANNERS`) with its keyword `options`. Each call
    builds a fresh one: a backend caches the problems it loaded, so a planner shared between
    episodes would let the order they ran in change a plan."""
    if name not in PLANNERS:
        raise PlanningError(f"planner {name!r} is not one of {sorted(PLANNERS)}; pick one of those names")
    make, known = PLANNERS[name]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise PlanningError(f"planner {name!r}: unknown options {unknown}; it takes {list(known)}")
    return make(**options)


_default: Planner | None = None


def default_planner() -> Planner:
    """The process-wide pymimir -> Fast Downward chain (shared so its cache is reused)."""
    global _default
    if _default is None:
        _default = make_planner("fallback")
    return _default


def plan(task: Task, *, state: State | None = None, time_budget_s: float = 1.0) -> PlanResult:
    """Plan with the default chain: pymimir within `time_budget_s` [s], then Fast Downward."""
    return default_planner().plan(task, state=state, time_budget_s=time_budget_s)
