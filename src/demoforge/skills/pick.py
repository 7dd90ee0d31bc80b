"""pick-up and unstack: approach, descend, close, lift.

Expected geometric effect: the block is pinched between both fingers, its pose fixed
relative to the TCP, and lifted `approach_height` (at most to `carry_clearance` above the
highest other prop); the block it stood on (unstack) or the table (pick-up) is left where it
was.

Motion: a transit to the pre-grasp pose `approach_height` above the grasp (planned around
obstacles when the straight joint path collides) with the fingers wide open, or, when they
would touch a close neighbour, open only as wide as the block plus PREGRASP_CLEARANCE (so
the nearest grasp needs no wrist turn), a straight Cartesian descent, closing, and a straight
Cartesian lift as high as the descent (the carry that follows climbs to the carry height on its
way, its held block kept `carry_clearance` over what it crosses: `place.place`). Lifting
straight to the carry height over a tower elsewhere cost the elbow 1.0-1.5 rad next to the
base.

Grasp choice: among the block's symmetric top-down grasps (pinch axis along one of its
horizontal face normals, both directions: four for a cube; yaw within 135 degrees of the
wrist's mid-range) the one whose approach costs the least joint travel (to the nearest IK
solution, plus the straight lift from it) is tried first, the smallest turn of the last joint
first among equals. Next to the robot's base a vertical hand cannot rise straight (the elbow
folds onto its limit), so there a grasp whose pinch axis is near tangential is also offered
leaning 25 or 40 degrees about the pinch axis towards the base, which moves the wrist out.
Where a neighbour stands a finger's width off along the pinch axis, the fingers open to the
block's width plus TIGHT_CLEARANCE, and a grasp whose approach hits something is tried again
with its point moved along the pinch axis (at most `grasp_xy_offset`, away from the nearest
prop in line first: `grasp_pinch_shift` in the plan), then higher on the block (RAISES, at
most to its top: `grasp_raise`; beside a taller neighbour it is the hand above the fingers
that hits) before the next yaw. Draws: the grasp point's height above the block centre and
small offsets along the two face axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from demoforge.skills import geometry as geo
from demoforge.skills.builder import Infeasible, PlanBuilder
from demoforge.skills.context import SkillFailure, SkillPlan

# Largest grasp yaw away from the wrist's mid-range; a block square to the table has a grasp at
# exactly 135 degrees, which float noise must not drop (it can be the wrist's smaller turn).
MAX_TWIST = math.radians(135.0) + 1e-3
PINCH_CLEARANCE = 0.015  # finger opening beyond the block width [m]
PREGRASP_CLEARANCE = 0.015  # opening of the approaching fingers beyond the block's width along the pinch [m]
FLANK = 0.06  # a prop this close to the pinch axis's line through the block [m] is in line with the fingers
TIGHT_CLEARANCE = 0.008  # the same, where a neighbour leaves no room for PREGRASP_CLEARANCE [m]
RAISES = (0.01, 0.025)  # how much higher a grasp whose hand hits a neighbour is tried again, at most to the block's top [m]
# Near the robot's base a vertical hand folds the elbow onto its limit and cannot rise
# straight; leaning the hand about the pinch axis, its approach axis towards the base, moves
# the wrist out. Each yaw whose pinch axis is within 45 degrees of tangential also gets
# these tilts as candidates.
TILTS = (math.radians(25.0), math.radians(40.0))
# Lowest point of the built-in fingertips below the TCP at a tilt t: the 9 mm tip along the
# approach axis and the 11 mm pad half-width across it, plus 4 mm of clearance [m].
TIP, PAD_HALF, TIP_CLEARANCE = 0.009, 0.011, 0.004
FORCED_TURN_MARGIN = math.radians(5.0)  # a grasp turning the hand this much less counts as a smaller turn [rad]
BROKEN_LINE = 3.0  # cost [rad] charged for a candidate whose straight lift breaks or detours


def finger_stroke(b: PlanBuilder) -> float:
    """Fingertip opening from closed to fully open [m]: the card's `finger_stroke_m`, else the
    finger joints' travel summed (slide fingers)."""
    robot = b.ctx.robot
    stroke = robot.card.finger_stroke_m
    return float(np.sum(np.abs(robot.finger_open - robot.finger_closed))) if stroke is None else float(stroke)


def pinch_width(b: PlanBuilder) -> float:
    """Widest block [m] the open fingers can straddle."""
    return finger_stroke(b) - PINCH_CLEARANCE


def pregrasp_closedness(b: PlanBuilder, name: str, tcp_rot: np.ndarray, clearance: float = PREGRASP_CLEARANCE) -> float:
    """Gripper closedness [0 open, 1 closed] whose opening spans block `name` along the pinch
    axis of `tcp_rot` plus `clearance` [m]: the fingers open only as wide as the grasp needs,
    so they fit between neighbouring blocks (the opening is taken as linear in closedness, as in
    `pinch_width`)."""
    _, rot, half = geo.block(b.ctx, name)
    width = 2.0 * float(np.abs(rot.T @ tcp_rot[:, 1]) @ half)
    stroke = finger_stroke(b)
    return float(np.clip(1.0 - (width + clearance) / stroke, 0.0, 1.0))


def approach(b: PlanBuilder, name: str, pos: np.ndarray, rot: np.ndarray) -> None:
    """Transit above the grasp (`pos`, `rot`) and descend to it with the fingers wide open (the
    widest margin for a learned policy that imitates this), or, when the open fingers would touch
    a neighbour on the way, opened only as wide as the block needs (`pregrasp_closedness`), so
    the nearest grasp is kept instead of one turned 90 degrees."""
    above, phases, narrow = b.ctx.settings.approach_height, ("approach", "descend"), pregrasp_closedness(b, name, rot)
    mark, detours = b.mark(), b.detours
    try:
        b.descend(pos, rot, above, phases, gripper=0.0)
    except Infeasible as exc:
        if exc.failure.kind != "collision" or narrow <= 0.0:
            raise
        b.rollback(mark)
        try:
            b.descend(pos, rot, above, phases, gripper=narrow)
        except Infeasible as tighter:
            # A gap narrower than a finger plus the clearance: closer to the block's faces still,
            # before a grasp turned a quarter turn is tried.
            tight = pregrasp_closedness(b, name, rot, TIGHT_CLEARANCE)
            if tighter.failure.kind != "collision" or tight <= narrow:
                raise
            b.rollback(mark)
            b.descend(pos, rot, above, phases, gripper=tight)
        return
    if b.detours == detours or narrow <= 0.0:
        return
    # The open fingers forced a detour around a neighbour: narrower fingers may go straight.
    wide, wide_travel = b.snapshot(), b.travel()
    b.rollback(mark)
    try:
        b.descend(pos, rot, above, phases, gripper=narrow)
        if b.travel() < wide_travel:
            return
    except Infeasible:
        pass
    b.restore(wide)


def grasp(b: PlanBuilder, name: str, candidates: list[tuple[dict, np.ndarray, np.ndarray]], *,
          lift_z: float, then: Callable[[dict, np.ndarray, np.ndarray], object] | None = None,
          shortest: bool = False):
    """Approach, descend, close and lift with the first feasible candidate.

    A candidate is (draw record, TCP position [m], world_R_tcp at the grasp). The approach
    comes straight down from `approach_height` above; the lift goes straight up until
    the TCP is at `lift_z` [m]. `then(candidate...)` plans what follows the lift (a
    placement); when it is infeasible the next candidate is tried. Returns (candidate, what
    `then` returned). With `shortest`, every candidate is planned and the one whose
    joints travel least wins (then the shortest in time, then the first). Where every grasp
    turning the hand less could not be planned, the draw returned records the turn as forced
    (`_forced`)."""
    s = b.ctx.settings
    last: SkillFailure | None = None
    best = None
    heading = pinch_heading(b, b.q)
    turns = [abs(geo.wrap(_heading(rot) - heading)) for _, _, rot in candidates]
    tried, planned = set(), set()  # indices into candidates: tried, planned whole (shifted or raised variants included)
    # (candidate, whether a shifted one may follow, its index in candidates)
    tries = [(c, True, i) for i, c in reversed(list(enumerate(candidates)))]
    while tries:
        (draw, pos, rot), first, index = tries.pop()
        tried.add(index)  # its variants come next: a later candidate's try means they all failed
        mark = b.mark()
        try:
            # From straight above, whatever the tilt: the open fingers flank the block along the
            # pinch axis, and the pre-grasp pose stays inside the arm's reach.
            approach(b, name, pos, rot)
            b.hold(s.close_s, "close", 1.0)
            centre, block_rot, _ = geo.block(b.ctx, name)
            b.held = (name, rot.T @ (centre - pos), rot.T @ block_rot)
            lift_end = lift_z + draw.get("grasp_raise", 0.0)  # a raised grasp holds the block lower: lift as much more
            b.line(np.array([pos[0], pos[1], max(lift_end, pos[2])]), rot, "lift", exclude=(name,))
            result = ((draw, pos, rot), (then(draw, pos, rot) if then is not None else None))
            planned.add(index)
            if not shortest:
                return _forced(result, index, turns, tried - planned)
            cost = (b.travel(), b.ticks())
            if best is None or cost < best[0]:
                best = (cost, result, b.snapshot(), index)
            b.rollback(mark)
        except Infeasible as exc:
            b.rollback(mark)
            last = exc.failure
            if first and last.kind == "collision" and last.phase in ("approach", "descend"):
                variants = _shifted(b, name, draw, pos, rot) + _raised(b, name, draw, pos, rot)
                tries += [(c, False, index) for c in reversed(variants)]
    if best is not None:
        b.restore(best[2])
        return _forced(best[1], best[3], turns, tried - planned)
    if last is None:
        raise Infeasible(SkillFailure("ik", "approach", f"block {name!r} offers no grasp the gripper can open around"))
    raise Infeasible(last)


def _heading(tcp_rot: np.ndarray) -> float:
    """Heading [rad] of the pinch axis (the TCP's y axis) about the vertical."""
    return math.atan2(tcp_rot[1, 1], tcp_rot[0, 1])


def _forced(result, index: int, turns: list[float], refused: set[int]):
    """`result` of `grasp` with candidate `index`, its draw also recording `grasp_forced_turn`
    [rad] (the pinch axis's turn from the hand's heading to this grasp) when every candidate
    whose turn is smaller by FORCED_TURN_MARGIN is among the `refused` (tried, variants included,
    and none planned whole): a turn the scene forces (benchmarks/bench_motion counts it as
    needed), not one the grasp choice makes."""
    smaller = {j for j, t in enumerate(turns) if t < turns[index] - FORCED_TURN_MARGIN}
    if not smaller or not smaller <= refused:
        return result
    (draw, pos, rot), then = result
    return ({**draw, "grasp_forced_turn": turns[index]}, pos, rot), then


def _shifted(b: PlanBuilder, name: str, draw: dict, pos: np.ndarray, rot: np.ndarray) -> list:
    """The grasp (`draw`, `pos`, `rot`) with its point moved along the pinch axis as far as
    `grasp_xy_offset` allows, first away from the nearest other prop along that axis, then
    towards it: tried when the approach hit something, since a finger that just touches a
    neighbour a finger's width away fits beside it a millimetre or two further off, where the
    next grasp, a quarter turn round, would cost the wrist 90 degrees."""
    centre, _, _ = geo.block(b.ctx, name)
    axis = rot[:, 1]
    along = float((pos - centre) @ axis)
    sides = []
    for other, body in b.ctx.props.items():
        v = (b.ctx.data.xpos[body] - centre)[:2]
        a = float(v @ axis[:2])
        if other != name and np.linalg.norm(v - a * axis[:2]) < FLANK:  # in line with the fingers
            sides.append(a)
    nearest = min(sides, key=abs, default=1.0)
    out = []
    for sign in (-1.0, 1.0):
        shift = sign * math.copysign(b.ctx.settings.grasp_xy_offset, nearest or 1.0) - along
        out.append(({**draw, "grasp_pinch_shift": shift}, pos + shift * axis, rot))
    return out


def _raised(b: PlanBuilder, name: str, draw: dict, pos: np.ndarray, rot: np.ndarray) -> list:
    """The grasp (`draw`, `pos`, `rot`) with its point RAISES higher on the block, at most at the
    block's top (the pads then hold its upper 2.7 cm): tried when the approach hit something,
    after `_shifted`, since beside a taller neighbour (the tower just built) it is the hand
    above the fingers that hits it."""
    centre, rot_b, half = geo.block(b.ctx, name)
    room = float(centre[2] + geo.vertical_half(rot_b, half) - pos[2])  # up to the block's top
    raises = sorted({round(min(r, room), 4) for r in RAISES if room > 0})
    return [({**draw, "grasp_raise": r}, pos + r * geo.UP, rot) for r in raises]


def top_down_candidates(b: PlanBuilder, name: str, params: dict, *, turn: float = 0.0, rise: float = 0.0):
    """Top-down grasps of `name` (and, for pinch axes near tangential, grasps leaning by
    TILTS towards the base) whose yaw, and yaw + `turn` [rad], stay within MAX_TWIST of the
    wrist's mid-range; draws the grasp offsets into `params`. Ordered by `approach_cost`
    (the straight line checked `rise` [m] up), the smallest turn of the last joint (to 0.1
    rad) first among equals."""
    s = b.ctx.settings
    centre, rot, half = geo.block(b.ctx, name)
    yaws = allowed_yaws(b, rot, half, turn)
    yaw_now = pinch_heading(b, b.q)
    order = sorted(range(len(yaws)), key=lambda i: abs(geo.wrap(yaws[i][0] - yaw_now)))
    dz = float(b.rng.uniform(*s.grasp_z_offset))
    dx, dy = (float(v) for v in b.rng.uniform(-s.grasp_xy_offset, s.grasp_xy_offset, 2))
    params.update(grasp_z_offset=dz, grasp_xy_offset=[dx, dy])
    radial = centre[:2] - b.ctx.data.xpos[b.ctx.robot.body_ids[0]][:2]
    radial /= max(float(np.linalg.norm(radial)), 1e-9)
    half_up = geo.vertical_half(rot, half)
    rise = max(rise, s.approach_height)
    out = []
    for i in order:
        psi = yaws[int(i)][0]
        top = geo.down(psi)
        for tilt in (0.0, *TILTS):
            tcp = top
            if tilt:
                if out and out[-1][1]:
                    break  # the vertical hand rises straight: no need to lean
                if abs(float(top[:2, 1] @ radial)) > math.sqrt(0.5):
                    continue  # the pinch axis points at the base: leaning about it does not help
                tcp = geo.rot_axis(top[:, 1], tilt) @ top
                if float(tcp[:2, 2] @ radial) > 0:
                    tcp = geo.rot_axis(top[:, 1], -tilt) @ top
            # A leaning hand dips one end of its pads: the grasp point rises to keep them off the table.
            lift = max(dz, TIP * math.cos(tilt) + PAD_HALF * math.sin(tilt) + TIP_CLEARANCE - half_up) if tilt else dz
            pos = centre + lift * geo.UP + dx * top[:, 0] + dy * top[:, 1]
            draw = {"grasp_yaw": psi} if not tilt else {"grasp_yaw": psi, "grasp_tilt": tilt}
            cost, smooth, wrist = approach_cost(b, pos, tcp, rise)
            out.append(((cost, round(wrist, 1)), smooth and not tilt, (draw, pos, tcp)))
    return [c for _, _, c in sorted(out, key=lambda x: x[0])]  # stable: equals keep the yaw order


def allowed_yaws(b: PlanBuilder, rot: np.ndarray, half: np.ndarray, turn: float = 0.0) -> list[tuple[float, float]]:
    """(pinch yaw [rad], block width along it [m]) of the top-down grasps of a block at
    world_R_block `rot` with half sizes `half` whose yaw, and yaw + `turn` [rad], stay within
    MAX_TWIST of the wrist's mid-range."""
    n = b.neutral_yaw
    return [(psi, w) for psi, w in geo.pinch_yaws(rot, half, pinch_width(b))
            if abs(geo.wrap(psi - n)) <= MAX_TWIST and abs(geo.wrap(psi + turn - n)) <= MAX_TWIST]


def pinch_heading(b: PlanBuilder, q: np.ndarray) -> float:
    """Heading [rad] of the pinch axis about the vertical at arm joints `q`."""
    return _heading(b.tcp_pose(q)[1])


def approach_cost(b: PlanBuilder, pos: np.ndarray, rot: np.ndarray, rise: float) -> tuple[float, bool, float]:
    """(joint travel [rad] (sum over joints, rounded to 0.25 rad) from the current targets to
    the nearest IK solution of the TCP pose, plus that of the straight line `rise` [m] up
    from it (BROKEN_LINE where the line breaks or detours), whether the line is smooth, the
    last joint's turn to that solution [rad]); (inf, False, inf) when there is no solution."""
    try:
        q = b.ik(pos, rot, "approach")
    except Infeasible:
        return math.inf, False, math.inf
    path, smooth = b.line_path(pos + rise * geo.UP, rot, start=q)
    line = float(np.abs(np.diff(path, axis=0)).sum()) if smooth else BROKEN_LINE
    return round((float(np.abs(q - b.q).sum()) + line) * 4) / 4, smooth, abs(float(q[-1] - b.q[-1]))


def carry_z(b: PlanBuilder, name: str, grasp_pos: np.ndarray | None = None) -> float:
    """TCP height [m] that keeps the held block `carry_clearance` above every other prop:
    whatever its orientation in the hand when grasped at `grasp_pos` [m] (a block that turns
    while carried); else (`grasp_pos` None, a block carried as it stands, grasped at most the
    highest grasp offset above its centre) from its lowest point as it stands."""
    centre, rot, half = geo.block(b.ctx, name)
    if grasp_pos is None:
        reach = b.ctx.settings.grasp_z_offset[1] + geo.vertical_half(rot, half)
    else:
        reach = float(np.linalg.norm(grasp_pos - centre) + np.linalg.norm(half))
    return geo.top_z(b.ctx, exclude=(name,)) + b.ctx.settings.carry_clearance + reach


def pick(b: PlanBuilder, name: str, args: tuple[str, ...], params: dict, *, skill: str) -> SkillPlan:
    s = b.ctx.settings
    centre, _, _ = geo.block(b.ctx, name)
    lift_z = min(carry_z(b, name), float(centre[2]) + s.grasp_z_offset[1] + s.approach_height)  # the carry climbs
    candidates = top_down_candidates(b, name, params, rise=lift_z - float(centre[2]))
    (draw, _, _), _ = grasp(b, name, candidates, lift_z=lift_z)
    params.update(draw)
    return b.plan(skill, args, params)


def pick_up(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(pick-up ?x): see the module docstring."""
    return pick(b, args[0], args, params, skill="pick-up")


def unstack(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(unstack ?x ?y): pick ?x off ?y with pick-up's motion; ?y must name a block."""
    geo.block(b.ctx, args[1])
    return pick(b, args[0], args, params, skill="unstack")
