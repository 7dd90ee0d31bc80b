"""URDF robot cards: MuJoCo compiles the URDF, the card adds servos, TCP, wrist camera and mesh
root; a card that does not fit its URDF is refused naming the card, the field, the value and
the fix. The tiny URDFs are written here; the real arm is pybullet's Panda (the `urdf` extra)."""

import json
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from demoforge.errors import DemoforgeError
from demoforge.sim.lint import lint_contact_stability
from demoforge.sim.urdf import load_urdf
from demoforge.sim import (
    SceneSpec, build_scene, card_from_dict, card_to_dict, gripper_closedness, load_card, move_joints, panda_card,
    resolve_robot, solve_ik, ur5e_2f85_card,
)

EXAMPLES = Path(__file__).parents[2] / "examples" / "robots"
INERTIA = '<inertial><mass value="{m}"/><inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial>'
MESH = '<collision><geometry><mesh filename="package://tiny_description/meshes/box.obj"/></geometry></collision>'
FINGERS = """
  <link name="f1">{i}</link><link name="f2">{i}</link>
  <joint name="fj1" type="prismatic"><parent link="hand"/><child link="f1"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.03" effort="20" velocity="0.1"/></joint>
  <joint name="fj2" type="prismatic"><parent link="hand"/><child link="f2"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 -1 0"/><limit lower="0" upper="0.03" effort="20" velocity="0.1"/><mimic joint="fj1"/></joint>
""".format(i=INERTIA.format(m=0.05))


def tiny_urdf(fingers: bool = True) -> str:
    """Base (a mesh), a continuous and a revolute joint, a hand fixed to the second link, two
    mimic fingers."""
    return f"""<robot name="tiny">
  <link name="base">{MESH}</link>
  <link name="l1">{INERTIA.format(m=1)}<collision><origin xyz="0 0 0.15"/><geometry><box size="0.04 0.04 0.3"/>
    </geometry></collision></link>
  <link name="l2">{INERTIA.format(m=0.5)}<collision><origin xyz="0.15 0 0"/><geometry><box size="0.3 0.04 0.04"/>
    </geometry></collision></link>
  <link name="hand">{INERTIA.format(m=0.2)}</link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit effort="50" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <joint name="hand_joint" type="fixed"><parent link="l2"/><child link="hand"/><origin xyz="0.3 0 0"/></joint>
  {FINGERS if fingers else ""}
</robot>
"""


BOX_OBJ = "".join(f"v {x} {y} {z}\n" for x in (-0.05, 0.05) for y in (-0.05, 0.05) for z in (0.0, 0.1)) + """
f 1 3 4 2
f 5 6 8 7
f 1 2 6 5
f 3 7 8 4
f 1 5 7 3
f 2 4 8 6
"""


def tiny_card(**overrides) -> dict:
    card = {
        "name": "tiny", "model": "tiny.urdf", "mesh_root": "ros",
        "arm_joints": ["j1", "j2"], "arm_actuators": ["a1", "a2"],
        "tcp_site": "tcp", "tcp_body": "hand", "tcp_pos": [0.0, 0.0, 0.08],
        "finger_joints": [{"name": "fj1", "open": 0.03, "closed": 0.0}, {"name": "fj2", "open": 0.03, "closed": 0.0}],
        "gripper_actuator": "grip", "gripper_ctrl": [0.03, 0.0], "gripper_gains": [300.0, 30.0],
        "wrist_camera": "wrist",
        "wrist_camera_mount": {"body": "hand", "pos": [-0.05, 0.0, 0.0], "quat": [0.0, 1.0, 0.0, 0.0]},
        "home": [0.0, 0.5], "controller": {"mode": "joint_position", "kp": [200, 200], "kd": [20, 20]},
    }
    return {**card, **overrides}


def write_robot(folder: Path, *, fingers: bool = True, **overrides) -> Path:
    """A card YAML beside tiny.urdf, its mesh in a ROS-style package folder under ros/."""
    (folder / "tiny.urdf").write_text(tiny_urdf(fingers))
    meshes = folder / "ros" / "tiny_description" / "meshes"
    meshes.mkdir(parents=True, exist_ok=True)
    (meshes / "box.obj").write_text(BOX_OBJ)
    path = folder / "card.yaml"
    path.write_text(yaml.safe_dump(tiny_card(**overrides)))
    return path


def refusal(card: Path) -> str:
    with pytest.raises(DemoforgeError) as err:
        resolve_robot(card)
    assert str(card) in str(err.value)  # every refusal names the card file
    return str(err.value)


def test_a_urdf_card_gets_its_meshes_servos_tcp_and_wrist_camera(tmp_path):
    card = resolve_robot(write_robot(tmp_path))
    scene = build_scene(SceneSpec(robot=card, props=()))
    model, robot = scene.model, scene.robot
    # package://tiny_description/meshes/box.obj found under mesh_root: the base is the 10 cm box
    (mesh,) = range(model.nmesh)
    verts = model.mesh_vert[model.mesh_vertadr[mesh]:model.mesh_vertadr[mesh] + model.mesh_vertnum[mesh]]
    np.testing.assert_allclose(np.ptp(verts, axis=0), [0.1, 0.1, 0.1], atol=1e-9)
    # the fixed hand link is kept as a body (the card names it), carrying the TCP and the camera
    assert model.body(int(model.site_bodyid[robot.tcp_site])).name == "robot/hand"
    assert scene.cameras["wrist"] == robot.wrist_camera and model.body(int(model.cam_bodyid[robot.wrist_camera])).name \
        == "robot/hand"
    assert model.body(int(robot.body_ids[0])).name == "robot/base"  # the base is the robot's, not the world's
    np.testing.assert_allclose(model.actuator_gainprm[robot.gripper_actuator, 0], 300.0)
    # keyframe 0 is home, fingers open, as the built-in arm's: the contact linter starts from it
    home = model.key("robot/home")
    np.testing.assert_array_equal(home.qpos[robot.arm_qpos], card.home)
    np.testing.assert_array_equal(home.qpos[robot.finger_qpos], [0.03, 0.03])
    np.testing.assert_array_equal(home.ctrl, [*card.home, 0.03])
    lint_contact_stability(model, keyframe=0)  # refused for a model without keyframe 0
    # j1 is continuous: its servo is not held to a range (a [0, 0] one would pin it at 0)
    move_joints(scene, card.controller, np.array([0.3, 0.8]), 1.0, 1.0)
    move_joints(scene, card.controller, np.array([0.3, 0.8]), 1.0, 1.0)  # settle
    np.testing.assert_allclose(scene.data.qpos[robot.arm_qpos], [0.3, 0.8], atol=1e-2)
    assert gripper_closedness(robot, scene.data.qpos) > 0.95  # both fingers, through the mimic
    # the TCP sits 0.08 m along the hand's z, 0.3 m along l2 from j2
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    hand = data.xpos[model.body("robot/hand").id]
    np.testing.assert_allclose(data.site_xpos[robot.tcp_site] - hand, data.xmat[model.body("robot/hand").id]
                               .reshape(3, 3) @ [0, 0, 0.08], atol=1e-12)


def test_tcp_quat_turns_the_added_tcp_site_in_its_body(tmp_path):
    card = resolve_robot(write_robot(tmp_path, tcp_quat=[0.0, 1.0, 0.0, 0.0]))  # half a turn about x
    scene = build_scene(SceneSpec(robot=card, props=()))
    hand = scene.data.xmat[scene.model.body("robot/hand").id].reshape(3, 3)
    np.testing.assert_allclose(scene.data.site_xmat[scene.robot.tcp_site].reshape(3, 3), hand @ np.diag([1, -1, -1]),
                               atol=1e-12)
    assert card_to_dict(card)["tcp_quat"] == [0.0, 1.0, 0.0, 0.0]
    assert "tcp_quat" not in card_to_dict(load_card(write_robot(tmp_path)))


def test_mesh_root_may_be_the_package_folder_itself(tmp_path):
    card = resolve_robot(write_robot(tmp_path, mesh_root="ros/tiny_description"))
    assert robot_meshes(card) == 1


def robot_meshes(card) -> int:
    return build_scene(SceneSpec(robot=card, props=())).model.nmesh


def test_a_missing_or_broken_urdf_is_refused_naming_the_field_value_and_fix(tmp_path):
    msg = refusal(write_robot(tmp_path, model="arms/nosuch.urdf"))
    assert "model 'arms/nosuch.urdf'" in msg and str(tmp_path / "arms/nosuch.urdf") in msg
    assert "fix the card's model" in msg
    card = write_robot(tmp_path)
    (tmp_path / "tiny.urdf").write_text("<robot name='tiny'><link name='base'><joint></robot>")
    msg = refusal(card)
    assert "model 'tiny.urdf': MuJoCo cannot read the URDF" in msg and "fix the URDF" in msg


def test_a_mesh_outside_mesh_root_is_refused_with_every_path_tried(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    msg = refusal(write_robot(tmp_path, mesh_root="elsewhere"))
    assert str(tmp_path / "tiny.urdf") in msg and "mesh 'package://tiny_description/meshes/box.obj'" in msg
    assert str(tmp_path / "elsewhere/tiny_description/meshes/box.obj") in msg and "set mesh_root" in msg
    msg = refusal(write_robot(tmp_path, mesh_root="nowhere"))
    assert "mesh_root 'nowhere'" in msg and "does not exist" in msg


def test_a_joint_the_urdf_lacks_is_refused_with_the_joints_it_has(tmp_path):
    msg = refusal(write_robot(tmp_path, arm_joints=["j1", "elbow"]))
    assert str(tmp_path / "tiny.urdf") in msg
    assert "arm_joints ['elbow'] not in the URDF; its movable joints: ['fj1', 'fj2', 'j1', 'j2']" in msg
    msg = refusal(write_robot(tmp_path, finger_joints=[{"name": "claw", "open": 0.03, "closed": 0.0}]))
    assert "finger_joints ['claw'] not in the URDF; joints beside the arm's: ['fj1', 'fj2']" in msg


def test_a_urdf_without_gripper_joints_is_refused(tmp_path):
    msg = refusal(write_robot(tmp_path, fingers=False))
    assert "finger_joints ['fj1', 'fj2']: the URDF has no gripper joints" in msg and "gripper:" in msg


def test_a_urdf_gripper_mount_is_refused(tmp_path):
    mount = {"model": "tiny.urdf", "site": "tcp", "prefix": "gripper/"}
    msg = refusal(write_robot(tmp_path, gripper=mount))
    assert "gripper.model 'tiny.urdf' is a URDF" in msg and "mount an MJCF gripper" in msg


def test_load_urdf_reads_limits_without_a_card(tmp_path):
    write_robot(tmp_path)
    model = load_urdf(tmp_path / "tiny.urdf", mesh_root=tmp_path / "ros").compile()
    assert model.nmesh == 1 and model.joint("j2").range.tolist() == [-2.0, 2.0]
    with pytest.raises(DemoforgeError, match="mesh 'package://tiny_description/meshes/box.obj': no file at"):
        load_urdf(tmp_path / "tiny.urdf")


def test_bad_urdf_keys_are_reported_together(tmp_path):
    msg = refusal(write_robot(tmp_path, gripper_gains=[300], wrist_camera_mount={"body": "hand", "pos": [0, 0]}))
    assert "gripper_gains: [300] is not [kp, kd]" in msg and "wrist_camera_mount: {'body': 'hand'" in msg
    msg = refusal(write_robot(tmp_path, wrist_camera_mount={"body": "palm", "pos": [0, 0, 0], "quat": [1, 0, 0, 0]}))
    assert "wrist_camera_mount.body 'palm' not in the model" in msg and "'hand'" in msg


def test_cards_without_urdf_keys_record_exactly_as_before():
    before = ["name", "model", "arm_joints", "arm_actuators", "tcp_site", "finger_joints", "gripper_actuator",
              "gripper_ctrl", "home", "controller", "joint_limits", "max_velocity", "max_acceleration", "max_jerk",
              "wrist_camera", "tcp_body", "tcp_pos", "gripper", "finger_stroke_m", "gravity_compensation"]
    for card in (panda_card(), ur5e_2f85_card()):
        assert list(card_to_dict(card)) == before


def test_a_urdf_card_round_trips_with_its_paths_made_absolute(tmp_path):
    card = load_card(write_robot(tmp_path))
    record = json.loads(json.dumps(card_to_dict(card)))
    assert record["mesh_root"] == str((tmp_path / "ros").resolve())
    assert record["model"] == str((tmp_path / "tiny.urdf").resolve())
    assert record["gripper_gains"] == [300.0, 30.0] and record["wrist_camera_mount"]["fovy"] == 70.0
    again = card_from_dict(record, where="x")
    assert card_to_dict(again) == record and robot_meshes(again) == 1  # rebuilt from the record alone, anywhere


# pybullet's Panda URDF (the `urdf` extra): the built-in arm's kinematics from a real URDF with meshes.
PANDA_URDF = EXAMPLES / "panda_urdf.yaml"


@pytest.fixture(scope="module")
def urdf_panda():
    pytest.importorskip("pybullet_data")
    return resolve_robot(PANDA_URDF)


def test_pybullet_panda_urdf_has_the_builtin_panda_s_tcp_and_wrist_camera(urdf_panda):
    poses = []
    for card in (urdf_panda, panda_card()):
        scene = build_scene(SceneSpec(robot=card, props=()))
        r, d = scene.robot, scene.data
        poses.append((d.site_xpos[r.tcp_site].copy(), d.site_xmat[r.tcp_site].copy(),
                      d.cam_xpos[r.wrist_camera].copy(), d.cam_xmat[r.wrist_camera].copy()))
    for urdf, builtin in zip(*poses, strict=True):
        np.testing.assert_allclose(urdf, builtin, atol=1e-6)
    assert scene.model.nmesh == 0 and build_scene(SceneSpec(robot=urdf_panda, props=())).model.nmesh == 10


def test_pybullet_panda_urdf_reaches_holds_and_grips(urdf_panda):
    scene = build_scene(SceneSpec(robot=urdf_panda, props=()))
    model, data, robot = scene.model, scene.data, scene.robot
    rng = np.random.default_rng(0)
    scratch = mujoco.MjData(model)
    home = np.array(urdf_panda.home)
    target = data.site_xpos[robot.tcp_site] + [0.05, -0.1, -0.1]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, data.site_xmat[robot.tcp_site])
    ik = solve_ik(model, scratch, robot, target, quat, rng=rng, q_init=home)
    assert ik.success
    move_joints(scene, urdf_panda.controller, ik.q, 1.0, 1.5)
    np.testing.assert_allclose(data.site_xpos[robot.tcp_site], target, atol=2e-3)
    assert gripper_closedness(robot, data.qpos) > 0.99
    move_joints(scene, urdf_panda.controller, ik.q, 0.0, 1.0)
    assert gripper_closedness(robot, data.qpos) < 0.01


def test_pick_and_place_with_the_pybullet_panda_urdf(urdf_panda, tmp_path):
    from demoforge.dataset import check_dataset, open_dataset
    from demoforge.execute import generate
    from demoforge.tasks import generate_family, write_tasks

    paths = write_tasks(generate_family("pnp", count=1, seed=5), tmp_path / "tasks")
    problems = [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    summary = generate(problems, tmp_path / "run", episodes_per_problem=2, seed=0, robot=urdf_panda)
    assert summary.successes == 2
    root = summary.roots["success"]
    assert check_dataset(root) == [] and open_dataset(root).info.robot_type == "panda_urdf"
    scene = json.loads(next((root / "meta/demoforge/scenes").iterdir()).read_text())
    assert scene["robot"]["model"] == "package://pybullet_data/franka_panda/panda.urdf"


def test_the_doctor_reads_limits_from_a_urdf_with_package_meshes():
    """`doctor --robot-model panda.urdf`: a URDF whose meshes are package:// paths loads (they
    resolve against its folder), and its limited joints are the ones the doctor checks."""
    pybullet_data = pytest.importorskip("pybullet_data")
    from demoforge.doctor.limits import model_limits

    names, limits = model_limits(Path(pybullet_data.getDataPath()) / "franka_panda" / "panda.urdf")
    assert names[:7] == tuple(f"panda_joint{k}" for k in range(1, 8)) and limits.shape == (len(names), 2)
    assert (limits[:, 0] < limits[:, 1]).all()
