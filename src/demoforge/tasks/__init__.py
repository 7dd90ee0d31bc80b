"""PDDL tasks: the domain library, task-family generators, parsing, planning.

Backends live in `demoforge.tasks.mimir` (MimirPlanner) and
`demoforge.tasks.fast_downward` (FastDownwardPlanner); `make_planner(name)` builds any of them
(`PLANNERS`), and `plan` chains them.
"""

from demoforge.tasks.families import FAMILIES, FamilyOptions, GeneratedTask, generate_family, static_facts, write_tasks
from demoforge.tasks.library import DOMAINS, domain_path, domain_text
from demoforge.tasks.parse import (
    Task,
    check_state,
    goal_atoms,
    load_task,
    parse_domain,
    parse_task,
    problem_text,
    with_goal,
)
from demoforge.tasks.pddl_text import Atom
from demoforge.tasks.planning import (
    PLANNERS,
    FallbackPlanner,
    Planner,
    PlanResult,
    PlanStatus,
    default_planner,
    make_planner,
    plan,
)
from demoforge.tasks.scene import (
    SIDECAR_SUFFIX, BlockLook, Region, SceneParams, scene_from_json, scene_to_json, sidecar_path,
)
from demoforge.tasks.simulate import State, Step, apply, disturbed, holds, run_plan

__all__ = [
    "goal_atoms", "make_planner", "with_goal",
    "DOMAINS", "PLANNERS", "FAMILIES", "Atom", "BlockLook", "FallbackPlanner", "FamilyOptions", "GeneratedTask",
    "PlanResult",
    "PlanStatus", "Planner", "Region", "SceneParams", "State", "Step", "Task", "apply", "check_state",
    "default_planner", "disturbed", "domain_path", "domain_text", "generate_family", "holds", "load_task",
    "parse_domain",
    "parse_task", "plan", "problem_text", "run_plan", "scene_from_json", "scene_to_json", "sidecar_path",
    "static_facts", "write_tasks", "SIDECAR_SUFFIX",
]
