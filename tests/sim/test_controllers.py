import dataclasses
import json

import mujoco
import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import (
    ControlLaw, apply_control_law, build_scene, control_step, default_scene, gripper_ctrl, joint_targets,
)


def test_control_law_json_round_trip_is_canonical():
    law = ControlLaw("cartesian_delta", kp=(1.0,) * 7, kd=(0.5,) * 7, scales=(0.01,) * 3 + (0.1,) * 3)
    text = law.to_json()
    assert json.loads(text)["mode"] == "cartesian_delta"
    assert ControlLaw.from_dict(json.loads(text)) == law
    assert text == ControlLaw.from_dict(json.loads(text)).to_json()
    with pytest.raises(SimError, match="unknown keys \\['kI'\\]"):
        ControlLaw.from_dict({**json.loads(text), "kI": 1})


def test_apply_control_law_sets_gains_and_checks_shapes():
    scene = build_scene(default_scene())
    law = dataclasses.replace(scene.robot.card.controller, kp=(100.0,) * 7, kd=(5.0,) * 7)
    apply_control_law(scene.model, scene.robot, law)
    act = scene.robot.arm_actuators
    np.testing.assert_allclose(scene.model.actuator_gainprm[act, 0], 100.0)
    np.testing.assert_allclose(scene.model.actuator_biasprm[act, 1:3], [[-100.0, -5.0]] * 7)
    with pytest.raises(SimError, match="kp needs 7 values"):
        apply_control_law(scene.model, scene.robot, dataclasses.replace(law, kp=(1.0,) * 6))


def test_cartesian_delta_moves_the_tcp_by_the_delta():
    scene = build_scene(default_scene())
    m, d, robot = scene.model, scene.data, scene.robot
    law = dataclasses.replace(robot.card.controller, mode="cartesian_delta", damping=1e-3)
    start = d.site_xpos[robot.tcp_site].copy()
    start_rot = d.site_xmat[robot.tcp_site].copy()
    q = joint_targets(m, d, robot, law, np.array([0.01, -0.005, 0.008, 0, 0, 0]))
    scratch = mujoco.MjData(m)
    scratch.qpos[:] = d.qpos
    scratch.qpos[robot.arm_qpos] = q
    mujoco.mj_kinematics(m, scratch)
    np.testing.assert_allclose(scratch.site_xpos[robot.tcp_site] - start, [0.01, -0.005, 0.008], atol=3e-4)
    np.testing.assert_allclose(scratch.site_xmat[robot.tcp_site], start_rot, atol=1e-3)


def test_cartesian_delta_in_closed_loop_lifts_the_hand():
    scene = build_scene(default_scene())
    robot = scene.robot
    law = dataclasses.replace(robot.card.controller, mode="cartesian_delta", scales=(0.01,) * 3 + (0.1,) * 3)
    start = scene.data.site_xpos[robot.tcp_site].copy()
    for _ in range(30):  # 30 ticks at 60 Hz, 2 mm up each
        control_step(scene, law, np.array([0, 0, 0.2, 0, 0, 0]), 0.0, 10)
    control_step(scene, law, np.zeros(6), 0.0, 300)
    rise = scene.data.site_xpos[robot.tcp_site] - start
    assert rise[2] == pytest.approx(0.06, abs=0.01) and np.abs(rise[:2]).max() < 5e-3


def test_joint_position_mode_tracks_targets():
    scene = build_scene(default_scene())
    robot = scene.robot
    target = np.array(robot.card.home) + np.array([0.3, -0.2, 0.1, 0.2, -0.1, 0.2, 0.3])
    control_step(scene, robot.card.controller, target, 0.0, 600)
    np.testing.assert_allclose(scene.data.qpos[robot.arm_qpos], target, atol=5e-3)


def test_gripper_drive():
    scene = build_scene(default_scene())
    law = scene.robot.card.controller
    assert gripper_ctrl(scene.robot, law, 0.25) == pytest.approx(0.03)
    binary = dataclasses.replace(law, gripper_drive="binary")
    assert gripper_ctrl(scene.robot, binary, 0.4) == pytest.approx(0.04)
    assert gripper_ctrl(scene.robot, binary, 0.6) == pytest.approx(0.0)
    with pytest.raises(SimError, match="closedness must be in \\[0, 1\\]"):
        gripper_ctrl(scene.robot, law, 1.5)
