"""flip: tip a block on the table 90 degrees so that face ?to points up.

Expected geometric effect: the block rests on the table at (nearly) the same centre x, y
(region membership kept) with face ?to up and its yaw as the domain measures it unchanged
(demoforge.symbolic.orientation: the heading of the up face's reference axis), gripper
open afterwards. That orientation is a 90-degree tip about the horizontal axis k = v x up
(v: the world direction of face ?to before the flip) followed by a turn about the
vertical by a multiple of 90 degrees, which the wrist adds while the block is lifted.

Motion (a parallel gripper cannot roll a block in its fingers, so the wrist does it):
the fingers pinch the block's two faces normal to k, the hand tilted by -alpha about k
from top-down; lift; turn the hand by +90 degrees about k (and about the vertical as
needed) while lifted, the block turning with it; lower to the table, the hand now tilted
by 90 - alpha; open; retreat straight up. alpha is 20, 30, 45, 60 or 70 degrees, whichever
(with either pinch direction) gives the feasible plan whose joints travel least. The turn
the block needs is 120 degrees, not 90: with the domain's yaw convention the vertical turn
is +-90 degrees for every pair of adjacent faces. The block creeps a few millimetres in the pads while
it turns, so it lands within ~6 mm of its old centre (measured). The grasp point is drawn 4-7 mm
off the centre both upwards and towards face ?to: after the turn the second offset
points up, so the TCP sits above the block centre at both ends and the tilted
fingertips stay clear of the table even for 3 cm blocks.

Draws: which of the two pinch directions along k comes first, and the two offsets.
"""

from __future__ import annotations

import math

import numpy as np

from demoforge.skills import geometry as geo
from demoforge.skills.builder import Infeasible, PlanBuilder
from demoforge.skills.context import SkillError, SkillFailure, SkillPlan
from demoforge.skills.pick import carry_z, grasp, pinch_width
from demoforge.skills.place import place_on

FACES = ("px", "nx", "py", "ny", "pz", "nz")  # the domain's face constants: sign and block axis
# Grasp tilts: the hand turns through 90 degrees about k from -alpha to 90 - alpha, so a small
# alpha leans the hand little at the grasp and much at the release, a large one the other way
# round; which end the arm leans cheaply depends on where k points (along joint 6's axis, in
# the arm's vertical plane, or across it). 20 and 70 degrees (added to 30-60) took the median
# flip from 10.4 to 8.6 rad of joint travel (benchmarks/bench_motion.py); 10 and 80 gained
# 0.07 rad more for 40% more planning time.
TILTS = tuple(math.radians(a) for a in (45.0, 30.0, 60.0, 20.0, 70.0))
# The domain's yaw is the heading of a reference axis that lies flat while a face is up
# (pz, nz: +x; px, nx: +y; py, ny: +z); this must agree with demoforge.symbolic.orientation,
# and a test holds them together. Kept here so skills do not import the evaluator.
REFERENCE_AXIS = {"x": 1, "y": 2, "z": 0}  # up axis -> block axis whose heading is the yaw
# Deepest reach of the built-in fingertips below the TCP at any tilt (9 mm tip, 11 mm pad
# half-width: at most 14.2 mm, at 51 degrees) plus 4 mm of clearance [m]; any gripper is
# still collision-checked.
FINGER_REACH = 0.018
OFFSET_SPREAD = 0.002  # grasp offsets are drawn from [needed, needed + this] [m]


def face_axis(face: str) -> tuple[int, float]:
    """(block axis index, sign) of a face constant."""
    if face not in FACES:
        raise SkillError(f"flip: unknown face {face!r}; faces: {list(FACES)}")
    return "xyz".index(face[1]), 1.0 if face[0] == "p" else -1.0


def flipped(rot: np.ndarray, end: str) -> np.ndarray:
    """world_R_block with face `end` up and the domain's yaw unchanged: the reference axis of
    the new up face (demoforge.symbolic.orientation) takes the heading [rad] that the old up
    face's reference axis has now, continuous offset from the 90-degree steps included."""
    k, _ = geo.up_axis(rot)
    h = rot[:, REFERENCE_AXIS["xyz"[k]]]
    heading = math.atan2(h[1], h[0])
    i_end, s_end = face_axis(end)
    f, h_end = np.eye(3)[i_end] * s_end, np.eye(3)[REFERENCE_AXIS["xyz"[i_end]]]
    return geo.rot_z(heading) @ np.column_stack([h_end, np.cross(f, h_end), f]).T


def flip(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(flip ?x ?from ?to): see the module docstring."""
    name, start, end = args
    (i_from, _), (i_to, s_to) = face_axis(start), face_axis(end)
    if i_from == i_to:
        raise SkillError(f"flip: {start} -> {end} is not a 90-degree tip (adjacent faces); pick faces on different axes")
    centre, rot, half = geo.block(b.ctx, name)
    up_now, up_sign = geo.up_axis(rot)
    face_now = ("p" if up_sign > 0 else "n") + "xyz"[up_now]
    if face_now != start:
        raise Infeasible(SkillFailure("precondition", "approach", (
            f"{name!r} rests with face {face_now} up, not {start}")))
    v = s_to * rot[:, i_to]
    v = v - v[2] * geo.UP
    v /= np.linalg.norm(v)
    k = np.cross(v, geo.UP)
    k_axis = 3 - up_now - i_to
    if 2 * half[k_axis] > pinch_width(b):
        raise Infeasible(SkillFailure("ik", "approach", (
            f"{name!r} is {2 * half[k_axis]:.3f} m wide along the flip axis; the fingers open {pinch_width(b):.3f} m")))
    # Off the centre only as far as the tilted fingertips need to clear the table at both ends:
    # every millimetre of lever lets gravity twist the block in the pads while it turns.
    needed = (max(0.0, FINGER_REACH - half[up_now]), max(0.0, FINGER_REACH - half[i_to]))
    c_up, c_to = (float(n + b.rng.uniform(0.0, OFFSET_SPREAD)) for n in needed)
    pinch = [k, -k] if b.rng.random() < 0.5 else [-k, k]
    params.update(flip_offset=[c_up, c_to], flip_pinch_sign=1 if pinch[0] is k else -1)
    pos = centre + c_up * geo.UP + c_to * v
    candidates = []
    for alpha in TILTS:
        for p in pinch:
            tcp = geo.rot_axis(k, -alpha) @ geo.down(math.atan2(p[1], p[0]))
            candidates.append(({"flip_tilt": alpha}, pos, tcp))
    target_rot = flipped(rot, end)

    def put_back(draw, pos, tcp_rot):
        grip = (tcp_rot.T @ (centre - pos), tcp_rot.T @ rot)
        return place_on(b, name, centre[:2], b.ctx.table_z, 0.0, carry_phase="reorient", grip=grip,
                        block_rot=target_rot)

    (draw, _, _), (target, target_rot) = grasp(b, name, candidates, lift_z=carry_z(b, name, pos), then=put_back,
                                               shortest=True)
    params.update(draw)
    return b.plan("flip", args, params, (*target.tolist(), *geo.quat(target_rot).tolist()))
