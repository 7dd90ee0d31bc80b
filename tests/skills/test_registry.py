import dataclasses

import numpy as np
import pytest

from demoforge.sim import Box, Table, build_scene, default_scene
from demoforge.skills import FAILURE_KINDS, PHASES, SKILLS, SkillError, SkillSettings, execute, get_skill, plan_skill
from demoforge.skills import joint_limits, skill_context

from .conftest import cube, make, run


def _same(p, q):
    np.testing.assert_array_equal(p.q, q.q)
    np.testing.assert_array_equal(p.gripper, q.gripper)
    np.testing.assert_array_equal(p.phase, q.phase)
    assert p.params == q.params


@pytest.mark.parametrize(("operator", "args"), [
    ("pick-up", ["a"]), ("flip", ["a", "pz", "py"]), ("rotate", ["a", "yaw0", "yaw270"]),
])
def test_same_seed_same_commands_other_seed_other_draws(operator, args):
    scene, ctx = make(cube("a", 0.5, 0.0), cube("b", 0.45, 0.15))
    first = plan_skill(ctx, operator, args, np.random.default_rng(11))
    again = plan_skill(ctx, operator, args, np.random.default_rng(11))
    other = plan_skill(ctx, operator, args, np.random.default_rng(12))
    _same(first, again)
    assert first.ok and other.ok and first.params != other.params
    assert first.q.shape == (first.ticks, 7) and first.gripper.shape == first.phase.shape == (first.ticks,)


def test_place_draws_are_reproducible_after_the_same_pick():
    plans = []
    for _ in range(2):
        scene, ctx = make(cube("a", 0.5, -0.1), cube("b", 0.45, 0.12))
        run(scene, ctx, "pick-up", ["a"], seed=21)
        plans.append(plan_skill(ctx, "put-down", ["a"], np.random.default_rng(22)))
    _same(*plans)


def test_plans_start_from_the_last_commanded_targets():
    scene, ctx = make(cube("a", 0.5, 0.0))
    plan = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(0))
    start = scene.data.ctrl[scene.robot.arm_actuators]
    limits = joint_limits(scene.robot.card, ctx.settings.profile)
    assert np.all(np.abs(plan.q[0] - start) <= limits.jerk / 60**3 * (1 + 1e-9))  # starts at rest, no jump
    assert PHASES[plan.phase[0]] == "approach" and plan.gripper[0] == 0.0  # nothing near: wide open


def test_unreachable_block_is_a_structured_ik_failure():
    far = Table(size=(2.4, 1.2), center=(1.0, 0.0))
    scene = build_scene(default_scene(props=(Box("a", (0.04,) * 3, (1.5, 0.0, 0.42)),), table=far))
    plan = plan_skill(skill_context(scene), "pick-up", ["a"], np.random.default_rng(0))
    assert not plan.ok and plan.ticks == 0
    assert plan.failure.kind == "ik" and plan.failure.phase == "approach"
    assert "no IK solution" in plan.failure.message and "mm" in plan.failure.message
    with pytest.raises(SkillError, match="nothing to execute"):
        execute(scene, plan)


def test_a_crowded_workspace_is_a_collision_failure_and_a_long_plan_a_timeout():
    boxes = [cube(f"c{i}{j}", 0.4 + 0.1 * i, -0.2 + 0.1 * j) for i in range(3) for j in range(5)]
    scene, ctx = make(*boxes)
    run(scene, ctx, "pick-up", ["c12"], seed=0)
    tiny = dataclasses.replace(ctx, workspace=(0.39, 0.61, 0.05, 0.21))  # the hole c12 left is outside
    plan = plan_skill(tiny, "put-down", ["c12"], np.random.default_rng(0))
    assert plan.failure.kind == "collision" and "no free table spot" in plan.failure.message
    hurried = dataclasses.replace(ctx, settings=SkillSettings(max_s=1.0))
    plan = plan_skill(hurried, "stack", ["c12", "c00"], np.random.default_rng(0))
    assert plan.failure.kind == "timeout" and "max_s" in plan.failure.message
    assert {"ik", "collision", "timeout"} <= set(FAILURE_KINDS)


def test_lookup_and_argument_errors_name_the_alternatives():
    scene, ctx = make(cube("a", 0.5, 0.0))
    rng = np.random.default_rng(0)
    with pytest.raises(SkillError, match="'flip'.*'unstack'"):
        get_skill("juggle")
    assert sorted(SKILLS) == ["flip", "pick-up", "place-in-region", "put-down", "rotate", "stack", "unstack"]
    with pytest.raises(SkillError, match=r"takes 2 arguments \['\?x', '\?y'\]"):
        plan_skill(ctx, "stack", ["a"], rng)
    with pytest.raises(SkillError, match=r"props: \['a'\]"):
        plan_skill(ctx, "pick-up", ["zz"], rng)
    with pytest.raises(SkillError, match="regions: \\[\\]"):
        plan_skill(ctx, "place-in-region", ["a", "left"], rng)
    with pytest.raises(SkillError, match="faces"):
        plan_skill(ctx, "flip", ["a", "pz", "up"], rng)
    with pytest.raises(SkillError, match="adjacent"):
        plan_skill(ctx, "flip", ["a", "pz", "nz"], rng)
    with pytest.raises(SkillError, match="one 90-degree step"):
        plan_skill(ctx, "rotate", ["a", "yaw0", "yaw180"], rng)


def test_flip_from_a_face_that_is_not_up_is_a_precondition_failure():
    scene, ctx = make(cube("a", 0.5, 0.0))
    # The block shows pz, so (flip a px py) contradicts the simulated state.
    plan = plan_skill(ctx, "flip", ["a", "px", "py"], np.random.default_rng(0))
    assert plan.failure.kind == "precondition" and "face pz up, not px" in plan.failure.message


def test_bad_settings_are_reported_together():
    with pytest.raises(SkillError) as err:
        SkillSettings(max_s=0.0, place_gap=-1.0, grasp_z_offset=(0.01, 0.0))
    assert all(w in str(err.value) for w in ("max_s", "place_gap", "grasp_z_offset"))


def test_plans_follow_the_control_rate():
    scene, ctx = make(cube("a", 0.5, 0.0))
    at60 = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(0))
    slow_ctx = dataclasses.replace(ctx, settings=SkillSettings(control_hz=30.0))
    at30 = plan_skill(slow_ctx, "pick-up", ["a"], np.random.default_rng(0))
    assert at30.control_hz == 30.0 and abs(at30.ticks * 2 - at60.ticks) <= 12  # one tick per segment
    start = scene.data.body("a").xpos[2]
    execute(scene, at30)
    assert scene.data.body("a").xpos[2] > start + ctx.settings.carry_clearance  # lifted clear of the table
    odd = dataclasses.replace(at30, control_hz=70.0)
    with pytest.raises(SkillError, match="whole number of physics steps"):
        execute(scene, odd)


def test_a_plan_runs_under_cartesian_delta_too():
    """The planned joint targets become TCP deltas through differential IK, and the pick still lifts."""
    scene, ctx = make(cube("a", 0.5, 0.0))
    plan = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(0))
    law = dataclasses.replace(scene.robot.card.controller, mode="cartesian_delta")
    start = scene.data.body("a").xpos[2]
    execute(scene, plan, law=law)
    assert scene.data.body("a").xpos[2] > start + ctx.settings.carry_clearance
    # the targets the controller integrated end near the plan's, though it never saw them
    assert np.abs(scene.data.ctrl[scene.robot.arm_actuators] - plan.q[-1]).max() < 5e-3
