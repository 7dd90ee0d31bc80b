"""Properties of placement on random scenes within the families' ranges (block edges 3-5 cm):
`skills.place.free_spot` (where put-down sets a block) and reset-state sampling
(`symbolic.sample_reset_state`): placed footprints never overlap, stay inside the workspace or
windows, and out of regions when asked. Footprints are computed here from each pose's own
quaternion and the block's edge, not from the code under test."""

from __future__ import annotations

import math
from collections import defaultdict

import mujoco
import numpy as np
from hypothesis import event, given, reject, settings
from hypothesis import strategies as st

from demoforge.randomize.scene import SceneDraw
from demoforge.scenes import build_task_scene
from demoforge.sim import Box, build_scene, default_scene
from demoforge.skills import skill_context
from demoforge.skills.builder import Infeasible, PlanBuilder
from demoforge.skills.place import free_spot
from demoforge.symbolic import FACES, YAWS, ResetOptions, SymbolError, sample_reset_state
from demoforge.tasks import Region, SceneParams
from tests.symbolic.scenes import make_params, make_task

EDGE = st.floats(0.03, 0.05)  # the families' default block_size_m range [m]
TABLE_Z = 0.4  # default table height [m]
BLOCKS = "abcde"


def _yaw_quat(yaw: float) -> tuple[float, float, float, float]:
    return (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))


def _footprint_radius(quat, edge: float) -> float:
    """Largest horizontal distance of a cube's corner from its centre [m]."""
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, np.asarray(quat, float))
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * edge / 2
    return float(np.linalg.norm((corners @ rot.reshape(3, 3).T)[:, :2], axis=1).max())


def _extent(quat, edge: float) -> np.ndarray:
    """Half extents [m] of a cube's horizontal bounding box."""
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, np.asarray(quat, float))
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * edge / 2
    return np.abs(corners @ rot.reshape(3, 3).T)[:, :2].max(axis=0)


@st.composite
def crowded_tables(draw):
    """The block to put down (held high above the table), up to 5 others on it, yawed, maybe a region,
    and the area to put it down in."""
    others = draw(st.lists(st.tuples(st.floats(0.35, 0.65), st.floats(-0.25, 0.25), EDGE,
                                     st.floats(-math.pi, math.pi)), max_size=5))
    edge, yaw = draw(EDGE), draw(st.floats(-math.pi, math.pi))
    region = draw(st.none() | st.tuples(st.floats(0.35, 0.55), st.floats(-0.25, 0.15), st.floats(0.04, 0.12),
                                        st.floats(0.04, 0.12)))
    x0, y0 = draw(st.floats(0.35, 0.55)), draw(st.floats(-0.25, 0.15))
    # small areas crowd it; some narrower than the footprint (a 5 cm cube turned 45 degrees spans ~7 cm)
    area = (x0, x0 + draw(st.floats(0.02, 0.3)), y0, y0 + draw(st.floats(0.02, 0.3)))
    return others, (edge, yaw), region, area, draw(st.booleans()), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=100, deadline=None)
@given(crowded_tables())
def test_a_free_spot_keeps_the_footprint_inside_the_workspace_off_other_blocks_and_out_of_regions(case):
    others, (edge, yaw), region, area, avoid, seed = case
    boxes = [Box(f"o{k}", (e,) * 3, (x, y, TABLE_Z + e / 2), quat=_yaw_quat(w)) for k, (x, y, e, w) in
             enumerate(others)]
    held = Box("m", (edge,) * 3, (0.3, 0.0, 0.8), quat=_yaw_quat(yaw))
    scene = build_scene(default_scene(props=(held, *boxes)))
    mujoco.mj_forward(scene.model, scene.data)
    regions = {} if region is None else {"r": (region[0], region[0] + region[2], region[1], region[1] + region[3])}
    ctx = skill_context(scene, regions=regions)
    try:
        xy = free_spot(PlanBuilder(ctx, np.random.default_rng(seed)), "m", area, avoid_regions=avoid)
    except Infeasible as exc:  # a crowded table may have no spot: said so, never a bad spot
        assert exc.failure.kind == "collision" and "no free table spot" in exc.failure.message
        event("no free spot")
        return
    radius = _footprint_radius(_yaw_quat(yaw), edge)
    x_lo, x_hi, y_lo, y_hi = area
    assert x_lo + radius <= xy[0] <= x_hi - radius and y_lo + radius <= xy[1] <= y_hi - radius
    for x, y, e, w in others:  # footprint circles apart by the margin: the footprints cannot touch
        gap = math.dist(xy, (x, y)) - radius - _footprint_radius(_yaw_quat(w), e)
        assert gap >= ctx.settings.free_spot_margin - 1e-12
    if avoid and regions:
        rx0, rx1, ry0, ry1 = regions["r"]
        assert xy[0] + radius <= rx0 or xy[0] - radius >= rx1 or xy[1] + radius <= ry0 or xy[1] - radius >= ry1


LEFT = ("left", Region((-0.1, 0.1), (0.18, 0.30)))
WINDOWS = [  # (placement_x_m, placement_y_m) [m]: the default, one reaching past the region, two split
    (((-0.05, 0.25),), ((-0.1, 0.1),)),
    (((-0.05, 0.25),), ((-0.3, 0.3),)),
    (((-0.05, 0.08), (0.12, 0.25)), ((-0.12, -0.02), (0.02, 0.12))),
]


@st.composite
def reset_problems(draw):
    """Up to 5 blocks in towers (each with a face and a yaw), maybe one tower in region `left`."""
    n = draw(st.integers(1, 5))
    blocks = list(BLOCKS[:n])
    order = draw(st.permutations(blocks))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    towers = [order[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]  # bottom-up
    init = [("hand_empty",)]
    for tower in towers:
        init += [("on_table", tower[0]), ("clear", tower[-1])]
        init += [("on", top, below) for below, top in zip(tower, tower[1:], strict=False)]
    for b in blocks:
        init += [("face_up", b, draw(st.sampled_from(FACES))), ("yaw", b, draw(st.sampled_from(YAWS)))]
    in_region = draw(st.none() | st.sampled_from([t[0] for t in towers]))
    if in_region is not None:
        init.append(("in_region", in_region, "left"))
    edges = {b: draw(EDGE) for b in blocks}
    return blocks, init, edges, in_region, draw(st.sampled_from(WINDOWS)), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None)
@given(reset_problems())
def test_reset_states_place_towers_apart_inside_their_windows_and_out_of_regions(case):
    blocks, init, edges, in_region, (wx, wy), seed = case
    task = make_task(init, blocks=blocks, regions=["left"], goal=f"(and (on_table {blocks[0]}))")
    params = make_params(blocks, (LEFT,))
    params = SceneParams(**{**params.__dict__, "placement_x_m": wx, "placement_y_m": wy})
    draw = SceneDraw("p", tuple((b, edges[b]) for b in sorted(blocks)), 0.0, 0.9, None)
    scene, binding = build_task_scene(task, params, draw)
    opts = ResetOptions()
    try:
        state = sample_reset_state(scene, binding, params, draw, np.random.default_rng(seed), options=opts)
    except SymbolError:
        reject()  # no state matched the facts (a crowded window): said so; nothing placed to judge
    ox, oy = binding.table_origin
    poses = {p.block: p for p in state.poses}
    assert sorted(poses) == sorted(blocks)

    def base(b):
        while poses[b].support != "table":
            b = poses[b].support
        return b

    boxes = defaultdict(list)  # tower base -> table-frame footprints (x0, x1, y0, y1) of its blocks
    for b, p in poses.items():
        ext = _extent(p.quat, edges[b])
        x, y = p.pos[0] - ox, p.pos[1] - oy
        boxes[base(b)].append((x - ext[0], x + ext[0], y - ext[1], y + ext[1]))
    c = opts.clearance_m - 1e-12
    bases = sorted(boxes)
    for i, s in enumerate(bases):
        for t in bases[i + 1:]:
            for a in boxes[s]:
                for b in boxes[t]:
                    assert a[1] + c <= b[0] or b[1] + c <= a[0] or a[3] + c <= b[2] or b[3] + c <= a[2], (s, t)
    region = LEFT[1]
    for s in bases:
        if s == in_region:  # the whole tower inside the region
            assert poses[s].region == "left"
            for x0, x1, y0, y1 in boxes[s]:
                assert region.x_m[0] - 1e-12 <= x0 and x1 <= region.x_m[1] + 1e-12
                assert region.y_m[0] - 1e-12 <= y0 and y1 <= region.y_m[1] + 1e-12
            continue
        for x0, x1, y0, y1 in boxes[s]:  # inside one x window and one y window
            assert any(lo - 1e-12 <= x0 and x1 <= hi + 1e-12 for lo, hi in wx), (s, wx)
            assert any(lo - 1e-12 <= y0 and y1 <= hi + 1e-12 for lo, hi in wy), (s, wy)
        x, y = poses[s].pos[0] - ox, poses[s].pos[1] - oy
        k = opts.region_keepout_m
        assert not (region.x_m[0] - k <= x <= region.x_m[1] + k and region.y_m[0] - k <= y <= region.y_m[1] + k)
