"""The default cameras frame the work: blocks of many sampled reset states projected into each
camera with its intrinsics (vertical field of view) and pose (MuJoCo's camera frame).

Reset states are sampled as a scene package samples them (`bake_profiles` then
`sample_reset_state` with `reset_rng`), over every shipped family, with random robot starts.
"""

import numpy as np
import pytest

from demoforge.randomize.robot_start import RobotStartParams
from demoforge.randomize.scene import bake_profiles
from demoforge.scenes import build_task_scene
from demoforge.sim import intrinsics, project, world_T_camera
from demoforge.symbolic import reset_rng, sample_reset_state
from demoforge.tasks import FAMILIES, generate_family, parse_task
from demoforge.tasks.library import domain_text

SIZE = 224  # image side [px]
LIFT_M = 0.15  # a carried block's centre above the table top [m]
FAMILY_OPTIONS = {"stack_three": {}, "stack_n": {"n": 4}, "unstack": {"n": 3}, "pnp": {"n": 2, "distractors": 1},
                  "flip": {"n": 2, "distractors": 1}, "rotate": {"n": 2, "distractors": 1}}
_CORNERS = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T  # (8, 3) signs


def _box_corners(centre, rot, half) -> np.ndarray:
    return centre + (_CORNERS * half) @ rot.T


def _states():
    """(family, scene, sidecar, block names) per sampled reset state, scene.data set to it."""
    assert set(FAMILY_OPTIONS) == set(FAMILIES)
    for family in sorted(FAMILY_OPTIONS):
        for generated in generate_family(family, count=2, seed=31, **FAMILY_OPTIONS[family]):
            task = parse_task(generated.problem_pddl, domain_text=domain_text("blocks"),
                              problem_file=f"{generated.name}.pddl")
            for k, draw in enumerate(bake_profiles(generated.scene, 2, 5)):
                scene, binding = build_task_scene(task, generated.scene, draw)
                for i in range(2):
                    sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 5, k, i),
                                       robot_start=RobotStartParams())
                    yield family, scene, generated.scene, binding.blocks


@pytest.fixture(scope="module")
def views():
    """Per state: each camera's projections of what the framing figures are about."""
    out = []
    for family, scene, params, blocks in _states():
        m, d = scene.model, scene.data
        item = {"family": family}
        boxes = []
        for b in blocks:
            g = m.geom(b).id
            boxes.append((d.geom_xpos[g].copy(), d.geom_xmat[g].reshape(3, 3).copy(), m.geom_size[g].copy()))
        robot = set(scene.robot.body_ids.tolist())
        arm = [_box_corners(d.geom_xpos[g] + d.geom_xmat[g].reshape(3, 3) @ m.geom_aabb[g][:3],
                            d.geom_xmat[g].reshape(3, 3), m.geom_aabb[g][3:])
               for g in range(m.ngeom) if int(m.geom_bodyid[g]) in robot]
        cx, cy = scene.spec.table.center
        top = scene.spec.table.height
        window = np.array([[cx + x, cy + y, top] for x in (params.placement_x_m[0][0], params.placement_x_m[-1][1])
                           for y in (params.placement_y_m[0][0], params.placement_y_m[-1][1])])
        regions = [np.array([[cx + x, cy + y, top] for x in r.x_m for y in r.y_m]) for _, r in params.regions]
        for name in ("front", "side", "wrist"):
            cam = scene.cameras[name]
            intr, pose = intrinsics(m, cam, SIZE, SIZE), world_T_camera(d, cam)
            proj = lambda p: project(np.asarray(p).reshape(-1, 3), intr, pose)  # noqa: E731, B023
            lifted = [np.array([c[0], c[1], top + LIFT_M]) for c, _, _ in boxes]
            item[name] = {
                "blocks": [proj(_box_corners(c, r, h)) for c, r, h in boxes],
                "lifted": [proj(_box_corners(c, r, h)) for c, (_, r, h) in zip(lifted, boxes, strict=True)],
                # a 4 cm span across the image (world y) through each block's centre
                "span_px": [abs(np.subtract(*proj([c - [0, 0.02, 0], c + [0, 0.02, 0]])[0][:, 0])) for c, _, _ in boxes],
                "window": proj(window), "regions": [proj(r) for r in regions], "arm": proj(np.concatenate(arm)),
                "tcp": proj(d.site_xpos[scene.robot.tcp_site]),
            }
        out.append(item)
    return out


def _inside(uv_depth, margin: float = 0.0) -> bool:
    uv, depth = uv_depth
    return bool((depth > 0).all() and (uv >= margin).all() and (uv <= SIZE - margin).all())


def test_many_states_of_every_family_are_checked(views):
    assert len(views) >= 40 and {v["family"] for v in views} == set(FAMILIES)


def test_front_frames_the_placement_window(views):
    for v in views:
        front = v["front"]
        uv, _ = front["window"]
        width = uv[:, 0].max() - uv[:, 0].min()
        # the window is a quarter of the view, which also holds the pnp regions and the put-down area
        assert _inside(front["window"]) and width >= 0.26 * SIZE, (v["family"], width)


def test_front_shows_every_block_large_and_lifted_blocks_stay_in_view(views):
    smallest = min(s for v in views for s in v["front"]["span_px"])
    assert smallest >= 10.5, smallest
    for v in views:
        front = v["front"]
        assert all(_inside(b) for b in front["blocks"]), v["family"]
        assert all(_inside(b) for b in front["lifted"]), v["family"]


def test_front_shows_the_gripper_at_every_sampled_robot_start(views):
    for v in views:
        assert _inside(v["front"]["tcp"], margin=6.0), (v["family"], v["front"]["tcp"])


def test_side_overview_shows_the_whole_arm_every_block_and_region(views):
    for v in views:
        side = v["side"]
        assert _inside(side["arm"], margin=2.0), v["family"]
        assert all(_inside(b, margin=2.0) for b in side["blocks"] + side["lifted"]), v["family"]
        assert all(_inside(r, margin=2.0) for r in side["regions"]), v["family"]


def test_wrist_camera_sees_below_the_fingertips():
    from demoforge.sim import build_scene, default_scene

    scene = build_scene(default_scene())
    cam = scene.cameras["wrist"]
    pose = world_T_camera(scene.data, cam)
    assert pose[2, 2] > 0.9  # the view axis (-z) points down at the home pose
    tcp = scene.data.site_xpos[scene.robot.tcp_site]
    uv, depth = project(tcp - [0, 0, 0.05], intrinsics(scene.model, cam, SIZE, SIZE), pose)
    assert depth[0] > 0 and np.all((uv > 0.1 * SIZE) & (uv < 0.9 * SIZE)), uv
