"""put-down and stack: carry, lower to the target height, open, retreat.

The carry climbs from the pick-up's low lift on its way to the point over the target (a
straight joint path, or one planned around), the held block checked `carry_clearance` lower
so it passes at least that high over whatever it crosses.

Expected geometric effect: the held block rests upright (its up face as it was in the
hand, snapped exactly vertical) with its bottom on the support (`place_gap` above it at
release, so it drops a few millimetres), the gripper open and the TCP `retreat_height`
straight above the release pose.

- stack ?x ?y: ?x centred on ?y's top face within `place_xy_offset`, its yaw turned to
  match ?y's faces (the smallest turn, at most 45 degrees) so towers stay flush.
- put-down ?x: on the table at a free spot of the context's workspace, its footprint
  `free_spot_margin` clear of every other prop and outside every region (so no in_region
  fact appears by accident); yaw unchanged. The spot is drawn uniformly (`put_down_spot`
  "uniform", the default) or is the first free one of a fixed scan around where ?x was picked
  ("nearest": `nearest_spots`, no draw).

Draws: the placement offset (stack) or the free spot (put-down; redrawn, or the scan's next
spot, when the arm cannot serve it, up to `place_tries` spots).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from demoforge.skills import geometry as geo
from demoforge.skills.builder import Infeasible, PlanBuilder
from demoforge.skills.context import Rect, SkillFailure, SkillPlan


def held_in_tcp(b: PlanBuilder, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(tcp_p_block [m], tcp_R_block) of `name` in the live state."""
    ctx = b.ctx
    centre, rot, _ = geo.block(ctx, name)
    tcp_pos = ctx.data.site_xpos[ctx.robot.tcp_site]
    tcp_rot = ctx.data.site_xmat[ctx.robot.tcp_site].reshape(3, 3)
    return tcp_rot.T @ (centre - tcp_pos), tcp_rot.T @ rot


def place(b: PlanBuilder, name: str, tcp_p_block: np.ndarray, tcp_R_block: np.ndarray,
          target: np.ndarray, target_rot: np.ndarray, *, above: float, carry_phase: str = "carry",
          clearance: float = 0.0) -> None:
    """Move the held block to centre `target` [m] with orientation `target_rot`, via a point
    `above` [m] higher (the transit there keeping the block `clearance` [m] above whatever it
    passes over), then release and retreat straight up."""
    s = b.ctx.settings
    b.held = (name, tcp_p_block, tcp_R_block)
    tcp_rot = target_rot @ tcp_R_block.T
    tcp_pos = target - tcp_rot @ tcp_p_block
    b.descend(tcp_pos, tcp_rot, above, (carry_phase, "lower"), exclude=(name,), clearance=clearance)
    b.hold(s.settle_s, "lower", b.grip)
    b.hold(s.open_s, "open", 0.0)
    # Straight up: the open fingers flank the block along the pinch axis, so this frees them
    # whatever the tilt (backing off along a tilted approach axis drags the block along).
    b.line(tcp_pos + s.retreat_height * geo.UP, tcp_rot, "retreat", exclude=(name,))


def yaw_to_match(rot: np.ndarray, other: np.ndarray) -> float:
    """Smallest turn about the vertical [rad] that aligns `rot`'s faces with `other`'s."""
    def face_yaw(r):
        k, _ = geo.up_axis(r)
        j = (k + 1) % 3
        return math.atan2(r[1, j], r[0, j])

    turn = face_yaw(other) - face_yaw(rot)
    return (turn + math.pi / 4) % (math.pi / 2) - math.pi / 4


def place_on(b: PlanBuilder, name: str, xy: np.ndarray, support_z: float, turn: float, *,
             above: float | None = None, carry_phase: str = "carry",
             grip: tuple[np.ndarray, np.ndarray] | None = None, block_rot: np.ndarray | None = None,
             clearance: float | None = None):
    """Put the held block upright at `xy` [m] on a support whose top is `support_z` [m],
    turned by `turn` [rad] about the vertical. `grip` (tcp_p_block, tcp_R_block) and the
    block's orientation `block_rot` default to the live state. Returns (centre, world_R_block)."""
    _, rot_now, half = geo.block(b.ctx, name)
    tcp_p_block, tcp_R_block = grip if grip is not None else held_in_tcp(b, name)
    rot = geo.upright(rot_now if block_rot is None else block_rot)
    target_rot = geo.rot_z(turn) @ rot
    target = np.array([xy[0], xy[1], support_z + geo.vertical_half(target_rot, half) + b.ctx.settings.place_gap])
    if above is None:
        # From the carry height (at least `carry_clearance` of straight lowering): the block's
        # bottom clear of every other prop on the way down.
        clear = geo.top_z(b.ctx, exclude=(name,)) + b.ctx.settings.carry_clearance - (support_z + b.ctx.settings.place_gap)
        above = max(b.ctx.settings.carry_clearance, clear)
    clearance = b.ctx.settings.carry_clearance if clearance is None else clearance
    place(b, name, tcp_p_block, tcp_R_block, target, target_rot, above=above, carry_phase=carry_phase,
          clearance=clearance)
    return target, target_rot


def stack(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(stack ?x ?y): see the module docstring."""
    name, under = args
    _, rot, _ = geo.block(b.ctx, name)
    centre, under_rot, under_half = geo.block(b.ctx, under)
    top = float(centre[2] + geo.vertical_half(under_rot, under_half))
    offset = b.rng.uniform(-b.ctx.settings.place_xy_offset, b.ctx.settings.place_xy_offset, 2)
    turn = yaw_to_match(rot, under_rot)
    params.update(place_xy_offset=offset.tolist(), place_turn=turn)
    target, target_rot = place_on(b, name, centre[:2] + offset, top, turn)
    return b.plan("stack", args, params, (*target.tolist(), *geo.quat(target_rot).tolist()))


def other_footprints(ctx, name: str) -> list[tuple[str, np.ndarray, float]]:
    """(name, centre x, y [m], footprint radius [m]) of every prop but `name`, by name."""
    out = []
    for other in sorted(ctx.props):
        if other != name:
            c, r, h = geo.block(ctx, other)
            out.append((other, c[:2], geo.footprint_radius(h, r)))
    return out


def free_spot(b: PlanBuilder, name: str, area: Rect, *, avoid_regions: bool) -> np.ndarray:
    """A uniformly drawn table point [m] in `area` where block `name`'s footprint is clear of
    every other prop (and of every region when `avoid_regions`)."""
    return next(free_spots(b, name, area, avoid_regions=avoid_regions))


def free_spots(b: PlanBuilder, name: str, area: Rect, *, avoid_regions: bool, nearest: bool = False
               ) -> Iterator[np.ndarray]:
    """Table points [m] in `area` where block `name`'s footprint is clear of every other prop (and
    of every region when `avoid_regions`), one per `next`: with `nearest` first the clear ones of
    `nearest_spots` (no draw), then, as without it, each drawn uniformly (Infeasible when
    `free_spot_tries` draws find none)."""
    ctx, s = b.ctx, b.ctx.settings
    centre, rot, half = geo.block(ctx, name)
    radius = geo.footprint_radius(half, rot)
    others = [(c, r) for _, c, r in other_footprints(ctx, name)]
    regions = sorted(ctx.regions.values()) if avoid_regions else []
    x_lo, x_hi, y_lo, y_hi = area
    if x_hi - x_lo < 2 * radius or y_hi - y_lo < 2 * radius:
        raise Infeasible(SkillFailure("collision", "carry", (
            f"no free table spot for {name!r}: the area x [{x_lo:.3f}, {x_hi:.3f}] y [{y_lo:.3f}, {y_hi:.3f}] is "
            f"narrower than its footprint ({2 * radius:.3f} m across); widen the workspace")))

    def clear(xy: np.ndarray) -> bool:
        if any(np.linalg.norm(xy - c) < radius + r + s.free_spot_margin for c, r in others):
            return False
        return not any(rx0 - radius < xy[0] < rx1 + radius and ry0 - radius < xy[1] < ry1 + radius
                       for rx0, rx1, ry0, ry1 in regions)

    if nearest:
        inside = (x_lo + radius, x_hi - radius, y_lo + radius, y_hi - radius)
        # one ring clears the widest other prop: the spots of a ring are the same whichever prop is next to them
        spacing = radius + max((r for _, r in others), default=radius) + s.free_spot_margin + SCAN_SLACK
        yield from (xy for xy in nearest_spots(centre[:2], spacing, inside) if clear(xy))
        # the scan ran out (a crowded table, a tower at the workspace's edge): drawn spots, as "uniform"
    while True:
        for _ in range(s.free_spot_tries):
            xy = b.rng.uniform([x_lo + radius, y_lo + radius], [x_hi - radius, y_hi - radius])
            if clear(xy):
                yield xy
                break
        else:
            raise Infeasible(SkillFailure("collision", "carry", (
                f"no free table spot for {name!r} in x [{x_lo:.3f}, {x_hi:.3f}] y [{y_lo:.3f}, {y_hi:.3f}] "
                f"after {s.free_spot_tries} draws")))


# The scan of `nearest_spots`: world directions in the order tried at each distance (+y, -y, -x, +x,
# then the diagonals).
_D = math.sqrt(0.5)
SCAN_DIRECTIONS = ((0.0, 1.0), (0.0, -1.0), (-1.0, 0.0), (1.0, 0.0), (-_D, _D), (-_D, -_D), (_D, _D), (_D, -_D))
SCAN_RINGS = 8  # distances tried: 1 to 8 spacings
SCAN_SLACK = 0.002  # [m] beyond the clearance, so a tower's settled blocks (mm off their centre) leave a ring clear


def nearest_spots(origin: np.ndarray, spacing: float, inside: Rect) -> list[np.ndarray]:
    """Table points around `origin` in a fixed order: at 1, 2, ... `SCAN_RINGS` x `spacing`, each
    distance along `SCAN_DIRECTIONS` in turn, those within `inside` (x_lo, x_hi, y_lo, y_hi). The
    first block put down beside a tower goes to its +y side, the next (the +y spot taken) to -y:
    the spot is a function of the scene, which a policy can read off the state."""
    x_lo, x_hi, y_lo, y_hi = inside
    out = []
    for k in range(1, SCAN_RINGS + 1):
        for dx, dy in SCAN_DIRECTIONS:
            xy = np.array([origin[0] + k * spacing * dx, origin[1] + k * spacing * dy])
            if x_lo <= xy[0] <= x_hi and y_lo <= xy[1] <= y_hi:
                out.append(xy)
    return out


def place_in_area(b: PlanBuilder, name: str, area: Rect, params: dict, *, avoid_regions: bool,
                  nearest: bool = False):
    """Put the held block down on the table at a free spot in `area`; a spot the arm cannot
    serve (IK, collision) is redrawn (or, `nearest`, the scan's next clear spot is taken) up to
    `place_tries` times. Returns (centre, world_R_block)."""
    last = None
    spots = free_spots(b, name, area, avoid_regions=avoid_regions, nearest=nearest)
    for _ in range(b.ctx.settings.place_tries):
        xy = next(spots)
        mark = b.mark()
        try:
            result = place_on(b, name, xy, b.ctx.table_z, 0.0)
        except Infeasible as exc:
            b.rollback(mark)
            last = exc
            continue
        params.update(place_xy=xy.tolist())
        return result
    raise last


def put_down(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(put-down ?x): see the module docstring."""
    (name,) = args
    target, target_rot = place_in_area(b, name, b.ctx.workspace, params, avoid_regions=True,
                                       nearest=b.ctx.settings.put_down_spot == "nearest")
    return b.plan("put-down", args, params, (*target.tolist(), *geo.quat(target_rot).tolist()))
