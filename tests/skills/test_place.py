import numpy as np

from demoforge.sim import gripper_closedness

from .conftest import CUBE, TABLE_Z, cube, make, pose, run, touching, yaw_quat


def test_stack_puts_a_on_b_flush_and_at_rest():
    scene, ctx = make(cube("a", 0.5, -0.1), cube("b", 0.45, 0.12, quat=yaw_quat(25), rgba=(0.2, 0.8, 0.2, 1)))
    run(scene, ctx, "pick-up", ["a"], seed=3)
    plan = run(scene, ctx, "stack", ["a", "b"], seed=3)
    (a, a_rot), (b, b_rot) = pose(scene, "a"), pose(scene, "b")
    assert abs((a[2] - CUBE / 2) - (b[2] + CUBE / 2)) < 0.005  # A's bottom on B's top
    assert np.abs(a[:2] - b[:2]).max() < 0.005  # footprints overlap (almost fully)
    # Yaw turned to B's faces (mod 90 degrees).
    turn = np.degrees(np.arctan2(a_rot[1, 0], a_rot[0, 0]) - np.arctan2(b_rot[1, 0], b_rot[0, 0]))
    assert abs((turn + 45) % 90 - 45) < 3
    np.testing.assert_allclose(plan.block_target[:2], a[:2], atol=0.005)
    m = scene.model
    dof = m.jnt_dofadr[m.body_jntadr[scene.props["a"]]]
    assert np.abs(scene.data.qvel[dof:dof + 6]).max() < 0.01  # at rest
    assert not touching(scene, "a", "robot/")
    assert gripper_closedness(scene.robot, scene.data.qpos) < 0.05


def test_put_down_leaves_the_block_on_a_free_table_spot():
    scene, ctx = make(cube("a", 0.5, -0.1), cube("b", 0.5, 0.1), regions={"left": (0.4, 0.6, 0.18, 0.3)})
    run(scene, ctx, "pick-up", ["a"], seed=4)
    plan = run(scene, ctx, "put-down", ["a"], seed=4)
    a, a_rot = pose(scene, "a")
    assert abs(a[2] - (TABLE_Z + CUBE / 2)) < 0.002 and a_rot[2, 2] > 0.999  # flat on the table
    np.testing.assert_allclose(a[:2], plan.params["place_xy"], atol=0.005)
    assert np.linalg.norm(a[:2] - pose(scene, "b")[0][:2]) > CUBE * np.sqrt(2)
    x_lo, x_hi, y_lo, y_hi = ctx.workspace
    assert x_lo <= a[0] <= x_hi and y_lo <= a[1] <= y_hi
    assert not (0.4 - 0.03 < a[0] < 0.6 + 0.03 and 0.18 - 0.03 < a[1] < 0.3 + 0.03)  # not in a region
    assert not touching(scene, "a", "robot/")


def test_unstack_then_put_down_never_lands_on_the_old_support():
    scene, ctx = make(cube("b", 0.5, 0.0), cube("a", 0.5, 0.0, level=1))
    run(scene, ctx, "unstack", ["a", "b"], seed=5)
    run(scene, ctx, "put-down", ["a"], seed=5)
    assert abs(pose(scene, "a")[0][2] - (TABLE_Z + CUBE / 2)) < 0.002


def test_skills_chain_into_a_tower_of_three():
    scene, ctx = make(cube("a", 0.45, -0.15, quat=yaw_quat(30)), cube("b", 0.55, 0.0), cube("c", 0.42, 0.15))
    for op, args in (("pick-up", ["b"]), ("stack", ["b", "a"]), ("pick-up", ["c"]), ("stack", ["c", "b"])):
        run(scene, ctx, op, args, seed=9)
    (a, _), (b, _), (c, _) = pose(scene, "a"), pose(scene, "b"), pose(scene, "c")
    np.testing.assert_allclose([b[2] - a[2], c[2] - b[2]], [CUBE, CUBE], atol=0.004)
    assert np.abs(c[:2] - a[:2]).max() < 0.008


def test_nearest_put_down_sets_a_tower_s_blocks_beside_it_one_side_then_the_other_whatever_the_seed():
    """put_down_spot "nearest": the first block off a tower goes to its +y side, the next (that
    spot taken) to -y, one spacing (the footprint plus the margin) away; no draw decides it."""
    from demoforge.skills import SkillSettings

    settings = SkillSettings(put_down_spot="nearest")
    spots = []
    for seed in (5, 6):
        scene, ctx = make(cube("c", 0.5, 0.0), cube("b", 0.5, 0.0, level=1), cube("a", 0.5, 0.0, level=2),
                          settings=settings)
        tower = pose(scene, "c")[0][:2]
        for top, below in (("a", "b"), ("b", "c")):
            run(scene, ctx, "unstack", [top, below], seed=seed)
            plan = run(scene, ctx, "put-down", [top], seed=seed)
            assert abs(pose(scene, top)[0][2] - (TABLE_Z + CUBE / 2)) < 0.002  # on the table
        a, b = pose(scene, "a")[0][:2], pose(scene, "b")[0][:2]
        assert a[1] - tower[1] > CUBE * np.sqrt(2) and tower[1] - b[1] > CUBE * np.sqrt(2)  # +y, then -y
        assert abs(a[0] - tower[0]) < 0.01 and abs(b[0] - tower[0]) < 0.01
        spots.append(plan.params["place_xy"])
    np.testing.assert_allclose(spots[0], spots[1], atol=0.005)  # another seed: the grasp's few mm, no other draw
