import math

import numpy as np
import pytest

from demoforge.skills.flip import REFERENCE_AXIS, TILTS, flipped

from .conftest import CUBE, TABLE_Z, cube, make, pose, run, yaw_quat


def _face_and_heading(rot):
    """(face up, heading [deg] of its reference axis) from a rotation matrix."""
    k = int(np.argmax(np.abs(rot[2])))
    face = ("p" if rot[2, k] > 0 else "n") + "xyz"[k]
    h = rot[:, REFERENCE_AXIS["xyz"[k]]]
    return face, math.degrees(math.atan2(h[1], h[0]))


def _deg_off(a, b):
    return abs((a - b + 180) % 360 - 180)


@pytest.mark.parametrize(("to", "yaw"), [("px", 0.0), ("ny", 10.0), ("nx", 90.0), ("py", -80.0)])
def test_flip_puts_the_adjacent_face_up_in_place_keeping_the_yaw(to, yaw):
    scene, ctx = make(cube("a", 0.5, -0.05, quat=yaw_quat(yaw)))
    start, rot0 = pose(scene, "a")
    plan = run(scene, ctx, "flip", ["a", "pz", to], seed=6)
    now, rot = pose(scene, "a")
    face, heading = _face_and_heading(rot)
    sign = 1.0 if to[0] == "p" else -1.0
    assert face == to and sign * rot[2, "xyz".index(to[1])] > math.cos(math.radians(5))  # flat
    assert _deg_off(heading, _face_and_heading(rot0)[1]) < 5  # the domain's yaw is kept
    assert abs(now[2] - (TABLE_Z + CUBE / 2)) < 0.002  # resting on the table
    assert np.linalg.norm(now[:2] - start[:2]) < 0.008
    assert plan.params["flip_tilt"] in TILTS


def test_flip_target_matches_the_symbolic_orientation_convention():
    orientation = pytest.importorskip("demoforge.symbolic.orientation")
    for face in orientation.FACES:
        for yaw in orientation.YAWS:
            rot = orientation.block_rotation(face, yaw)
            for end in orientation.FACES:
                if end[1] != face[1]:
                    target = flipped(rot, end)
                    assert orientation.face_up(target, 0.01) == end
                    assert orientation.yaw_of(target, end, 0.01) == yaw


def test_every_flip_turns_its_block_120_degrees():
    """A 90-degree tip that keeps the domain's yaw is also a 90-degree turn about the vertical: one
    rotation of 120 degrees for every face pair and yaw (the turn bench_motion counts flip's
    travel beyond)."""
    orientation = pytest.importorskip("demoforge.symbolic.orientation")
    angles = set()
    for face in orientation.FACES:
        for yaw in orientation.YAWS:
            rot = orientation.block_rotation(face, yaw)
            for end in orientation.FACES:
                if end[1] != face[1]:
                    turn = flipped(rot, end) @ rot.T
                    angles.add(round(math.degrees(math.acos(np.clip((np.trace(turn) - 1) / 2, -1, 1))), 6))
    assert angles == {120.0}


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
