"""A task package written only against `demoforge.taskapi`: a new predicate, a new operator and a
family, over the blocks world's box objects.

    demoforge tasks list --task-package examples/tasks/near/near_task.py
    demoforge tasks gen near_pair --task-package examples/tasks/near/near_task.py --problems 4 --task-seed 0 --out t
    demoforge generate t/*.pddl --domain near --task-package examples/tasks/near/near_task.py \\
        --episodes-per-problem 1 --out raw

- `(near ?x ?y)`: both blocks rest on the table, not held, centres within NEAR_M [m].
- `place-near ?x ?y`: pick ?x (the blocks skills' grasp search) and put it down upright beside ?y,
  at a direction drawn from the skill's generator, GAP [m] between their footprints and more than
  NEAR_M from every other block; a direction the arm cannot serve is drawn again.
- family `near_pair`: two blocks apart on the table; the goal puts the first beside the second.
"""

import math
from pathlib import Path

import numpy as np

from demoforge import taskapi as T

NEAR_M = 0.12  # largest centre distance of two blocks that are near each other [m]
GAP = 0.03  # footprint gap place-near leaves between the blocks (room for the opening fingers) [m]
DIRECTIONS = 12  # directions drawn around ?y before place-near gives up


def near(geo: T.Geometry, binding: T.Binding, x: str, y: str) -> bool:
    """(near ?x ?y) in one state."""
    if x == y:
        return False
    i, j = geo.index[x], geo.index[y]
    resting = all(geo.on_table_geom[k] and not geo.held[k] and geo.speed[k] <= binding.tolerances.rest_speed_mps
                  for k in (i, j))
    return bool(resting and np.linalg.norm(geo.pos[i, :2] - geo.pos[j, :2]) <= NEAR_M)


def _spot_beside(b: T.PlanBuilder, name: str, other: str) -> np.ndarray:
    """A table point [m] GAP beside `other`'s footprint, inside the workspace, clear of every other block."""
    ctx = b.ctx
    _, rot, half = T.geometry.block(ctx, name)
    radius = T.geometry.footprint_radius(half, rot)
    beside, _, _ = T.geometry.block(ctx, other)
    others = {n: (c, r) for n, c, r in T.other_footprints(ctx, name)}
    distance = radius + others[other][1] + GAP
    x_lo, x_hi, y_lo, y_hi = ctx.workspace
    angle = b.rng.uniform(0.0, 2 * math.pi)
    xy = beside[:2] + distance * np.array([math.cos(angle), math.sin(angle)])
    inside = x_lo + radius <= xy[0] <= x_hi - radius and y_lo + radius <= xy[1] <= y_hi - radius
    apart = all(np.linalg.norm(xy - c) > max(NEAR_M, radius + r + ctx.settings.free_spot_margin)
                for n, (c, r) in others.items() if n != other)
    if not (inside and apart):
        raise T.Infeasible(T.SkillFailure("collision", "carry", f"no room beside {other!r} at {math.degrees(angle):.0f} deg"))
    return xy


def place_near(b: T.PlanBuilder, args: tuple[str, ...], params: dict) -> T.SkillPlan:
    """(place-near ?x ?y): see the module docstring."""
    name, other = args
    centre, rot, _ = T.geometry.block(b.ctx, name)
    candidates = T.top_down_candidates(b, name, params)

    def put_beside(draw, pos, tcp_rot):
        grip = (tcp_rot.T @ (centre - pos), tcp_rot.T @ rot)  # the block keeps its pose in the hand
        last = None
        for _ in range(DIRECTIONS):
            mark = b.mark()
            try:
                xy = _spot_beside(b, name, other)
                target = T.place_on(b, name, xy, b.ctx.table_z, 0.0, grip=grip, block_rot=rot)
            except T.Infeasible as exc:
                b.rollback(mark)
                last = exc
                continue
            params.update(near_xy=xy.tolist())
            return target
        raise last

    (draw, _, _), (target, target_rot) = T.grasp(b, name, candidates, lift_z=T.carry_z(b, name), then=put_beside)
    params.update(draw)
    return b.plan("place-near", args, params, (*target.tolist(), *T.geometry.quat(target_rot).tolist()))


def near_pair(blocks: list[str], rng: np.random.Generator) -> tuple[list, list]:
    """Every task block upright on the table; the goal: the first beside the second."""
    init = [a for x in blocks for a in (("on_table", x), ("clear", x), ("face_up", x, "pz"), ("yaw", x, "yaw0"))]
    return init, [("near", blocks[0], blocks[1])]


PACKAGE = T.TaskPackage(
    name="near",
    domain=Path(__file__).with_name("near.pddl"),
    skills={"place-near": T.Skill("place-near", ("?x", "?y"), place_near)},
    predicates={"near": T.Predicate(("block", "block"), near)},
    families={"near_pair": T.Family(default_n=2, min_n=2, build=near_pair)},
)
