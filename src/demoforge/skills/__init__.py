"""Skills: one per PDDL operator, planned as joint-target trajectories at the control rate."""

from demoforge.skills.context import (
    FAILURE_KINDS,
    PHASES,
    Rect,
    SkillContext,
    SkillError,
    SkillFailure,
    SkillPlan,
    SkillSettings,
    skill_context,
)
from demoforge.skills.motion import PROFILES, MotionProfile, profile, segment, trajectory
from demoforge.skills.registry import SKILLS, Skill, execute, get_skill, plan_skill

__all__ = [
    "FAILURE_KINDS", "PHASES", "PROFILES", "SKILLS", "MotionProfile", "Rect", "Skill", "SkillContext",
    "SkillError", "SkillFailure", "SkillPlan", "SkillSettings", "execute", "get_skill", "plan_skill", "profile",
    "segment", "skill_context", "trajectory",
]
