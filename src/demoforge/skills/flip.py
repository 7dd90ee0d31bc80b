"""flip: tip a block on the table 90 degrees so that face ?to points up.

Expected geometric effect: the block rests on the table with face ?to up, turned by a
90-degree tip about the level axis v x up (v: the world direction face ?to points in before
the flip), its heading otherwise unchanged; the domain's yaw (demoforge.symbolic.orientation:
the heading of the up face's reference axis) moves with it by +-90 degrees, as the static
`tip_yaw` relation of the domain says (no yaw convention stays put over every tip). Gripper
open afterwards.

Motion, "topple" (the default): the closed fingers, top-down, come straight down beside face
?to, its top edge just above their tips, then carry that point of the face on its arc about
the block's far bottom edge until the block is past balance; it falls onto its side, face
?to up, its centre one half-width plus one half-height further along -v; the fingers rise
and open. The hand does not turn (its yaw is the cheapest of the four that put the pads'
front on the face). Where the block has no room to land (another block, the edge of the
workspace or the table, a region edge it would cross) or the push cannot be served,
"in_hand": the fingers pinch the block's two faces normal to the tip axis, the hand tilted
by -alpha about it from top-down; lift; turn the hand by +90 degrees about the axis while
lifted; lower to the table where it stood; open; retreat straight up. alpha is 20, 30, 45,
60 or 70 degrees, whichever (with either pinch direction) gives the feasible plan whose
joints travel least. The plan's `flip_mode` says which. With `SkillSettings.flip_mode` "in_hand"
every flip turns the block in the hand: the topple's push must meet the face within a few
millimetres and at its own speed; replayed with the arm's targets about 5 mm off, topple demos
succeed in 15-75% of episodes, in-hand ones in all (benchmarks/bench_precision.py).

Draws: the push height (topple); which of the two pinch directions comes first and the grasp
offsets (in_hand).
"""

from __future__ import annotations

import math

import numpy as np

from demoforge.skills import geometry as geo
from demoforge.skills.builder import Infeasible, PlanBuilder
from demoforge.skills.ik_chain import LINE_STEP
from demoforge.skills.context import SkillError, SkillFailure, SkillPlan
from demoforge.skills.pick import PAD_HALF, TIP, carry_z, grasp, pinch_width
from demoforge.skills.place import other_footprints, place_on
from demoforge.tasks.families import FACES  # the domain's face constants: sign and block axis

# Grasp tilts: the hand turns through 90 degrees about k from -alpha to 90 - alpha, so a small
# alpha leans the hand little at the grasp and much at the release, a large one the other way
# round; which end the arm leans cheaply depends on where k points (along joint 6's axis, in
# the arm's vertical plane, or across it). 20 and 70 degrees (added to 30-60) took the median
# flip from 10.4 to 8.6 rad of joint travel (benchmarks/bench_motion.py); 10 and 80 gained
# 0.07 rad more for 40% more planning time.
TILTS = tuple(math.radians(a) for a in (45.0, 30.0, 60.0, 20.0, 70.0))
# Deepest reach of the built-in fingertips below the TCP at any tilt (9 mm tip, 11 mm pad
# half-width: at most 14.2 mm, at 51 degrees) plus 4 mm of clearance [m]; any gripper is
# still collision-checked.
FINGER_REACH = 0.018
OFFSET_SPREAD = 0.002  # grasp offsets are drawn from [needed, needed + this] [m]
# Tipping over: the fingertips meet the face TOP_MARGIN (plus up to PUSH_SPREAD, drawn) under
# its top edge, coming from STANDOFF in front of it, and carry it until the block has turned
# PAST_BALANCE beyond the angle where its centre of mass is over the far bottom edge.
PAST_BALANCE = math.radians(10.0)
TOP_MARGIN = 0.006  # [m]
PUSH_SPREAD = 0.002  # [m]
STANDOFF = 0.01  # [m]
PUSH_SPEED = 0.06  # fastest fingertip speed of the push [m/s]: a block hit faster tumbles on
RETREAT = 0.01  # the closed fingers rise this far after the push, clear of the fallen block [m]
TOPPLE_RISE = 0.015  # the closed fingers come straight down this far to the push's start [m]
LANDING_MARGIN = 0.01  # clearance of the landed block's footprint from other props [m]
# A block tipped over may land this far outside the workspace (the table area put-down serves),
# and never nearer the table's edge than LANDING_MARGIN: with 4 cm, blocks spawned at the
# workspace's edge were turned in the hand (7.8-11.6 rad of joint travel, not one tip) [m].
LANDING_SLACK = 0.06
REGION_BAND = 0.01  # a landing this near a region's edge counts as crossing it [m]


def face_axis(face: str) -> tuple[int, float]:
    """(block axis index, sign) of a face constant."""
    if face not in FACES:
        raise SkillError(f"flip: unknown face {face!r}; faces: {list(FACES)}")
    return "xyz".index(face[1]), 1.0 if face[0] == "p" else -1.0


def tipped(rot: np.ndarray, v: np.ndarray) -> np.ndarray:
    """world_R_block after a 90-degree tip that turns the face pointing along the level `v`
    up: a turn about v x up, the block's heading otherwise unchanged (the domain's yaw then
    moves by the static `tip_yaw` relation, demoforge.tasks.static_facts)."""
    return geo.rot_axis(np.cross(v, geo.UP), math.pi / 2) @ rot


def tip_direction(rot: np.ndarray, end: str) -> np.ndarray:
    """The level unit vector [-] that face `end` of a block at world_R_block `rot` points along."""
    i, sign = face_axis(end)
    v = sign * rot[:, i]
    v = v - v[2] * geo.UP
    return v / np.linalg.norm(v)


def _landing_clear(b: PlanBuilder, name: str, centre: np.ndarray, land: np.ndarray, radius: float) -> str:
    """Why block `name` cannot be tipped over to `land` [m] (empty when it can): another prop in
    the way, the edge of the workspace or the table, or a region edge it would cross."""
    ctx = b.ctx
    for other, c, r in other_footprints(ctx, name):
        if np.linalg.norm(land[:2] - c) < radius + r + LANDING_MARGIN:
            return f"{other!r} stands where it would land"
    x_lo, x_hi, y_lo, y_hi = ctx.workspace
    if not (x_lo - LANDING_SLACK <= land[0] <= x_hi + LANDING_SLACK and y_lo - LANDING_SLACK <= land[1] <= y_hi + LANDING_SLACK):
        return f"it would land more than {LANDING_SLACK} m outside the workspace"
    t_lo, t_hi, u_lo, u_hi = ctx.table
    edge = radius + LANDING_MARGIN
    if not (t_lo + edge <= land[0] <= t_hi - edge and u_lo + edge <= land[1] <= u_hi - edge):
        return "it would land at the table's edge"
    for region, (rx0, rx1, ry0, ry1) in sorted(ctx.regions.items()):
        inside = [rx0 - m <= p[0] <= rx1 + m and ry0 - m <= p[1] <= ry1 + m
                  for p in (centre, land) for m in (-REGION_BAND, REGION_BAND)]
        if len(set(inside)) > 1:
            return f"it would land near or across the edge of region {region!r}"
    return ""


def topple(b: PlanBuilder, name: str, args: tuple[str, ...], params: dict, pose: tuple, axes: tuple[int, int],
           v: np.ndarray, target_rot: np.ndarray) -> SkillPlan:
    """Tip block `name` over its far bottom edge by pushing face ?to (pointing along the level
    `v`) with the closed fingers, top-down, just below its top edge, until the block is past
    balance; it falls onto its face ?to-side up, one half-width plus one half-height further
    along -v. Raises Infeasible when there is no room to land or the push cannot be served."""
    ctx = b.ctx
    centre, rot, half = pose
    up_now, i_to = axes
    h_v, h_up = float(half[i_to]), float(half[up_now])
    land = centre - (h_v + h_up) * v
    land[2] = ctx.table_z + h_v
    radius = geo.footprint_radius(half, target_rot)
    why = _landing_clear(b, name, centre, land, radius)
    if why:
        raise Infeasible(SkillFailure("collision", "approach", f"{name!r} cannot be tipped over: {why}"))
    balance = math.atan2(h_v, h_up)  # the tip angle at which the centre of mass is over the far edge
    # The fingertips meet face ?to just under its top edge and then move with that point of the
    # face on its arc about the far bottom edge until the block is PAST_BALANCE beyond balance:
    # a push along the table would drag the face down through the fingers' friction and slide
    # the block instead of tipping it.
    z_c = 2.0 * h_up - TOP_MARGIN - float(b.rng.uniform(0.0, PUSH_SPREAD))  # contact height [m]
    pivot = centre - h_v * v
    pivot[2] = ctx.table_z
    finger = PAD_HALF * v + TIP * geo.UP  # TCP from the fingertips' front edge
    contact = pivot + 2.0 * h_v * v + z_c * geo.UP
    start = contact + STANDOFF * v + finger
    radius_c = math.hypot(2.0 * h_v, z_c)
    end_angle = balance + PAST_BALANCE
    n = max(2, math.ceil(radius_c * end_angle / LINE_STEP))
    arc = [pivot + (2.0 * h_v * math.cos(t) - z_c * math.sin(t)) * v + (2.0 * h_v * math.sin(t) + z_c * math.cos(t)) * geo.UP
           + finger for t in np.linspace(0.0, end_angle, n + 1)]
    lead = [start + f * (arc[0] - start) for f in np.linspace(0.0, 1.0, max(2, math.ceil(STANDOFF / LINE_STEP) + 1))[1:]]
    points = np.array(lead + arc[1:])
    end = points[-1]
    params.update(flip_mode="topple", flip_push=round(z_c, 5))
    # The closed fingers are about as deep along the pinch axis as across it (the built-in pads:
    # 24 x 22 mm), so the pinch axis may lie along or across the push: four yaws, the wrist's
    # cheapest wins.
    heading = math.atan2(v[1], v[0])
    best, last = None, None
    for psi in sorted((geo.wrap(heading + i * math.pi / 2) for i in range(4)), key=lambda a: abs(geo.wrap(a - b.neutral_yaw))):
        mark = b.mark()
        try:
            tcp = geo.down(psi)
            # Down onto the fingertips' start from just above the block's top: a transit
            # straight to it skims the top edge, and the arm lagging its targets knocks the block.
            b.descend(start, tcp, TOPPLE_RISE, ("approach", "descend"), gripper=1.0)
            b.curve(points, tcp, "reorient", exclude=(name,), max_speed=PUSH_SPEED)
            b.line(end + RETREAT * geo.UP, tcp, "retreat", exclude=(name,), gripper=0.0)
            cost = (b.travel(), b.ticks())
            if best is None or cost < best[0]:
                best = (cost, b.snapshot())
        except Infeasible as exc:
            last = exc
        b.rollback(mark)
    if best is None:
        raise last
    b.restore(best[1])
    return b.plan("flip", args, params, (*land.tolist(), *geo.quat(target_rot).tolist()))


def flip(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(flip ?x ?from ?to): see the module docstring."""
    name, start, end = args
    (i_from, _), (i_to, _) = face_axis(start), face_axis(end)
    if i_from == i_to:
        raise SkillError(f"flip: {start} -> {end} is not a 90-degree tip (adjacent faces); pick faces on different axes")
    centre, rot, half = geo.block(b.ctx, name)
    up_now, up_sign = geo.up_axis(rot)
    face_now = ("p" if up_sign > 0 else "n") + "xyz"[up_now]
    if face_now != start:
        raise Infeasible(SkillFailure("precondition", "approach", (
            f"{name!r} rests with face {face_now} up, not {start}")))
    v = tip_direction(rot, end)
    k = np.cross(v, geo.UP)
    target_rot = tipped(rot, v)
    if b.ctx.settings.flip_mode == "in_hand":
        params.update(flip_mode="in_hand")
    else:
        mark = b.mark()
        try:
            return topple(b, name, args, params, (centre, rot, half), (up_now, i_to), v, target_rot)
        except Infeasible as exc:  # no room to tip it over, or the push cannot be served: in the hand
            b.rollback(mark)
            params.clear()
            params.update(flip_mode="in_hand", flip_topple_refused=exc.failure.message)
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

    def put_back(draw, pos, tcp_rot):
        grip = (tcp_rot.T @ (centre - pos), tcp_rot.T @ rot)
        return place_on(b, name, centre[:2], b.ctx.table_z, 0.0, carry_phase="reorient", grip=grip,
                        block_rot=target_rot)

    (draw, _, _), (target, target_rot) = grasp(b, name, candidates, lift_z=carry_z(b, name, pos), then=put_back,
                                               shortest=True)
    params.update(draw)
    return b.plan("flip", args, params, (*target.tolist(), *geo.quat(target_rot).tolist()))
