"""Skills: one per PDDL operator, planned as joint-target trajectories at the control rate.

    ctx = skill_context(scene, regions={"left": (x_lo, x_hi, y_lo, y_hi)})  # world frame [m]
    plan = plan_skill(ctx, "stack", ["red", "green"], rng)  # rng: the env's Generator
    if plan.ok:
        for k in range(plan.ticks):  # or gather tick k of N plans and step N envs at once
            command, gripper, phase = plan.q[k], plan.gripper[k], PHASES[plan.phase[k]]
    else:
        plan.failure.kind, plan.failure.phase, plan.failure.message  # "ik", "collision", ...

A plan is computed from the state when the skill starts and is open loop; its ticks are
joint targets (joint_position commands; under cartesian_delta `execute` and the runner send
the TCP delta toward each, `sim.command_toward`). Planning reads `scene.data`
and writes only `ctx.scratch`. Each skill module's docstring states the skill's expected
geometric effect and its draws (kept in `plan.params`).
"""

from demoforge.skills.context import (
    FAILURE_KINDS,
    FLIP_MODES,
    PHASES,
    PUT_DOWN_SPOTS,
    Rect,
    SkillContext,
    SkillError,
    SkillFailure,
    SkillPlan,
    SkillSettings,
    choice_problems,
    skill_context,
)
from demoforge.skills.registry import SKILLS, Skill, execute, get_skill, plan_skill
from demoforge.skills.rotate import half_turn_way
from demoforge.skills.timing import PROFILES, JointLimits, MotionProfile, joint_limits, profile, time_path

__all__ = [
    "FAILURE_KINDS", "FLIP_MODES", "PHASES", "PROFILES", "PUT_DOWN_SPOTS", "SKILLS", "JointLimits", "MotionProfile",
    "Rect", "Skill",
    "SkillContext", "SkillError", "SkillFailure", "SkillPlan", "SkillSettings", "choice_problems", "execute",
    "get_skill", "half_turn_way", "joint_limits", "plan_skill", "profile", "skill_context", "time_path",
]
