"""Fast Downward backend (lama-first), the fallback when pymimir runs out of budget.

Uses the translator of the `fast-downward-translate` distribution in-process (its options
are module state: one translation at a time, under a lock) and the `downward` search
binary shipped inside the `up-fast-downward` wheel as a subprocess. The wheel's Python
package imports unified_planning, so it is located with `find_spec`, never imported.
"""

import importlib.util
import io
import subprocess
import tempfile
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from demoforge.errors import PlanningError
from demoforge.tasks.parse import Task, check_state, problem_text
from demoforge.tasks.planning import PlanResult, PlanStatus, checked, verdict
from demoforge.tasks.simulate import State, Step

NAME = "fast-downward"

# The "lama-first" alias of the bundled version (driver/aliases.py); these strings
# change between Fast Downward releases, so tests run it.
LAMA_FIRST = (
    "let(hlm, eval_modify_costs(landmark_sum(lm_factory=lm_reasonable_orders_hps(lm_rhw()),pref=false),"
    "cost_type=one),let(hff, eval_modify_costs(ff(),cost_type=one),"
    "lazy_greedy([hff,hlm],preferred=[hff,hlm],cost_type=one,reopen_closed=false)))"
)
# Search exit codes (driver/returncodes.py).
_UNSOLVABLE = {10: "translator proved it unsolvable", 11: "search proved it unsolvable",
               12: "search exhausted without a plan"}
_OUT_OF_TIME = {21, 23}

_translate_lock = threading.Lock()


def downward_binary() -> Path:
    """The `downward` executable inside the installed up-fast-downward wheel."""
    spec = importlib.util.find_spec("up_fast_downward")
    if spec is None or not spec.submodule_search_locations:
        raise PlanningError("Fast Downward is not installed; install demoforge[fd] (up-fast-downward)")
    binary = Path(next(iter(spec.submodule_search_locations))) / "downward" / "builds" / "release" / "bin" / "downward"
    if not binary.is_file():
        raise PlanningError(f"up-fast-downward is installed but has no search binary at {binary}")
    return binary


def translate(domain_file: Path, problem_file: Path, sas_file: Path) -> str:
    """Run the translator in-process; returns its log."""
    try:
        from fast_downward.translate import main as translate_main
        from fast_downward.translate import options
    except ImportError as exc:
        raise PlanningError("the Fast Downward translator is missing; install demoforge[fd]") from exc
    log = io.StringIO()
    with _translate_lock, redirect_stdout(log), redirect_stderr(log):
        options.set_options([str(domain_file), str(problem_file), "--sas-file", str(sas_file)])
        try:
            translate_main.main()
        except SystemExit as exc:
            raise PlanningError(f"the Fast Downward translator exited with {exc.code}:\n{log.getvalue()[-2000:]}") from None
        except Exception as exc:  # noqa: BLE001 - the translator raises plain exceptions on bad input
            raise PlanningError(f"the Fast Downward translator failed: {exc}\n{log.getvalue()[-2000:]}") from exc
    return log.getvalue()


def _read_plan(path: Path) -> list[Step]:
    steps = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("("):
            name, *args = line.strip("()").split()
            steps.append(Step(name, tuple(args)))
    return steps


class FastDownwardPlanner:
    """Fast Downward lama-first, translator in-process, search as a subprocess."""

    name = NAME

    def __init__(self, *, search: str = LAMA_FIRST) -> None:
        self.search = search  # Fast Downward --search configuration string
        self._binary = downward_binary()

    def plan(self, task: Task, *, state: State | None = None, time_budget_s: float) -> PlanResult:
        start = time.perf_counter()
        if state is not None:
            check_state(task, state)
        if time_budget_s <= 0:
            return verdict(PlanStatus.TIMEOUT, NAME, start, "zero budget")
        with tempfile.TemporaryDirectory(prefix="demoforge-fd-") as tmp:
            folder = Path(tmp)
            (folder / "domain.pddl").write_text(task.domain_text)
            (folder / "problem.pddl").write_text(problem_text(task, init=None if state is None else frozenset(state)))
            translate(folder / "domain.pddl", folder / "problem.pddl", folder / "output.sas")
            left = time_budget_s - (time.perf_counter() - start)
            if left <= 0:
                return verdict(PlanStatus.TIMEOUT, NAME, start, f"translation used the {time_budget_s:g} s budget")
            try:
                with open(folder / "output.sas", "rb") as sas:
                    run = subprocess.run(
                        [str(self._binary), "--search", self.search, "--internal-plan-file", str(folder / "plan")],
                        stdin=sas, capture_output=True, timeout=left, cwd=folder, check=False,
                    )
            except subprocess.TimeoutExpired:
                return verdict(PlanStatus.TIMEOUT, NAME, start, f"no plan within {time_budget_s:g} s")
            if run.returncode == 0:
                return checked(task, _read_plan(folder / "plan"), state, NAME, start, "lama-first")
        if run.returncode in _UNSOLVABLE:
            return verdict(PlanStatus.UNSOLVABLE, NAME, start, _UNSOLVABLE[run.returncode])
        if run.returncode in _OUT_OF_TIME:
            return verdict(PlanStatus.TIMEOUT, NAME, start, f"no plan within {time_budget_s:g} s")
        tail = (run.stdout + run.stderr).decode(errors="replace")[-2000:]
        raise PlanningError(f"Fast Downward search on task {task.name!r} exited with {run.returncode}:\n{tail}")
