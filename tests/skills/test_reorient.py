import math

import numpy as np
import pytest

from demoforge.skills import geometry as geo
from demoforge.skills import half_turn_way
from demoforge.skills.flip import TILTS, tip_direction, tipped
from demoforge.symbolic import orientation
from demoforge.tasks.families import TIPS_CCW

from .conftest import CUBE, TABLE_Z, cube, make, pose, run, yaw_quat


def _deg_off(a, b):
    return abs((a - b + 180) % 360 - 180)


@pytest.mark.parametrize(("to", "yaw"), [("px", 0.0), ("ny", 10.0), ("nx", 90.0), ("py", -80.0)])
def test_flip_tips_the_block_over_onto_its_side(to, yaw):
    scene, ctx = make(cube("a", 0.5, -0.05, quat=yaw_quat(yaw)))
    start, rot0 = pose(scene, "a")
    v = tip_direction(rot0, to)
    plan = run(scene, ctx, "flip", ["a", "pz", to], seed=6)
    now, rot = pose(scene, "a")
    assert plan.params["flip_mode"] == "topple"
    assert math.degrees(geo.angle_between(rot, tipped(rot0, v))) < 5  # face ?to up, the heading kept
    assert abs(now[2] - (TABLE_Z + CUBE / 2)) < 0.002  # resting on the table
    landed = start[:2] - CUBE * v[:2]  # one half-width plus one half-height back along -v
    assert np.linalg.norm(now[:2] - landed) < 0.01
    # The fingers rise RETREAT (1 cm) and open: clear of the fallen block, the arm touching nothing.
    m, d, block = scene.model, scene.data, scene.model.body("a").id
    robot = set(ctx.robot.body_ids)
    for c in d.contact[:d.ncon]:
        pair = {int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])}
        assert not (block in pair and pair & robot), [m.body(b).name for b in pair]


def test_flip_turns_the_block_in_the_hand_where_it_cannot_topple():
    """A neighbour where the block would land: the block turns in the hand, where it stood."""
    scene, ctx = make(cube("a", 0.5, -0.05), cube("b", 0.5 + 0.06, -0.05))
    start, rot0 = pose(scene, "a")
    plan = run(scene, ctx, "flip", ["a", "pz", "nx"], seed=6)  # face nx points at b: a would land on it
    now, rot = pose(scene, "a")
    assert plan.params["flip_mode"] == "in_hand" and "'b' stands where it would land" in plan.params["flip_topple_refused"]
    assert plan.params["flip_tilt"] in TILTS
    assert math.degrees(geo.angle_between(rot, tipped(rot0, tip_direction(rot0, "nx")))) < 6
    assert np.linalg.norm(now[:2] - start[:2]) < 0.008


def test_flip_mode_in_hand_turns_the_block_in_the_hand_where_it_could_topple():
    """SkillSettings(flip_mode="in_hand"): a block with room to land (the first case of
    test_flip_tips_the_block_over_onto_its_side) is turned in the hand where it stood, face ?to up."""
    from demoforge.skills import SkillSettings

    scene, ctx = make(cube("a", 0.5, -0.05), settings=SkillSettings(flip_mode="in_hand"))
    start, rot0 = pose(scene, "a")
    plan = run(scene, ctx, "flip", ["a", "pz", "px"], seed=6)
    now, rot = pose(scene, "a")
    assert plan.params["flip_mode"] == "in_hand" and "flip_topple_refused" not in plan.params
    assert math.degrees(geo.angle_between(rot, tipped(rot0, tip_direction(rot0, "px")))) < 6
    assert np.linalg.norm(now[:2] - start[:2]) < 0.008


@pytest.mark.parametrize(("xy", "face", "workspace", "mode", "why"), [
    # face px up: the block falls towards -x, one block width on
    ((0.34, 0.0), "px", (0.35, 0.65, -0.25, 0.25), "topple", None),  # lands 5 cm short of the workspace, on the table
    ((0.32, 0.0), "px", (0.35, 0.65, -0.25, 0.25), "in_hand", "outside the workspace"),  # lands 7 cm short
    # face ny up: towards +y, where this workspace reaches the table's edge (0.6 m)
    ((0.45, 0.54), "ny", (0.35, 0.65, -0.25, 0.6), "in_hand", "the table's edge"),
])
def test_where_a_tipped_block_may_land(xy, face, workspace, mode, why):
    scene, ctx = make(cube("a", *xy), workspace=workspace)
    plan = run(scene, ctx, "flip", ["a", "pz", face], seed=6)
    assert plan.params["flip_mode"] == mode
    assert why is None or why in plan.params["flip_topple_refused"]


def test_every_tip_moves_the_domain_yaw_as_tip_yaw_says():
    """A tip changes the yaw the symbolic evaluator reads by +90 degrees for the pairs in
    TIPS_CCW and by -90 for the others, at every yaw: the static facts the planner gets agree
    with what the skill does."""
    for face in orientation.FACES:
        for k, yaw in enumerate(orientation.YAWS):
            rot = orientation.block_rotation(face, yaw)
            for end in orientation.FACES:
                if end[1] != face[1]:
                    target = tipped(rot, tip_direction(rot, end))
                    assert orientation.face_up(target, 0.01) == end
                    step = 1 if (face, end) in TIPS_CCW else 3
                    assert orientation.yaw_of(target, end, 0.01) == orientation.YAWS[(k + step) % 4]
                    assert math.degrees(geo.angle_between(rot, target)) == pytest.approx(90.0)


@pytest.mark.parametrize(("start", "end", "turn"), [("yaw0", "yaw90", 90.0), ("yaw90", "yaw0", -90.0)])
def test_rotate_turns_the_block_90_degrees_in_place(start, end, turn):
    scene, ctx = make(cube("a", 0.45, 0.05, quat=yaw_quat(5)))
    p0, rot0 = pose(scene, "a")
    run(scene, ctx, "rotate", ["a", start, end], seed=7)
    p1, rot1 = pose(scene, "a")
    change = math.degrees(math.atan2(rot1[1, 0], rot1[0, 0]) - math.atan2(rot0[1, 0], rot0[0, 0]))
    assert _deg_off(change, turn) < 3
    assert rot1[2, 2] > 0.999  # same face up
    assert np.linalg.norm(p1[:2] - p0[:2]) < 0.004 and abs(p1[2] - p0[2]) < 0.002


def test_a_half_turn_goes_the_way_the_wrist_turns_in_one_grasp():
    """From the home pose the last joint has room for a half turn one way only: a half turn
    planned the other way is turned round (same start and end angles), and its two rotates
    then turn the wrist half a turn in all, where the planned way regrasps a quarter turn
    back (three quarters)."""
    def wrist_deg(way):
        scene, ctx = make(cube("a", 0.45, 0.05))
        q = scene.data.ctrl[ctx.robot.arm_actuators][-1:].copy()
        total = 0.0
        for args in way:
            plan = run(scene, ctx, "rotate", list(args), seed=7)
            total += float(np.abs(np.diff(np.concatenate([q, plan.q[:, -1]]))).sum())
            q = plan.q[-1:, -1]
        return math.degrees(total)

    planned = (("a", "yaw0", "yaw90"), ("a", "yaw90", "yaw180"))
    _, ctx = make(cube("a", 0.45, 0.05))
    other = half_turn_way(ctx, *(("rotate", a) for a in planned))
    assert other == (("a", "yaw0", "yaw270"), ("a", "yaw270", "yaw180"))
    assert half_turn_way(ctx, *(("rotate", a) for a in other)) is None  # that way fits: kept
    assert half_turn_way(ctx, ("rotate", planned[0]), ("rotate", ("a", "yaw90", "yaw0"))) is None  # no half turn
    assert wrist_deg(other) < 200 < 250 < wrist_deg(planned)


def test_place_in_region_puts_the_block_inside_the_rectangle():
    region = (0.40, 0.55, 0.15, 0.28)
    scene, ctx = make(cube("a", 0.5, -0.1), regions={"left": region})
    run(scene, ctx, "pick-up", ["a"], seed=8)
    run(scene, ctx, "place-in-region", ["a", "left"], seed=8)
    a, rot = pose(scene, "a")
    corners = a[:2] + (rot[:2, :2] @ (np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]).T * CUBE / 2)).T
    assert np.all((corners[:, 0] > region[0]) & (corners[:, 0] < region[1]))
    assert np.all((corners[:, 1] > region[2]) & (corners[:, 1] < region[3]))
    assert abs(a[2] - (TABLE_Z + CUBE / 2)) < 0.002
