"""Expert motion a person would call efficient: one arm branch, the nearest symmetric grasp,
straight Cartesian approach lines, planned detours, limits kept at every tick."""

import dataclasses
import math

import mujoco
import numpy as np
import pytest

from demoforge.skills import PHASES, joint_limits, plan_skill
from demoforge.skills import geometry as geo
from demoforge.skills import pick
from demoforge.skills.builder import PlanBuilder
from demoforge.skills.pick import PREGRASP_CLEARANCE
from demoforge.skills.timing import check_limits
from demoforge.skills.transit import plan_around

from .conftest import CUBE, TABLE_Z, cube, make, pose, run, yaw_quat


def _tcp(ctx, q):
    d = ctx.scratch
    d.qpos[ctx.robot.arm_qpos] = q
    mujoco.mj_kinematics(ctx.model, d)
    return d.site_xpos[ctx.robot.tcp_site].copy(), d.site_xmat[ctx.robot.tcp_site].reshape(3, 3).copy()


def test_ik_stays_on_the_seed_branch_for_neighbouring_poses():
    scene, ctx = make(cube("a", 0.5, 0.0))
    b = PlanBuilder(ctx, np.random.default_rng(0))
    q = b.ik(np.array([0.6, 0.0, 0.5]), geo.down(0.3), "approach")
    for k in range(1, 19):  # about 3 cm at a time around a circle in the workspace
        pos = np.array([0.5 + 0.1 * math.cos(k / 3), 0.1 * math.sin(k / 3), 0.5])
        nxt = b.ik(pos, geo.down(0.3 + 0.05 * k), "approach", seed=q)
        assert np.abs(nxt - q).max() < 0.25, (k, nxt - q)
        q = nxt


def test_grasp_yaw_is_the_symmetric_grasp_nearest_to_the_hand():
    for yaw in (-40.0, -10.0, 0.0, 35.0, 44.0):
        scene, ctx = make(cube("a", 0.5, 0.05, quat=yaw_quat(yaw)))
        b = PlanBuilder(ctx, np.random.default_rng(1))
        _, tcp = b.tcp_pose(b.q)
        yaw_now = math.atan2(tcp[1, 1], tcp[0, 1])
        plan = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(1))
        assert plan.ok, plan.failure
        # A cube offers four yaws 90 degrees apart: the nearest is at most 45 degrees away. Two
        # grasps near 45 degrees either side cost the same joint travel to within the cost's
        # rounding, and the hand's own yaw is not joint 7's alone, so the other may win by a few.
        assert abs(geo.wrap(plan.params["grasp_yaw"] - yaw_now)) <= math.radians(55.0)
        wrist = np.abs(np.diff(np.vstack([plan.q[:1], plan.q])[:, -1])).sum()
        assert wrist < math.radians(60), (yaw, math.degrees(wrist))


def test_a_close_neighbour_along_the_pinch_axis_keeps_the_nearest_grasp():
    # Alone, the cube is grasped at yaw psi with the fingers wide open; with a neighbour 6.5 cm away
    # along that pinch axis (2.5 cm between their faces, less than wide open fingers need) they
    # open only as wide as the grasp needs, so the same grasp is taken without turning the wrist.
    _, ctx = make(cube("a", 0.5, 0.0))
    alone = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(4))
    assert alone.ok, alone.failure
    psi = alone.params["grasp_yaw"]
    near = 0.065 * np.array([math.cos(psi), math.sin(psi)])
    scene, ctx = make(cube("a", 0.5, 0.0), cube("b", 0.5 + near[0], near[1], rgba=(0.2, 0.2, 0.8, 1.0)))
    b_before = scene.data.body("b").xpos.copy()
    plan = run(scene, ctx, "pick-up", ["a"], seed=4)
    assert plan.params["grasp_yaw"] == psi
    stroke = float(np.sum(np.abs(scene.robot.finger_open - scene.robot.finger_closed)))
    approach = plan.gripper[plan.phase == PHASES.index("approach")]
    assert (1.0 - approach[-1]) * stroke == pytest.approx(0.04 + PREGRASP_CLEARANCE)  # the cube + clearance
    assert alone.gripper[0] == 0.0  # alone, the fingers open wide
    wrist = np.abs(np.diff(np.vstack([plan.q[:1], plan.q])[:, -1])).sum()
    assert wrist < math.radians(30), math.degrees(wrist)
    assert np.linalg.norm(scene.data.body("b").xpos - b_before) < 0.002  # the neighbour was not touched


def test_a_quarter_turn_the_neighbours_force_is_recorded_as_forced():
    """Neighbours 1.5 cm off both sides of the nearest grasp's pinch axis leave no room for a
    finger: every grasp that turns the hand less hits one, so the quarter turn taken is the
    scene's (`grasp_forced_turn`, which bench_motion counts as needed); a free block's grasp
    records none."""
    _, ctx = make(cube("a", 0.5, 0.0))
    alone = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(4))
    assert alone.ok, alone.failure
    assert "grasp_forced_turn" not in alone.params
    psi = alone.params["grasp_yaw"]
    side = 0.055 * np.array([math.cos(psi), math.sin(psi)])
    _, ctx = make(cube("a", 0.5, 0.0), cube("l", 0.5 + side[0], side[1]), cube("r", 0.5 - side[0], -side[1]))
    b = PlanBuilder(ctx, np.random.default_rng(4))
    heading = pick.pinch_heading(b, b.q)
    plan = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(4))
    assert plan.ok, plan.failure
    assert abs(abs(geo.wrap(plan.params["grasp_yaw"] - psi)) - math.pi / 2) < 1e-6  # a quarter turn round
    assert plan.params["grasp_forced_turn"] == pytest.approx(abs(geo.wrap(plan.params["grasp_yaw"] - heading)))
    assert plan.params["grasp_forced_turn"] > math.radians(60)


def test_a_larger_turn_counts_as_forced_only_when_every_smaller_one_was_refused():
    result = ({"grasp_yaw": 1.6}, None, None), None
    turns = [0.02, 1.6, 0.05, 3.1]  # candidate 1 taken: 0 and 2 turn the hand less, 3 more
    assert "grasp_forced_turn" not in pick._forced(result, 1, turns, set())[0][0]  # chosen for its cost
    assert "grasp_forced_turn" not in pick._forced(result, 1, turns, {0})[0][0]  # candidate 2 untried or planned
    assert pick._forced(result, 1, turns, {0, 2})[0][0] == {"grasp_yaw": 1.6, "grasp_forced_turn": 1.6}
    assert "grasp_forced_turn" not in pick._forced(result, 1, [1.58, 1.6], {0})[0][0]  # within the margin


def test_descend_and_lift_follow_straight_tcp_lines():
    scene, ctx = make(cube("a", 0.5, -0.05, quat=yaw_quat(20)))
    plan = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(2))
    assert plan.ok, plan.failure
    for phase in ("descend", "lift"):
        ticks = np.flatnonzero(plan.phase == PHASES.index(phase))
        pts = np.array([_tcp(ctx, plan.q[k])[0] for k in range(ticks[0] - 1, ticks[-1] + 1)])
        a, b = pts[0], pts[-1]
        u = (b - a) / np.linalg.norm(b - a)
        off = pts - a - np.outer((pts - a) @ u, u)
        assert np.linalg.norm(off, axis=1).max() < 0.002, phase
        assert abs(u[2]) > 0.999  # straight down, straight up


def test_a_whole_skill_keeps_the_joint_limits_at_every_tick():
    scene, ctx = make(cube("a", 0.45, 0.1, quat=yaw_quat(-30)), cube("b", 0.55, -0.1))
    plan = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(3))
    assert plan.ok, plan.failure
    start = scene.data.ctrl[scene.robot.arm_actuators].astype(float)
    limits = joint_limits(scene.robot.card, ctx.settings.profile)
    assert check_limits(start, plan.q, limits, 1 / plan.control_hz) <= 1 + 1e-9


def _free(q):
    """A 3-D box world with a wall at 0.4 < x < 0.6 that only lets through above y = 0.8."""
    return not (0.4 < q[0] < 0.6 and q[1] < 0.8)


def test_ompl_plans_around_an_obstacle_collision_free_and_deterministically():
    limits = np.array([[0.0, 1.0]] * 3)
    q0, q1 = np.array([0.1, 0.1, 0.5]), np.array([0.9, 0.1, 0.5])
    paths = [plan_around(q0, q1, _free, limits, rng=np.random.default_rng(s), resolution=0.01) for s in (7, 7, 8)]
    path = paths[0]
    assert path is not None
    np.testing.assert_array_equal(path[0], q0)
    np.testing.assert_array_equal(path[-1], q1)
    for a, b in zip(path[:-1], path[1:], strict=True):
        for f in np.linspace(0, 1, 50):
            assert _free(a + f * (b - a))
    np.testing.assert_array_equal(paths[0], paths[1])  # same seed, same path
    assert paths[2] is not None


def test_ompl_gives_up_after_its_iteration_budget():
    limits = np.array([[0.0, 1.0]] * 2)
    blocked = lambda q: not (0.4 < q[0] < 0.6)  # noqa: E731 - a wall with no gap
    assert plan_around(np.array([0.1, 0.1]), np.array([0.9, 0.1]), blocked, limits,
                       rng=np.random.default_rng(0), resolution=0.01, max_iterations=200) is None


@pytest.mark.parametrize("end", ["start", "goal"])
def test_a_transit_to_or_from_a_configuration_that_is_not_free_fails_at_once(end):
    """RRT-Connect, given a goal that is not free, sleeps 10 ms per termination check until its
    budget runs out (4 s at 800 iterations over the two searches); the ends are checked first.
    The caller's generator moves on as after a search that found nothing, so later plans stay
    the same."""
    import time

    limits = np.array([[0.0, 1.0]] * 2)
    q0, q1 = np.array([0.1, 0.1]), np.array([0.9, 0.1])
    blocked = q0 if end == "start" else q1
    free = lambda q: not np.allclose(q, blocked)  # noqa: E731 - only that end is in collision
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    assert plan_around(q0, q1, free, limits, rng=rng, resolution=0.01, max_iterations=400) is None
    assert time.perf_counter() - t0 < 1.0
    searched = np.random.default_rng(0)  # both searches run and find nothing: a wall with no gap
    assert plan_around(q0, q1, lambda q: not (0.4 < q[0] < 0.6), limits, rng=searched, resolution=0.01,
                       max_iterations=200) is None
    assert rng.integers(2**62) == searched.integers(2**62)


def test_a_blocked_straight_transit_is_planned_around():
    # A tall pillar between the hand and the block: the straight joint path sweeps through it.
    from demoforge.sim import Box

    pillar = Box("pillar", (0.04, 0.04, 0.5), (0.45, -0.1, 0.65))
    scene, ctx = make(cube("a", 0.45, -0.25), pillar)
    b = PlanBuilder(ctx, np.random.default_rng(4))
    q_goal = b.ik(np.array([0.45, -0.25, 0.52]), geo.down(b.neutral_yaw), "approach")
    q_start = b.q.copy()
    assert b._path_hits(np.stack([q_start, q_goal]), ()) == "pillar"  # the straight path is blocked
    b.move(q_goal, "approach")
    qs = np.concatenate(b._q)
    np.testing.assert_array_equal(qs[-1], q_goal)
    assert not b._path_hits(np.vstack([q_start, qs]), ())


def _clearance(ctx, qs, body) -> float:
    """The least distance [m] between the robot and `body` over arm configurations `qs`."""
    m, d = ctx.model, ctx.scratch
    robot = [g for g in range(m.ngeom) if m.geom_bodyid[g] in ctx.robot.body_ids and m.geom_contype[g]]
    target = [g for g in range(m.ngeom) if m.geom_bodyid[g] == body]
    least = 1.0
    for q in qs:
        d.qpos[ctx.robot.arm_qpos] = q
        mujoco.mj_kinematics(ctx.model, d)
        least = min(least, min(mujoco.mj_geomDistance(m, d, a, b, 0.05, None) for a in robot for b in target))
    return least


def test_a_transit_keeps_the_robot_its_padding_clear_of_what_the_straight_path_grazes():
    """The open hand crossing over a block: the straight joint path passes a millimetre or two
    over it, which the position servos' 1-3 mm tracking error turns into a knock (towers just built
    were toppled so, bench_motion's fourteenth round). The transit keeps `transit_padding` clear;
    without the padding it takes the grazing path."""
    from demoforge.skills.context import SkillSettings

    scene, ctx = make(cube("a", 0.5, 0.0))
    body = ctx.props["a"]
    rot = geo.down(math.pi / 2)  # the fingers across the line: they pass over the block, not around it
    for z in np.arange(TABLE_Z + CUBE, TABLE_Z + CUBE + 0.04, 0.001):  # the lowest crossing that does not touch
        b = PlanBuilder(ctx, np.random.default_rng(0))
        q0 = b.ik(np.array([0.5, -0.12, z]), rot, "approach")
        q1 = b.ik(np.array([0.5, 0.12, z]), rot, "approach", seed=q0)
        straight = _clearance(ctx, q0 + np.linspace(0, 1, 60)[:, None] * (q1 - q0), body)
        if straight > 0.0005:
            break
    assert straight < 0.003
    pad = ctx.settings.transit_padding
    for padding, least in ((pad, pad - 0.0005), (0.0, 0.0)):
        c = dataclasses.replace(ctx, settings=SkillSettings(transit_padding=padding)) if padding == 0 else ctx
        b = PlanBuilder(c, np.random.default_rng(0))
        b.q = q0.copy()
        b.move(q1, "approach")
        qs = np.concatenate(b._q)
        np.testing.assert_array_equal(qs[-1], q1)
        got = _clearance(ctx, qs, body)
        assert got >= least, (padding, got)
    assert got < pad / 2  # unpadded, the path grazes the block


def test_a_planned_detour_is_the_same_for_the_same_seed():
    from demoforge.sim import Box

    pillar = Box("pillar", (0.04, 0.04, 0.5), (0.45, -0.1, 0.65))
    plans = []
    for _ in range(2):
        scene, ctx = make(cube("a", 0.45, -0.25), pillar)
        b = PlanBuilder(ctx, np.random.default_rng(9))
        b.move(b.ik(np.array([0.45, -0.25, 0.52]), geo.down(b.neutral_yaw), "approach"), "approach")
        plans.append(np.concatenate(b._q))
    np.testing.assert_array_equal(plans[0], plans[1])


def test_nearest_ik_keeps_the_pose_and_comes_nearer_the_reference():
    from demoforge.sim import nearest_ik

    scene, ctx = make(cube("a", 0.5, 0.0))
    b = PlanBuilder(ctx, np.random.default_rng(4))
    pos, rot = np.array([0.45, 0.1, 0.5]), geo.down(0.4)
    q = b.ik(pos, rot, "approach")
    q_ref = q.copy()
    q_ref[[0, 2]] += (0.4, -0.4)  # joints 1 and 3 turned against each other: mostly self-motion
    q_ref[4] += 0.3
    out = nearest_ik(ctx.model, ctx.scratch, ctx.robot, pos, geo.quat(rot), q=q, q_ref=q_ref)
    p, r = _tcp(ctx, out)
    assert np.linalg.norm(p - pos) < 1e-3 and geo.angle_between(r, rot) < 1e-2
    assert np.linalg.norm(out - q_ref) < 0.8 * np.linalg.norm(q - q_ref)
    lo, hi = ctx.robot.limits[:, 0], ctx.robot.limits[:, 1]
    assert np.all(out >= lo) and np.all(out <= hi)


def test_a_neighbour_a_finger_width_away_keeps_the_nearest_grasp_whatever_the_drawn_offset():
    """1.5 cm between the faces along the nearest grasp's pinch axis: a finger fits only with the
    fingers opened just past the block (TIGHT_CLEARANCE) and the grasp point a millimetre or
    two off the neighbour. Whatever the drawn offset, the nearest grasp is kept (moved along the
    pinch axis when the drawn one hits), not one a quarter turn round."""
    _, ctx = make(cube("a", 0.45, -0.04))
    psi = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(0)).params["grasp_yaw"]
    near = 0.055 * np.array([math.cos(psi), math.sin(psi)])
    scene, ctx = make(cube("a", 0.45, -0.04), cube("b", 0.45 + near[0], -0.04 + near[1], rgba=(0.2, 0.2, 0.8, 1.0)))
    yaws, shifted = [], 0
    for seed in range(8):
        plan = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(seed))
        assert plan.ok, plan.failure
        yaws.append(plan.params["grasp_yaw"])
        shifted += "grasp_pinch_shift" in plan.params
    assert yaws == [psi] * 8 and shifted > 0


def test_beside_a_tower_the_nearest_grasp_is_taken_higher_on_the_block():
    """A two-block tower 3.4 cm off along the nearest grasp's pinch axis: the hand above the
    fingers would hit its top block, so the grasp point moves up the block (`grasp_raise`, at
    most to its top) rather than the wrist turning a quarter turn; the block is still lifted."""
    _, ctx = make(cube("a", 0.45, -0.04))
    psi = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(0)).params["grasp_yaw"]
    x, y = 0.45 + 0.074 * math.cos(psi), -0.04 + 0.074 * math.sin(psi)
    scene, ctx = make(cube("a", 0.45, -0.04), cube("b", x, y), cube("c", x, y, level=1))
    for seed in range(4):
        plan = plan_skill(ctx, "pick-up", ["a"], np.random.default_rng(seed))
        assert plan.ok, plan.failure
        assert plan.params["grasp_yaw"] == psi and plan.params["grasp_raise"] > 0
    plan = run(scene, ctx, "pick-up", ["a"], seed=0)
    assert scene.data.body("a").xpos[2] > TABLE_Z + 0.06  # lifted, held by its upper part


def test_a_pick_up_lifts_the_block_off_the_table_and_the_carry_climbs_clear_of_the_tower():
    """Near the base, a straight lift to the height that clears a tower elsewhere costs the elbow
    most of an operator's travel; the lift rises `approach_height` (the descent's mirror) and the
    carry to the tower climbs on the way, the block at least `carry_clearance` over the tower
    wherever it passes over it, and the tower is built."""
    scene, ctx = make(cube("a", 0.34, -0.05), cube("b", 0.55, 0.10), cube("c", 0.55, 0.10, level=1))
    s = ctx.settings
    picked = run(scene, ctx, "pick-up", ["a"], seed=0)
    lift = np.flatnonzero(picked.phase == PHASES.index("lift"))
    rise = _tcp(ctx, picked.q[lift[-1]])[0][2] - _tcp(ctx, picked.q[lift[0] - 1])[0][2]
    assert rise == pytest.approx(s.approach_height, abs=0.005)  # not the ~12 cm over the tower
    tcp, rot = _tcp(ctx, scene.data.qpos[ctx.robot.arm_qpos])
    centre, _ = pose(scene, "a")
    held = rot.T @ (centre - tcp)  # the block's centre in the TCP frame, as carried
    stack = run(scene, ctx, "stack", ["a", "c"], seed=0)
    top, over = TABLE_Z + 2 * CUBE, 0
    for k in np.flatnonzero(stack.phase == PHASES.index("carry")):
        p, r = _tcp(ctx, stack.q[k])
        block = p + r @ held
        if np.abs(block[:2] - [0.55, 0.10]).max() < CUBE:  # over the tower
            assert block[2] - CUBE / 2 >= top + s.carry_clearance - 0.002, k
            over += 1
    assert over > 0
    assert np.linalg.norm(pose(scene, "a")[0][:2] - [0.55, 0.10]) < 0.01
    assert pose(scene, "a")[0][2] == pytest.approx(TABLE_Z + 2.5 * CUBE, abs=0.004)


def test_a_transit_checks_the_held_block_as_low_as_its_start_leaves_room_for():
    """`_free_drop`: the carry checks the held block `carry_clearance` lower, or half that where
    the block hangs too low at the start (just lifted, held low in the hand), or not lower."""
    _, ctx = make(cube("a", 0.5, 0.0))
    b = PlanBuilder(ctx, np.random.default_rng(0))
    tcp, rot = b.tcp_pose(b.q)
    clearance = ctx.settings.carry_clearance
    for bottom, drop in ((0.04, clearance), (0.02, clearance / 2), (0.01, 0.0)):
        centre = np.array([tcp[0], tcp[1], TABLE_Z + bottom + CUBE / 2])
        b.held = ("a", rot.T @ (centre - tcp), rot.T)
        assert b._free_drop(clearance, ()) == drop, bottom
        assert b.held_drop == 0.0  # only while a transit is checked
    assert b._free_drop(0.0, ()) == 0.0


def test_equal_cost_grasps_are_tried_the_smaller_last_joint_turn_first(monkeypatch):
    """Grasps a quarter turn either way often cost the same joint travel (rounded to 0.25 rad),
    while the last joint turns 85 degrees one way and 94 the other (the base joint's share of
    the hand's yaw goes with one and against the other): the smaller turn is tried first."""
    _, ctx = make(cube("a", 0.5, 0.05))
    b = PlanBuilder(ctx, np.random.default_rng(0))
    wrist = {}

    def cost(b, pos, rot, rise):  # every grasp the same cost; the later asked, the smaller the turn
        yaw = round(math.atan2(rot[1, 1], rot[0, 1]), 2)
        return 3.0, True, wrist.setdefault(yaw, 2.0 - 0.15 * len(wrist))

    monkeypatch.setattr(pick, "approach_cost", cost)
    order = [d["grasp_yaw"] for d, _, _ in pick.top_down_candidates(b, "a", {})]
    assert len(order) == len(wrist) >= 3
    turns = [wrist[round(math.atan2(geo.down(y)[1, 1], geo.down(y)[0, 1]), 2)] for y in order]
    assert turns == sorted(turns) and turns != list(wrist.values())  # reordered, smallest first


@pytest.mark.parametrize("turn", [-0.01, 0.01])
def test_a_grasp_135_degrees_from_the_wrist_mid_range_is_offered_whatever_the_float_noise(turn):
    """A cube square to the table has a grasp exactly 135 degrees (MAX_TWIST) from the wrist's
    mid-range (-45 degrees for the built-in arm): a hundredth of a degree either way, all four
    grasps stay on offer, since that one can be the wrist's smaller turn."""
    _, ctx = make(cube("a", 0.5, 0.0, quat=yaw_quat(turn)))
    b = PlanBuilder(ctx, np.random.default_rng(0))
    _, rot, half = geo.block(ctx, "a")
    assert b.neutral_yaw == pytest.approx(-math.pi / 4, abs=1e-3)
    assert len(pick.allowed_yaws(b, rot, half)) == 4
