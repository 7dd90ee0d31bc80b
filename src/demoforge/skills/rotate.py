"""rotate: turn a block on the table 90 degrees about the vertical, in place.

Expected geometric effect: the block rests on the table at the same centre x, y (no
offset is drawn, so region membership is kept), the same face up, its yaw changed by
+90 degrees (counter-clockwise seen from above) when ?to is the next yaw_step after ?from
(yaw0 -> yaw90 -> yaw180 -> yaw270 -> yaw0) and by -90 degrees the other way.

Motion: a top-down grasp (pick-up's draws, restricted to yaws from which the wrist can
also turn by the step), a lift of LIFT (just off the table, so it does not rub while it
turns), the turn while lifted, lowering back, opening, and a retreat straight up.
"""

from __future__ import annotations

import math

from demoforge.skills import geometry as geo
from demoforge.skills.builder import PlanBuilder
from demoforge.skills.context import SkillContext, SkillError, SkillPlan
from demoforge.skills.pick import allowed_yaws, grasp, pinch_heading, top_down_candidates
from demoforge.skills.place import place_on

ANGLES = ("yaw0", "yaw90", "yaw180", "yaw270")  # the domain's angle constants, 90 degrees apart
LIFT = 0.01  # height [m] the block is turned at: off the table, every extra centimetre is joint travel
WRIST_ROOM = math.radians(10.0)  # a half turn's last-joint end keeps this far inside the joint's limits [rad]


def turn_of(start: str, end: str) -> float:
    """+-pi/2 [rad]: the turn from angle constant `start` to its yaw_step neighbour `end`."""
    bad = [a for a in (start, end) if a not in ANGLES]
    if bad:
        raise SkillError(f"rotate: unknown angle {bad[0]!r}; angles: {list(ANGLES)}")
    steps = (ANGLES.index(end) - ANGLES.index(start)) % 4
    if steps not in (1, 3):
        raise SkillError(f"rotate: {start} -> {end} is not one 90-degree step (yaw_step); pick neighbouring angles")
    return math.pi / 2 if steps == 1 else -math.pi / 2


def rotate(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(rotate ?x ?from ?to): see the module docstring."""
    name, start, end = args
    turn = turn_of(start, end)
    centre, rot, _ = geo.block(b.ctx, name)
    candidates = top_down_candidates(b, name, params, turn=turn)
    lift = LIFT

    def put_back(draw, pos, tcp_rot):
        # The block is expected to keep its pose in the hand from the grasp on.
        grip = (tcp_rot.T @ (centre - pos), tcp_rot.T @ rot)
        return place_on(b, name, centre[:2], b.ctx.table_z, turn, above=lift, carry_phase="reorient",
                        grip=grip, block_rot=rot, clearance=0.0)

    (draw, _, _), (target, target_rot) = grasp(b, name, candidates, lift_z=float(centre[2]) + lift, then=put_back)
    params.update(draw)
    return b.plan("rotate", args, params, (*target.tolist(), *geo.quat(target_rot).tolist()))


def half_turn_way(ctx: SkillContext, first: tuple[str, tuple[str, ...]],
                  second: tuple[str, tuple[str, ...]]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The arguments of (rotate ?x ?from ?mid)(rotate ?x ?mid ?to) the other way round, when the
    operators `first` and `second` ((name, args) each) are such a half turn of one block and
    only the other way lets the wrist make both quarter turns in one grasp from the arm's
    targets now; None to keep them."""
    (op1, a1), (op2, a2) = first, second
    if op1 != "rotate" or op2 != "rotate" or a1[0] != a2[0] or a1[2] != a2[1]:
        return None
    turn = turn_of(a1[1], a1[2])
    if turn_of(a2[1], a2[2]) != turn:
        return None
    b = PlanBuilder(ctx, rng=None)  # kinematics only: nothing is drawn
    if _wrist_fits(b, a1[0], turn) or not _wrist_fits(b, a1[0], -turn):
        return None
    mid = ANGLES[(ANGLES.index(a1[1]) - (1 if turn > 0 else -1)) % 4]
    return (a1[0], a1[1], mid), (a1[0], mid, a2[2])


def _wrist_fits(b: PlanBuilder, name: str, turn: float) -> bool:
    """Whether the grasp of block `name` a rotate by `turn` [rad] would take (the allowed
    yaw nearest the hand's now) turns by 2 * `turn` with the last arm joint WRIST_ROOM inside
    its limits."""
    _, rot, half = geo.block(b.ctx, name)
    yaws = [psi for psi, _ in allowed_yaws(b, rot, half, turn)]
    if not yaws:
        return False
    now = pinch_heading(b, b.q)
    psi = min(yaws, key=lambda y: abs(geo.wrap(y - now)))
    # The sense in which the last joint turns the pinch axis about the vertical (the hand points down).
    nudged = b.q.copy()
    nudged[-1] += 0.1
    sense = math.copysign(1.0, geo.wrap(pinch_heading(b, nudged) - now))
    end = float(b.q[-1]) + sense * (geo.wrap(psi - now) + 2 * turn)
    lo, hi = (float(v) for v in b.ctx.robot.limits[-1])
    return lo + WRIST_ROOM <= end <= hi - WRIST_ROOM

