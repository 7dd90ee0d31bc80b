"""Checks of the skill plug-in point: a registered operator, a `Skill`, or a bare `SkillBody`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from demoforge.determinism.core import CheckReport, DeterminismError, Harness
from demoforge.sim import snapshot
from demoforge.skills import SKILLS, Skill, SkillContext, plan_skill
from demoforge.skills.builder import SkillBody, run_skill

# () -> a SkillContext on a freshly built scene, in the state the skill starts from
Fixture = Callable[[], SkillContext]


def _planner(skill: str | Skill | SkillBody) -> tuple[str, Callable]:
    """(name for messages, (ctx, args, rng) -> SkillPlan)."""
    if isinstance(skill, str):
        if skill not in SKILLS:
            raise DeterminismError(f"skill {skill!r} is not one of {sorted(SKILLS)}; pass an operator name, a "
                                   "Skill or a SkillBody")
        return f"skill {skill!r}", lambda ctx, args, rng: plan_skill(ctx, skill, args, rng)
    if isinstance(skill, Skill):
        return f"skill {skill.name!r}", lambda ctx, args, rng: run_skill(skill.name, skill.body, ctx, args, rng)
    if callable(skill):
        name = getattr(skill, "__name__", repr(skill))
        return f"skill body {name}", lambda ctx, args, rng: run_skill(name, skill, ctx, args, rng)
    raise DeterminismError(f"cannot check {skill!r} as a skill: pass an operator name (a key of SKILLS), a "
                           "Skill or a SkillBody (builder, args, params) -> SkillPlan")


def _live(ctx: SkillContext) -> dict:
    """The live state a skill may only read: the integration state (ctrl included) and the model's
    geometry it plans around."""
    return {"data (integration state)": snapshot(ctx.model, ctx.data),
            "model geom_size": ctx.model.geom_size.copy(), "model body_pos": ctx.model.body_pos.copy()}


def check_skill(skill: str | Skill | SkillBody, fixture: Fixture, args: Sequence[str], *, seed: int = 0,
                other_seed: int = 1, require_seed_effect: bool = False) -> CheckReport:
    """Plan `skill` on `args` from the context `fixture()` builds (a fresh scene every call, e.g. a
    block already in the hand for put-down) with `np.random.default_rng(seed)`, twice, then with
    `other_seed`: the plans (targets, gripper, phases, draws, failure, expected pose) must be
    identical, the live `ctx.data` untouched. A plan that fails in the fixture is a warning: only
    the failure's determinism was checked."""
    plugin, plan = _planner(skill)
    args = tuple(args)
    harness = Harness(f"{plugin} on {list(args)}", lambda s: None)
    outcomes: list = []

    def run(s: int) -> dict:
        ctx = fixture()
        before = _live(ctx)
        p = plan(ctx, args, np.random.default_rng(s))
        harness.unchanged("the live scene (ctx.data, ctx.model)", before, _live(ctx))
        outcomes.append(p.failure)
        return {"q": p.q, "gripper": p.gripper, "phase": p.phase, "params": p.params, "failure": p.failure,
                "block_target": p.block_target, "control_hz": p.control_hz, "skill": p.skill, "args": p.args}

    harness.run = run
    first = harness.same_seed(seed)
    harness.other_seed(seed, other_seed, first, required=require_seed_effect)
    failures = [f for f in outcomes if f is not None]
    if failures:
        f = failures[0]
        harness.warnings.append(f"the plan failed in {len(failures)} of {len(outcomes)} runs ({f.kind} in "
                                f"{f.phase}: {f.message}); give a fixture where it succeeds to check its commands")
    return harness.report()
