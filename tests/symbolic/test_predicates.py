"""Predicates evaluated on constructed scenes: towers, flips, yaws, a held block, regions."""

import itertools

import mujoco
import numpy as np
import pytest

from demoforge.sim import move_joints, solve_ik
from demoforge.symbolic import (
    FACES,
    YAWS,
    SymbolError,
    abstract,
    bind_symbols,
    block_rotation,
    face_up,
    yaw_of,
)
from demoforge.tasks import Region
from tests.symbolic.scenes import EDGE, LEFT, away, fluent, make_params, make_task, place, scene_for, settle


def upright(*blocks):
    return {a for b in blocks for a in (("face_up", b, "pz"), ("yaw", b, "yaw0"))}


@pytest.mark.parametrize(("face", "yaw"), list(itertools.product(FACES, YAWS)))
def test_rotation_reads_back_as_its_face_and_yaw(face, yaw):
    rot = block_rotation(face, yaw)
    assert np.allclose(rot @ rot.T, np.eye(3)) and np.isclose(np.linalg.det(rot), 1.0)
    assert face_up(rot, 0.01) == face
    assert yaw_of(rot, face, 0.01) == yaw


def test_tilt_and_yaw_tolerances():
    def rz(t):
        return np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])

    def rx(t):
        return np.array([[1, 0, 0], [0, np.cos(t), -np.sin(t)], [0, np.sin(t), np.cos(t)]])

    assert yaw_of(rz(np.radians(10)), "pz", np.radians(15)) == "yaw0"
    assert yaw_of(rz(np.radians(20)), "pz", np.radians(15)) is None
    assert yaw_of(rz(np.radians(-85)), "pz", np.radians(15)) == "yaw270"
    assert face_up(rx(np.radians(10)), np.radians(15)) == "pz"
    assert face_up(rx(np.radians(45)), np.radians(15)) is None


def test_tower_abstracts_to_on_facts():
    scene, binding = scene_for()
    place(scene, "c", (0.0, 0.0))
    place(scene, "b", (0.0, 0.0), z_table=1.5 * EDGE + 0.0005)
    place(scene, "a", (0.005, -0.004), z_table=2.5 * EDGE + 0.001)
    settle(scene)
    assert fluent(scene, binding) == {("on", "a", "b"), ("on", "b", "c"), ("on_table", "c"), ("clear", "a"),
                                      ("hand_empty",)} | upright("a", "b", "c")


def test_block_beside_another_is_not_on_it():
    scene, binding = scene_for()
    place(scene, "a", (0.0, 0.0))
    place(scene, "b", (0.0, EDGE + 0.01))
    place(scene, "c", (0.1, 0.0))
    settle(scene)
    atoms = fluent(scene, binding)
    assert not {a for a in atoms if a[0] == "on"}
    assert {("on_table", b) for b in "abc"} <= atoms and {("clear", b) for b in "abc"} <= atoms


def test_flipped_and_rotated_blocks():
    scene, binding = scene_for()
    place(scene, "a", (0.0, -0.1), face="nz")
    place(scene, "b", (0.0, 0.0), face="px", yaw="yaw180")
    place(scene, "c", (0.0, 0.1), yaw="yaw90")
    settle(scene)
    atoms = fluent(scene, binding)
    assert {a for a in atoms if a[0] in ("face_up", "yaw")} == {
        ("face_up", "a", "nz"), ("yaw", "a", "yaw0"), ("face_up", "b", "px"), ("yaw", "b", "yaw180"),
        ("face_up", "c", "pz"), ("yaw", "c", "yaw90")}


def test_a_leaning_block_has_no_face_and_no_yaw():
    scene, binding = scene_for()
    away(scene, "bc")
    adr = scene.prop_qpos["a"]
    place(scene, "a", (0.0, 0.0), z_table=0.03)
    t = np.radians(40)  # mid-fall: tipped 40 degrees about x
    scene.data.qpos[adr + 3:adr + 7] = (np.cos(t / 2), np.sin(t / 2), 0.0, 0.0)
    mujoco.mj_forward(scene.model, scene.data)
    atoms = fluent(scene, binding)
    assert not {a for a in atoms if a[1:2] == ("a",) and a[0] in ("face_up", "yaw", "on_table")}


def test_a_moving_block_is_not_resting():
    scene, binding = scene_for()
    away(scene, "abc")
    settle(scene, 0.1)
    assert ("on_table", "a") in fluent(scene, binding)
    dof = scene.model.jnt_dofadr[scene.model.body_jntadr[scene.props["a"]]]
    scene.data.qvel[dof] = 0.5  # sliding at 0.5 m/s
    mujoco.mj_forward(scene.model, scene.data)
    assert ("on_table", "a") not in fluent(scene, binding)


def test_block_in_region():
    scene, binding = scene_for(regions=(LEFT,))
    place(scene, "a", (0.0, 0.24))  # centre of region left
    place(scene, "b", (0.0, 0.16))  # beside it: centre outside
    place(scene, "c", (0.0, 0.0))
    settle(scene)
    atoms = fluent(scene, binding)
    assert {a for a in atoms if a[0] == "in_region"} == {("in_region", "a", "left")}


def test_regions_are_visual_only():
    scene, binding = scene_for(regions=(LEFT,))
    g = scene.model.geom("region/left").id
    assert scene.model.geom_contype[g] == 0 and scene.model.geom_conaffinity[g] == 0
    place(scene, "a", (0.0, 0.24))
    away(scene, "bc")
    settle(scene)
    z = scene.data.body("a").xpos[2] - scene.spec.table.height
    assert abs(z - EDGE / 2) < 0.002  # rests on the table top, not on the region slab


def test_held_block_with_the_real_arm():
    scene, binding = scene_for()
    away(scene, "bc")
    place(scene, "a", (0.15, 0.0))
    settle(scene, 0.2)
    m, d, robot = scene.model, scene.data, scene.robot
    down = np.zeros(4)
    mujoco.mju_mat2Quat(down, d.site_xmat[robot.tcp_site])
    scratch = mujoco.MjData(m)
    scratch.qpos[:] = d.qpos
    rng = np.random.default_rng(0)
    cube = d.body("a").xpos.copy()
    pre = solve_ik(m, scratch, robot, cube + [0, 0, 0.1], down, rng=rng)
    grasp = solve_ik(m, scratch, robot, cube, down, rng=rng, q_init=pre.q)
    lift = solve_ik(m, scratch, robot, cube + [0, 0, 0.1], down, rng=rng, q_init=grasp.q)
    assert pre.success and grasp.success and lift.success
    law = robot.card.controller
    move_joints(scene, law, pre.q, 0.0, 0.6)
    move_joints(scene, law, grasp.q, 0.0, 0.6)
    move_joints(scene, law, grasp.q, 1.0, 0.4)
    squeezed = fluent(scene, binding)
    assert not {("holding", "a"), ("on_table", "a")} <= squeezed  # never both at once
    move_joints(scene, law, lift.q, 1.0, 0.8)
    atoms = fluent(scene, binding)
    assert ("holding", "a") in atoms
    assert not {("hand_empty",), ("on_table", "a"), ("clear", "a")} & atoms
    assert {("on_table", "b"), ("on_table", "c"), ("face_up", "a", "pz")} <= atoms


def test_abstract_gives_exactly_the_grounded_atoms_and_the_static_ones():
    scene, binding = scene_for()
    away(scene, "abc")
    settle(scene, 0.1)
    atoms = abstract(scene.model, scene.data, binding)
    assert binding.static_atoms <= atoms
    assert {a[0] for a in atoms - binding.static_atoms} == {"on_table", "clear", "hand_empty", "face_up", "yaw"}
    # every atom names declared objects or constants, with the declared arity
    names = {n for n, _ in binding.task.objects} | {n for n, _ in binding.task.constants}
    assert all(set(a[1:]) <= names for a in atoms)


def test_binding_reports_every_missing_object():
    scene, _ = scene_for()
    task = make_task([("hand_empty",)], blocks=("a", "b", "c", "d"), regions=["left", "far"])
    params = make_params(regions=(LEFT,))
    with pytest.raises(SymbolError) as err:
        bind_symbols(scene, task, params)
    text = str(err.value)
    assert "'d'" in text and "'far'" in text and "p.pddl" in text


def test_region_tolerance_margin():
    from dataclasses import replace

    from demoforge.symbolic import Tolerances

    scene, binding = scene_for(regions=(("r", Region((-0.05, 0.05), (0.10, 0.20))),))
    place(scene, "a", (0.0, 0.205))  # 5 mm outside the rectangle
    away(scene, "bc")
    settle(scene, 0.1)
    assert ("in_region", "a", "r") not in fluent(scene, binding)
    loose = replace(binding, tolerances=Tolerances(region_margin_m=0.01))
    assert ("in_region", "a", "r") in fluent(scene, loose)
