"""place-in-region: put the held block down inside a named table rectangle.

Expected geometric effect: the block rests upright on the table with its whole footprint
(its circumscribed circle) inside the region's rectangle, `free_spot_margin` clear of
other props, yaw unchanged; gripper open, TCP backed off as after put-down.

Draws: the spot, uniform over the part of the rectangle where the footprint fits
(redrawn when the arm cannot serve it, as for put-down).
"""

from __future__ import annotations

from demoforge.skills import geometry as geo
from demoforge.skills.builder import PlanBuilder
from demoforge.skills.context import SkillError, SkillPlan
from demoforge.skills.place import place_in_area


def place_in_region(b: PlanBuilder, args: tuple[str, ...], params: dict) -> SkillPlan:
    """(place-in-region ?x ?r): see the module docstring."""
    name, region = args
    ctx = b.ctx
    if region not in ctx.regions:
        raise SkillError(f"region {region!r} is not in the skill context; regions: {sorted(ctx.regions)}")
    x_lo, x_hi, y_lo, y_hi = ctx.regions[region]
    _, rot, half = geo.block(ctx, name)
    radius = geo.footprint_radius(half, rot)
    if x_hi - x_lo <= 2 * radius or y_hi - y_lo <= 2 * radius:
        raise SkillError(f"region {region!r} ({x_hi - x_lo:.3f} x {y_hi - y_lo:.3f} m) is too small for block "
                         f"{name!r} (footprint diameter {2 * radius:.3f} m); enlarge the region")
    target, target_rot = place_in_area(b, name, ctx.regions[region], params, avoid_regions=False)
    return b.plan("place-in-region", args, params, (*target.tolist(), *geo.quat(target_rot).tolist()))
