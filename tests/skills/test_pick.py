import numpy as np

from demoforge.sim import gripper_closedness, step
from demoforge.skills import PHASES

from .conftest import CUBE, TABLE_Z, cube, make, pose, run, touching, yaw_quat


def _in_tcp(scene, name):
    d, site = scene.data, scene.robot.tcp_site
    rot = d.site_xmat[site].reshape(3, 3)
    return rot.T @ (d.body(name).xpos - d.site_xpos[site])


def test_pick_up_lifts_the_block_held_by_both_fingers():
    scene, ctx = make(cube("a", 0.5, -0.08, quat=yaw_quat(20)), cube("b", 0.45, 0.12))
    start, _ = pose(scene, "a")
    plan = run(scene, ctx, "pick-up", ["a"], seed=1)
    assert [PHASES[i] for i in np.unique(plan.phase)] == ["approach", "descend", "close", "lift"]
    now, _ = pose(scene, "a")
    assert now[2] > start[2] + 0.05  # lifted with the gripper
    assert np.linalg.norm(now[:2] - start[:2]) < 0.005
    assert touching(scene, "a", "robot/pad1") and touching(scene, "a", "robot/pad2")
    assert 0.4 < gripper_closedness(scene.robot, scene.data.qpos) < 0.6  # 4 of 8 cm
    # Held, not resting: it rides with the hand and does not slip over a second.
    before = _in_tcp(scene, "a")
    step(scene, round(1.0 / scene.model.opt.timestep))
    assert np.linalg.norm(_in_tcp(scene, "a") - before) < 0.001
    assert pose(scene, "b")[0][2] < TABLE_Z + CUBE  # the other block stayed put


def test_unstack_takes_the_top_block_and_leaves_the_one_below():
    scene, ctx = make(cube("b", 0.5, 0.0), cube("a", 0.5, 0.0, level=1, rgba=(0.2, 0.8, 0.2, 1)))
    below, _ = pose(scene, "b")
    run(scene, ctx, "unstack", ["a", "b"], seed=2)
    assert pose(scene, "a")[0][2] > below[2] + CUBE + 0.03
    assert touching(scene, "a", "robot/pad1") and touching(scene, "a", "robot/pad2")
    np.testing.assert_allclose(pose(scene, "b")[0], below, atol=0.002)


def test_neighbours_along_one_axis_make_the_grasp_pinch_along_the_other():
    # 1.5 cm gaps left and right: open fingers only fit in front of and behind the block.
    scene, ctx = make(cube("a", 0.5, 0.0), cube("l", 0.5, 0.055), cube("r", 0.5, -0.055))
    plan = run(scene, ctx, "pick-up", ["a"], seed=3)
    assert abs(np.sin(plan.params["grasp_yaw"])) < 1e-6  # pinch axis along world x
    assert touching(scene, "a", "robot/pad1") and touching(scene, "a", "robot/pad2")
    for other in ("l", "r"):
        assert pose(scene, other)[0][2] < TABLE_Z + CUBE
