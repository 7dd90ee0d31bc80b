"""pick-up and unstack: approach, descend, close, lift.

Expected geometric effect: the block is pinched between both fingers, its pose fixed
relative to the TCP, and lifted so its bottom is `carry_clearance` above the highest
other prop; the block it stood on (unstack) or the table (pick-up) is left where it was.

Motion: a transit to the pre-grasp pose `approach_height` above the grasp (planned around
obstacles when the straight joint path collides), a straight Cartesian descent, closing,
and a straight Cartesian lift.

Grasp choice: among the block's symmetric top-down grasps (pinch axis along one of its
horizontal face normals, both directions: four for a cube; yaw within 135 degrees of the
wrist's mid-range) the one needing the smallest wrist turn from the hand's yaw now is tried
first, then the next smallest. Draws: the grasp point's height above the block centre and
small offsets along the two face axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from demoforge.skills import geometry as geo
from demoforge.skills.builder import Infeasible, PlanBuilder
from demoforge.skills.context import SkillFailure, SkillPlan

MAX_TWIST = math.radians(135.0)  # largest grasp yaw away from the wrist's mid-range
PINCH_CLEARANCE = 0.015  # finger opening beyond the block width [m]


def pinch_width(b: PlanBuilder) -> float:
    """Widest block [m] the open fingers can straddle."""
    robot = b.ctx.robot
    return float(np.sum(np.abs(robot.finger_open - robot.finger_closed))) - PINCH_CLEARANCE


def grasp(b: PlanBuilder, name: str, candidates: list[tuple[dict, np.ndarray, np.ndarray]], *,
          lift_z: float, then: Callable[[dict, np.ndarray, np.ndarray], object] | None = None,
          shortest: bool = False):
    """Approach, descend, close and lift with the first feasible candidate.

    A candidate is (draw record, TCP position [m], world_R_tcp at the grasp). The approach
    comes straight down from `approach_height` above; the lift goes straight up until
    the TCP is at `lift_z` [m]. `then(candidate...)` plans what follows the lift (a
    placement); when it is infeasible the next candidate is tried. Returns (candidate, what
    `then` returned). With `shortest`, every candidate is planned and the one whose
    joints travel least wins (then the shortest in time, then the first)."""
    s = b.ctx.settings
    last: SkillFailure | None = None
    best = None
    for draw, pos, rot in candidates:
        mark = b.mark()
        try:
            # From straight above, whatever the tilt: the open fingers flank the block along the
            # pinch axis, and the pre-grasp pose stays inside the arm's reach.
            b.descend(pos, rot, s.approach_height, ("approach", "descend"), gripper=0.0)
            b.hold(s.close_s, "close", 1.0)
            centre, block_rot, _ = geo.block(b.ctx, name)
            b.held = (name, rot.T @ (centre - pos), rot.T @ block_rot)
            b.line(np.array([pos[0], pos[1], max(lift_z, pos[2])]), rot, "lift", exclude=(name,))
            result = ((draw, pos, rot), (then(draw, pos, rot) if then is not None else None))
            if not shortest:
                return result
            cost = (b.travel(), b.ticks())
            if best is None or cost < best[0]:
                best = (cost, result, b.snapshot())
            b.rollback(mark)
        except Infeasible as exc:
            b.rollback(mark)
            last = exc.failure
    if best is not None:
        b.restore(best[2])
        return best[1]
    if last is None:
        raise Infeasible(SkillFailure("ik", "approach", f"block {name!r} offers no grasp the gripper can open around"))
    raise Infeasible(last)


def top_down_candidates(b: PlanBuilder, name: str, params: dict, *, turn: float = 0.0):
    """Top-down grasps of `name` whose yaw, and yaw + `turn` [rad], stay within MAX_TWIST of
    the wrist's mid-range, the smallest wrist turn from the hand's yaw now first; draws the
    grasp offsets into `params`."""
    s = b.ctx.settings
    centre, rot, half = geo.block(b.ctx, name)
    yaws = [(psi, w) for psi, w in geo.pinch_yaws(rot, half, pinch_width(b))
            if abs(geo.wrap(psi - b.neutral_yaw)) <= MAX_TWIST and abs(geo.wrap(psi + turn - b.neutral_yaw)) <= MAX_TWIST]
    _, tcp_now = b.tcp_pose(b.q)
    yaw_now = math.atan2(tcp_now[1, 1], tcp_now[0, 1])  # heading of the pinch axis now
    order = sorted(range(len(yaws)), key=lambda i: abs(geo.wrap(yaws[i][0] - yaw_now)))
    dz = float(b.rng.uniform(*s.grasp_z_offset))
    dx, dy = (float(v) for v in b.rng.uniform(-s.grasp_xy_offset, s.grasp_xy_offset, 2))
    params.update(grasp_z_offset=dz, grasp_xy_offset=[dx, dy])
    out = []
    for i in order:
        psi = yaws[int(i)][0]
        tcp = geo.down(psi)
        pos = centre + dz * geo.UP + dx * tcp[:, 0] + dy * tcp[:, 1]
        out.append((reach_cost(b, pos, tcp), ({"grasp_yaw": psi}, pos, tcp)))
    # Near the base a yaw can need the arm to fold through another branch: the joint travel
    # to the grasp decides, the wrist turn breaks ties (the sort is stable).
    return [c for _, c in sorted(out, key=lambda x: x[0])]


def reach_cost(b: PlanBuilder, pos: np.ndarray, rot: np.ndarray) -> float:
    """Joint travel [rad] (sum over joints, rounded to 0.25 rad) from the current targets to
    the nearest IK solution of the TCP pose; inf when there is none."""
    try:
        q = b.ik(pos, rot, "approach")
    except Infeasible:
        return math.inf
    return round(float(np.abs(q - b.q).sum()) * 4) / 4


def carry_z(b: PlanBuilder, name: str, grasp_pos: np.ndarray) -> float:
    """TCP height [m] that keeps the held block `carry_clearance` above every other prop,
    whatever its orientation in the hand."""
    centre, _, half = geo.block(b.ctx, name)
    reach = float(np.linalg.norm(grasp_pos - centre) + np.linalg.norm(half))
    return geo.top_z(b.ctx, exclude=(name,)) + b.ctx.settings.carry_clearance + reach


def pick(b: PlanBuilder, name: str, args: tuple[str, ...], params: dict, *, skill: str) -> SkillPlan:
    centre, _, _ = geo.block(b.ctx, name)
    candidates = top_down_candidates(b, name, params)
    (draw, _, _), _ = grasp(b, name, candidates, lift_z=carry_z(b, name, centre))
    params.update(draw)
    return b.plan(skill, args, params)


def pick_up(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(pick-up ?x): see the module docstring."""
    return pick(b, args[0], args, params, skill="pick-up")


def unstack(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(unstack ?x ?y): pick ?x off ?y with pick-up's motion; ?y must name a block."""
    geo.block(b.ctx, args[1])
    return pick(b, args[0], args, params, skill="unstack")
