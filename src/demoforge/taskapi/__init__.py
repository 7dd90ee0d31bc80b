"""The public task API: write a task package against this module alone.

A task package is a PDDL domain plus what acts it out in MuJoCo (see `demoforge.tasks.package`):

    from demoforge import taskapi as T

    PACKAGE = T.TaskPackage(
        name="near", domain=Path(__file__).with_name("near.pddl"),
        skills={"place-near": T.Skill("place-near", ("?x", "?y"), place_near)},
        predicates={"near": T.Predicate(("block", "block"), near)},
        families={"near_pair": T.Family(2, 2, build)},
    )

and is found by `--task-package path/to/file.py` (or a module name; `task_packages:` in a run
config), or by an entry point in the group `demoforge.tasks` of an installed distribution.
`examples/tasks/near/` is a worked example.

What the pieces receive:

- a skill body `(builder: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan` plans the
  whole operator from the live state `builder.ctx` (open loop, drawing only from `builder.rng`) and
  ends with `builder.plan(operator, args, params, target_pose)`; an infeasible step raises
  `Infeasible(SkillFailure(kind, phase, message))`. The motion tools below are what the blocks
  skills are made of: the builder's moves (`move`, `line`, `hold`: IK seeded from the arm, OMPL
  transits around obstacles, jerk-limited timing by ruckig), pick's grasp search
  (`top_down_candidates`, `grasp`, `carry_z`), place's placements (`place_on`, `free_spot`,
  `other_footprints`), and the block geometry helpers (`geometry`: `block`, `footprint_radius`, ...).
- a predicate evaluator `(geo: Geometry, binding: Binding, *names) -> bool` answers one ground
  atom from the state read once per tick (`Geometry`: block poses, speeds, contacts, held flags).
- a family's `build(blocks, rng) -> (init atoms, goal atoms)` decides the task blocks' start and
  goal (`Family(types=...)`: each task object's PDDL type); `generate_family` adds looks, sizes,
  distractors and the sidecar, deterministically.
- an object type `ObjectType(name, built_as, build)` of a PDDL subtype of `block` builds its free
  prop: `build(name, size_m, rgba, material) -> MeshProp | Cylinder | Box`, its frame at the centre
  of its bounding box; predicates, reset and the grasp search then read it by that box.
  `examples/tasks/kitchen/` builds a cup, a bowl and a plate as meshes.
"""

from demoforge.sim import Box, Cylinder, IKOptions, MeshProp, nearest_ik, solve_ik, solve_ik_near
from demoforge.skills import geometry
from demoforge.skills.builder import Infeasible, PlanBuilder, SkillBody
from demoforge.skills.context import Rect, SkillContext, SkillError, SkillFailure, SkillPlan, SkillSettings
from demoforge.skills.pick import carry_z, grasp, top_down_candidates
from demoforge.skills.place import free_spot, held_in_tcp, other_footprints, place_in_area, place_on
from demoforge.skills.timing import JointLimits, joint_limits, time_path
from demoforge.skills.transit import plan_around
from demoforge.symbolic.binding import Binding, Tolerances
from demoforge.symbolic.predicates import Geometry
from demoforge.tasks.package import ENTRY_POINT_GROUP, load_package, package, packages, register
from demoforge.tasks.package_records import Family, ObjectType, Predicate, Skill, TaskPackage, TaskPackageError
from demoforge.tasks.pddl_text import Atom

__all__ = [
    "ENTRY_POINT_GROUP", "Atom", "Binding", "Box", "Cylinder", "Family", "Geometry", "IKOptions", "Infeasible", "JointLimits",
    "MeshProp", "ObjectType", "PlanBuilder", "Predicate", "Rect", "Skill", "SkillBody", "SkillContext", "SkillError",
    "SkillFailure", "SkillPlan", "SkillSettings", "TaskPackage", "TaskPackageError", "Tolerances", "carry_z",
    "free_spot", "geometry", "grasp", "held_in_tcp", "joint_limits", "load_package", "nearest_ik",
    "other_footprints", "package", "packages", "place_in_area", "place_on", "plan_around", "register",
    "solve_ik", "solve_ik_near", "time_path", "top_down_candidates",
]
