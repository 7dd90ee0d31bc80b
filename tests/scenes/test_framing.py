"""The front camera frames the work of every family: over 40 generated problems per family, every
block's start, every region's corners and centre and every goal location project inside the
224 px front image with a margin.

Block starts are sampled reset states (as a scene package samples them). A goal location
is where the goal puts a block: on its tower's base block (stack), anywhere in the put-down
workspace (unstack), in its region (pnp), within two tips of its start (flip: a tip moves a cube's
centre by one edge; a face opposite the start's takes two), where it stands (rotate).
"""

import numpy as np
import pytest

from demoforge.randomize.scene import bake_profiles
from demoforge.scenes import build_task_scene
from demoforge.sim import Camera, build_scene, default_scene, intrinsics, project, world_T_camera
from demoforge.skills import skill_context
from demoforge.symbolic import reset_rng, sample_reset_state
from demoforge.tasks import FAMILIES, generate_family, parse_task
from demoforge.tasks.library import domain_text
from demoforge.tasks.parse import goal_atoms

SIZE = 224  # image side [px]
MARGIN = 6.0  # least distance from the image's edge [px]
PROBLEMS = 40  # per family
FAMILY_OPTIONS = {"stack_three": {}, "stack_n": {"n": 4}, "unstack": {"n": 4}, "pnp": {"n": 2, "distractors": 2},
                  "flip": {"n": 2, "distractors": 2}, "rotate": {"n": 2, "distractors": 2}}


def _rect(x_lo, x_hi, y_lo, y_hi, z) -> np.ndarray:
    """Corners and centre of a level rectangle (world frame) [m]."""
    return np.array([[x, y, z] for x in (x_lo, x_hi) for y in (y_lo, y_hi)] + [[(x_lo + x_hi) / 2, (y_lo + y_hi) / 2, z]])


def _goal_points(task, starts: dict, edges: dict, top: float, workspace, regions: dict) -> list[np.ndarray]:
    """World points [m] of where the goal puts each block it names."""
    atoms = goal_atoms(task)
    assert atoms, task.name
    on = {a[1]: a[2] for a in atoms if a[0] == "on"}
    init_face = {a[1]: a[2] for a in task.init if a[0] == "face_up"}
    out = []
    for atom in atoms:
        kind, block = atom[0], atom[1]
        if kind == "on":
            base, height = block, 0.0
            while base in on:  # down the goal tower to its base, adding the edges below `block`
                base = on[base]
                height += edges[base]
            out.append(np.array([[*starts[base][:2], top + height + edges[block] / 2]]))
        elif kind == "on_table":
            out.append(_rect(*workspace, top + edges[block] / 2))
        elif kind == "in_region":
            x_lo, x_hi, y_lo, y_hi = regions[atom[2]]
            out.append(_rect(x_lo, x_hi, y_lo, y_hi, top + edges[block] / 2))
        elif kind == "face_up" and atom[2] != init_face[block]:
            reach = 2 * edges[block]
            x, y, z = starts[block]
            out.append(_rect(x - reach, x + reach, y - reach, y + reach, z))
        elif kind in ("face_up", "yaw"):
            out.append(starts[block][None])
        else:
            raise AssertionError(f"{task.name}: goal atom {atom} has no location in this test")
    return out


def _problem_points(family: str, generated) -> dict[str, list[np.ndarray]]:
    task = parse_task(generated.problem_pddl, domain_text=domain_text("blocks"), problem_file=f"{generated.name}.pddl")
    draw = bake_profiles(generated.scene, 1, 11)[0]
    scene, binding = build_task_scene(task, generated.scene, draw)
    sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 11, 0, 0))
    m, d = scene.model, scene.data
    blocks = sorted(binding.blocks)
    starts = {b: d.xpos[scene.props[b]].copy() for b in blocks}
    edges = {b: 2 * float(m.geom_size[m.geom(b).id][0]) for b in blocks}
    top = float(scene.spec.table.height)
    cx, cy = scene.spec.table.center
    regions = {r: (cx + rect.x_m[0], cx + rect.x_m[1], cy + rect.y_m[0], cy + rect.y_m[1])
               for r, rect in generated.scene.regions}
    ctx = skill_context(scene, regions=regions)
    cam = scene.cameras["front"]
    intr, pose = intrinsics(m, cam, SIZE, SIZE), world_T_camera(d, cam)
    points = {"block start": [starts[b][None] for b in blocks],
              "region": [_rect(*r, top) for r in regions.values()],
              "goal": _goal_points(task, starts, edges, top, ctx.workspace, regions)}
    return {what: [project(p, intr, pose) for p in ps] for what, ps in points.items()}


@pytest.fixture(scope="module")
def framed() -> list[tuple[str, str, dict]]:
    """(family, problem, projections by kind of point) of every problem."""
    return [(family, g.name, _problem_points(family, g))
            for family in sorted(FAMILIES)
            for g in generate_family(family, count=PROBLEMS, seed=35, **FAMILY_OPTIONS[family])]


def test_every_family_and_kind_of_point_is_checked(framed):
    assert set(FAMILY_OPTIONS) == set(FAMILIES)
    for family in FAMILIES:
        mine = [points for f, _, points in framed if f == family]
        assert len(mine) == PROBLEMS
        assert all(points["block start"] and points["goal"] for points in mine), family
    assert all(points["region"] for f, _, points in framed if f == "pnp")


def test_front_image_frames_block_starts_regions_and_goals(framed):
    outside = []
    for family, problem, points in framed:
        for what, projections in points.items():
            for uv, depth in projections:
                lo, hi = uv.min(), uv.max()
                if not ((depth > 0).all() and lo >= MARGIN and hi <= SIZE - MARGIN):
                    outside.append(f"{problem}: {what} at {np.round(uv, 1).tolist()}")
    assert not outside, f"{len(outside)} point sets outside the front image:\n" + "\n".join(outside[:20])


def test_the_camera_before_issue_35_put_the_pnp_regions_off_its_image():
    """The check can fail: the old front camera (0.59 m from the start window, 38 degrees) is the one
    that drew a pnp "place" target at u = 279 on a 224 px image."""
    old = Camera("front", (0.89, 0.0, 0.62), (0.34, 0.0, 0.40), 38.0)
    scene = build_scene(default_scene(cameras=(old,)))
    cam = scene.cameras["front"]
    cx, cy = scene.spec.table.center
    generated = generate_family("pnp", count=1, seed=35)[0]
    corners = [_rect(cx + r.x_m[0], cx + r.x_m[1], cy + r.y_m[0], cy + r.y_m[1], scene.spec.table.height)
               for _, r in generated.scene.regions]
    uv, _ = project(np.concatenate(corners), intrinsics(scene.model, cam, SIZE, SIZE), world_T_camera(scene.data, cam))
    assert uv[:, 0].min() < 0 and uv[:, 0].max() > SIZE
