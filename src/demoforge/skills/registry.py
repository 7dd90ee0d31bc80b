"""Operator name -> skill (through the task-package registry), planning a call, and stepping one
environment through a plan."""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from demoforge.sim import command_toward, control_step
from demoforge.skills.builder import run_skill
from demoforge.skills.context import SkillContext, SkillError, SkillPlan
from demoforge.tasks import package as registry
from demoforge.tasks.package_records import Skill

__all__ = ["SKILLS", "Skill", "execute", "get_skill", "plan_skill"]

# Operator -> skill over every registered task package (the blocks world's: demoforge.taskapi.blocks).
SKILLS: Mapping[str, Skill] = registry.SKILLS


def get_skill(operator: str) -> Skill:
    """The skill of `operator`; the error lists every skill."""
    found = registry.owner("skills", operator)
    if found is None:
        raise SkillError(f"no skill for operator {operator!r}; skills: {sorted(SKILLS)} (a task package brings the "
                         "skills of its operators: --task-package PATH_OR_MODULE)")
    return found.skills[operator]


def plan_skill(ctx: SkillContext, operator: str, args, rng: np.random.Generator) -> SkillPlan:
    """Plan `operator` applied to `args` (objects as body/region names, constants as written)
    from the live state in `ctx`, drawing every parameter from `rng`. Infeasibility comes back
    in `plan.failure`; unknown operators, wrong arity and unknown names raise SkillError."""
    skill = get_skill(operator)
    args = tuple(str(a) for a in args)
    if len(args) != len(skill.params):
        raise SkillError(f"{operator} takes {len(skill.params)} arguments {list(skill.params)}, got {list(args)}")
    return run_skill(operator, skill.body, ctx, args, rng)


def execute(scene, plan: SkillPlan, *, law=None) -> None:
    """Step one scene through every tick of `plan` under `law` (default: the robot card's): the
    planned joint targets themselves under joint_position, under cartesian_delta the TCP delta
    toward each tick's target (`sim.command_toward`). The vectorized runner gathers ticks itself;
    this is for one env."""
    if not plan.ok:
        raise SkillError(f"plan of {plan.skill} failed ({plan.failure.kind}): {plan.failure.message}; nothing to execute")
    law = scene.robot.card.controller if law is None else law
    substeps = round(1.0 / (plan.control_hz * scene.model.opt.timestep))
    if substeps < 1 or abs(substeps * scene.model.opt.timestep * plan.control_hz - 1.0) > 1e-6:
        raise SkillError(f"control rate {plan.control_hz} Hz is not a whole number of physics steps of "
                         f"{scene.model.opt.timestep} s; pick a rate that divides {1 / scene.model.opt.timestep:.0f} Hz")
    scratch = None if law.mode == "joint_position" else mujoco.MjData(scene.model)
    for q, g in zip(plan.q, plan.gripper, strict=True):
        command = q if scratch is None else command_toward(scene.model, scene.data, scene.robot, law, q, scratch)
        control_step(scene, law, command, float(g), substeps)
