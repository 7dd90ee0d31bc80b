import mujoco
import numpy as np

from demoforge.sim import Box, build_scene, default_scene, gripper_closedness, move_joints, solve_ik, step


def test_held_4cm_cube_slips_less_than_2mm_in_10s():
    scene = build_scene(default_scene(props=(Box("cube", (0.04,) * 3, (0.5, 0.0, 0.42)),)))
    m, d, robot = scene.model, scene.data, scene.robot
    law = robot.card.controller
    down = np.zeros(4)
    mujoco.mju_mat2Quat(down, d.site_xmat[robot.tcp_site])
    scratch = mujoco.MjData(m)
    scratch.qpos[:] = d.qpos
    rng = np.random.default_rng(0)
    cube = d.body("cube").xpos.copy()
    pre = solve_ik(m, scratch, robot, cube + [0, 0, 0.1], down, rng=rng)
    grasp = solve_ik(m, scratch, robot, cube, down, rng=rng, q_init=pre.q)
    lift = solve_ik(m, scratch, robot, cube + [0, 0, 0.15], down, rng=rng, q_init=grasp.q)
    assert pre.success and grasp.success and lift.success
    move_joints(scene, law, pre.q, 0.0, 1.0)
    move_joints(scene, law, grasp.q, 0.0, 1.0)
    move_joints(scene, law, grasp.q, 1.0, 0.5)
    move_joints(scene, law, lift.q, 1.0, 1.0)
    move_joints(scene, law, lift.q, 1.0, 0.5)
    assert 0.4 < gripper_closedness(robot, d.qpos) < 0.6  # 4 cm of the 8 cm opening
    assert d.body("cube").xpos[2] > cube[2] + 0.12  # lifted

    def cube_in_tcp():
        tcp_R = d.site_xmat[robot.tcp_site].reshape(3, 3)
        return tcp_R.T @ (d.body("cube").xpos - d.site_xpos[robot.tcp_site])

    before = cube_in_tcp()
    step(scene, round(10.0 / m.opt.timestep))
    assert np.linalg.norm(cube_in_tcp() - before) < 0.002
