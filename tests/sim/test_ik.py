import mujoco
import numpy as np

from demoforge.sim import Box, build_scene, default_scene, first_collision, path_collides, solve_ik


def _reachable_targets(model, robot, rng, n):
    data = mujoco.MjData(model)
    targets = []
    for _ in range(n):
        data.qpos[robot.arm_qpos] = rng.uniform(robot.limits[:, 0], robot.limits[:, 1])
        mujoco.mj_kinematics(model, data)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[robot.tcp_site])
        targets.append((data.site_xpos[robot.tcp_site].copy(), quat))
    return targets


def test_ik_reaches_99_percent_of_random_reachable_poses_any_orientation():
    scene = build_scene(default_scene(props=()))
    model, robot = scene.model, scene.robot
    rng = np.random.default_rng(2024)
    scratch = mujoco.MjData(model)
    successes = 0
    for pos, quat in _reachable_targets(model, robot, rng, 200):
        res = solve_ik(model, scratch, robot, pos, quat, rng=rng, q_init=np.array(robot.card.home))
        successes += res.success
        if res.success:
            assert np.all(res.q >= robot.limits[:, 0]) and np.all(res.q <= robot.limits[:, 1])
            assert res.pos_err <= 1e-3 and res.rot_err <= 1e-2
    assert successes >= 198


def test_ik_is_reproducible_per_seed():
    scene = build_scene(default_scene(props=()))
    model, robot = scene.model, scene.robot
    targets = _reachable_targets(model, robot, np.random.default_rng(5), 10)

    def run():
        rng = np.random.default_rng(7)
        data = mujoco.MjData(model)
        return np.array([solve_ik(model, data, robot, p, q, rng=rng, q_init=np.array(robot.card.home)).q
                         for p, q in targets])

    np.testing.assert_array_equal(run(), run())


def test_position_only_target():
    scene = build_scene(default_scene(props=()))
    data = mujoco.MjData(scene.model)
    data.qpos[:] = scene.data.qpos
    res = solve_ik(scene.model, data, scene.robot, [0.4, 0.2, 0.7], rng=np.random.default_rng(0))
    assert res.success and res.pos_err < 1e-3


def test_path_collision_check_excludes_declared_bodies():
    scene = build_scene(default_scene(props=(Box("cube", (0.04,) * 3, (0.5, 0.0, 0.42)),)))
    model, robot = scene.model, scene.robot
    scratch = mujoco.MjData(model)
    scratch.qpos[:] = scene.data.qpos
    rng = np.random.default_rng(0)
    down = np.zeros(4)
    mujoco.mju_mat2Quat(down, scene.data.site_xmat[robot.tcp_site])
    home = np.array(robot.card.home)
    above = solve_ik(model, scratch, robot, [0.5, 0.0, 0.6], down, rng=rng, q_init=home).q
    scratch.qpos[robot.finger_qpos] = 0.005  # nearly closed, so the fingers cannot straddle the cube
    # TCP 1 cm above the table: the fingers pass through the cube.
    through = solve_ik(model, scratch, robot, [0.5, 0.0, 0.41], down, rng=rng, q_init=above).q
    beside = solve_ik(model, scratch, robot, [0.5, 0.25, 0.5], down, rng=rng, q_init=above).q
    assert not path_collides(model, scratch, robot, [home, above, beside])
    assert path_collides(model, scratch, robot, [home, above, through])
    index = first_collision(model, scratch, robot, [above, through], max_step=0.01)
    assert index is not None and index > 0
    assert not path_collides(model, scratch, robot, [above, through], exclude_bodies=(scene.props["cube"],))
    # Through the table is a collision whatever is excluded.
    table = solve_ik(model, scratch, robot, [0.5, 0.0, 0.33], down, rng=rng, q_init=above).q
    assert path_collides(model, scratch, robot, [above, table], exclude_bodies=(scene.props["cube"],))
