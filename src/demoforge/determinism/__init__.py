"""Determinism checks for the plug-in points, in the spirit of Gymnasium's `check_env`.

    from demoforge.determinism import check_task_family, check_skill, check_planner, check_policy
    check_task_family("pnp")                                   # or a callable (count=, seed=, **options)
    check_skill("put-down", fixture, ["red"])                  # fixture: () -> SkillContext, a fresh scene
    check_planner("pymimir", "tasks/pnp-all-0000.pddl")        # or a factory () -> Planner
    check_policy("expert", "tasks/pnp-all-0000.pddl")          # or a factory () -> Policy

Each runs the plug-in twice from one seed in fresh objects (the second time after reseeding
Python's `random` and NumPy's global generator) and compares the outputs exactly; checks that it
neither consumes nor reads global random state, that another seed changes what it draws, and that
it leaves its inputs alone. A failure raises `DeterminismError` naming the plug-in, the first
difference and the fix; a pass returns a `CheckReport`.
"""

from demoforge.determinism.core import CheckReport, DeterminismError, DeterminismWarning, first_difference
from demoforge.determinism.planner import check_planner
from demoforge.determinism.policy import check_policy
from demoforge.determinism.skill import check_skill
from demoforge.determinism.task import check_reset_state, check_task_family

__all__ = [
    "CheckReport", "DeterminismError", "DeterminismWarning", "check_planner", "check_policy", "check_reset_state",
    "check_skill", "check_task_family", "first_difference",
]
