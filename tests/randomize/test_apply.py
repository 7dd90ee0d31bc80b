from dataclasses import replace

import mujoco
import numpy as np
import pytest

from demoforge.randomize import (
    RandomizationError,
    RandomizationSpec,
    apply_to_env,
    apply_to_model,
    apply_to_scene_params,
    dumps_draw,
    env_handle,
    loads_draw,
    sample,
)
from demoforge.tasks.scene import BlockLook, SceneParams

from .conftest import scene_mjspec

SCHEMA = {"schema": "demoforge.randomization/1"}


def test_inertia_scales_with_mass_and_the_frame_is_kept(mjspec, model, targets):
    draw = sample(RandomizationSpec(mass_scale=(0.5, 2.0)), 1, targets)
    new = apply_to_model(draw, mjspec)
    assert new is not model
    for name, s in draw["mass_scale"].items():
        a, b = model.body(name), new.body(name)
        np.testing.assert_allclose(b.mass, a.mass * s, rtol=1e-12)
        np.testing.assert_allclose(b.inertia, a.inertia * s, rtol=1e-12)
        np.testing.assert_allclose(b.ipos, a.ipos, atol=1e-12)
        np.testing.assert_allclose(np.abs(b.iquat @ a.iquat), 1.0, atol=1e-9)
    # Derived quantities are recomputed by the compiler, not left stale.
    assert new.body_subtreemass[0] == pytest.approx(new.body_mass.sum())
    assert new.body_subtreemass[0] != pytest.approx(model.body_subtreemass[0])


def test_props_untouched_unless_the_spec_says_so(mjspec, model, targets):
    spec = RandomizationSpec(mass_scale=(1.5, 2.0), damping_scale=(2.0, 3.0), frictionloss_scale=(2.0, 3.0))
    new = apply_to_model(sample(spec, 2, targets), mjspec)
    cube, joint = model.body("cube"), model.joint("cube")
    assert new.body("cube").mass == cube.mass and np.array_equal(new.body("cube").inertia, cube.inertia)
    dofs = slice(joint.dofadr[0], joint.dofadr[0] + 6)
    assert np.array_equal(new.dof_damping[dofs], model.dof_damping[dofs])
    assert np.array_equal(new.dof_frictionloss[dofs], model.dof_frictionloss[dofs])
    assert new.body("robot/link3").mass[0] > model.body("robot/link3").mass[0] * 1.49
    arm = model.joint("robot/joint2").dofadr[0]
    assert new.dof_damping[arm] >= 2.0 * model.dof_damping[arm] > 0
    with_props = apply_to_model(sample(replace(spec, props=True), 2, targets), mjspec)
    assert with_props.body("cube").mass[0] >= 1.5 * cube.mass[0]
    np.testing.assert_allclose(with_props.body("robot/link3").mass, new.body("robot/link3").mass)


def test_input_spec_is_not_mutated_and_text_sources_work(mjspec, model, targets):
    draw = sample(RandomizationSpec(mass_scale=(2.0, 2.0), damping_scale=(3.0, 3.0)), 0, targets)
    before = mjspec.to_xml()
    apply_to_model(draw, mjspec)
    assert mjspec.to_xml() == before
    again = mjspec.compile()
    assert np.array_equal(again.body_mass, model.body_mass) and np.array_equal(again.dof_damping, model.dof_damping)
    from_text = apply_to_model(draw, before)
    np.testing.assert_allclose(from_text.body_mass, apply_to_model(draw, mjspec).body_mass)


def test_damping_frictionloss_and_gravity(mjspec, model):
    draw = {**SCHEMA, "damping_scale": {"robot/joint1": 2.5}, "frictionloss_scale": {"robot/joint1": 3.0},
            "gravity_delta_mps2": 0.19}
    mj = scene_mjspec()
    mj.joint("robot/joint1").frictionloss = 0.2
    nominal = mj.compile()
    new = apply_to_model(draw, mj)
    dof = model.joint("robot/joint1").dofadr[0]
    assert new.dof_damping[dof] == pytest.approx(2.5 * nominal.dof_damping[dof])
    assert new.dof_frictionloss[dof] == pytest.approx(0.6)
    np.testing.assert_allclose(new.opt.gravity, [0, 0, -10.0])
    others = np.arange(model.nv) != dof
    assert np.array_equal(new.dof_damping[others], nominal.dof_damping[others])


def test_names_that_do_not_fit_are_all_reported(mjspec):
    draw = {**SCHEMA, "mass_scale": {"robot/link9": 1.1, "table": 1.0}, "damping_scale": {"robot/joint8": 1.0}}
    with pytest.raises(RandomizationError) as info:
        apply_to_model(draw, mjspec)
    for word in ("robot/link9", "'table'", "robot/joint8"):
        assert word in str(info.value)
    with pytest.raises(RandomizationError, match="gravity"):
        apply_to_model({**SCHEMA, "gravity_delta_mps2": -20.0}, mjspec)
    with pytest.raises(RandomizationError, match="unknown key"):
        apply_to_model({**SCHEMA, "mass": {}}, mjspec)


def test_recorded_draw_reproduces_the_same_model(mjspec, targets):
    spec = RandomizationSpec(mass_scale=(0.7, 1.3), damping_scale=(0.5, 2.0), gravity_jitter_mps2=0.3)
    draw = sample(spec, 77, targets)
    a, b = apply_to_model(draw, mjspec), apply_to_model(loads_draw(dumps_draw(draw)), mjspec)
    for attr in ("body_mass", "body_inertia", "dof_damping", "dof_frictionloss"):
        assert np.array_equal(getattr(a, attr), getattr(b, attr))
    assert np.array_equal(a.opt.gravity, b.opt.gravity)


def test_gains_scale_from_nominal_and_never_compound(env, targets):
    m, robot, law = env.model, env.robot, env.law
    spec = RandomizationSpec(kp_scale=(0.5, 1.5), kd_scale=(0.5, 1.5))
    for seed in range(5):
        draw = sample(spec, seed, targets)
        apply_to_env(draw, env)
    kp = np.array(law.kp) * [draw["kp_scale"][n] for n in targets.arm_joints]
    kd = np.array(law.kd) * [draw["kd_scale"][n] for n in targets.arm_joints]
    np.testing.assert_allclose(m.actuator_gainprm[robot.arm_actuators, 0], kp, rtol=1e-12)
    np.testing.assert_allclose(m.actuator_biasprm[robot.arm_actuators, 1], -kp, rtol=1e-12)
    np.testing.assert_allclose(m.actuator_biasprm[robot.arm_actuators, 2], -kd, rtol=1e-12)
    apply_to_env(SCHEMA, env)  # a draw without gains restores the nominal law
    np.testing.assert_allclose(m.actuator_gainprm[robot.arm_actuators, 0], law.kp)


def test_spawn_offset_is_clipped_into_the_joint_limits(env, targets):
    robot, d = env.robot, env.data
    home = d.qpos[robot.arm_qpos].copy()
    draw = sample(RandomizationSpec(spawn_jitter=10.0), 4, targets)
    apply_to_env(draw, env)
    q = d.qpos[robot.arm_qpos]
    assert np.all(q >= robot.limits[:, 0]) and np.all(q <= robot.limits[:, 1])
    wanted = home + [draw["spawn_offset"][n] for n in targets.arm_joints]
    clipped = (wanted < robot.limits[:, 0]) | (wanted > robot.limits[:, 1])
    assert clipped.any()  # a 10 rad jitter must hit some limit
    np.testing.assert_array_equal(q[clipped], np.clip(wanted, robot.limits[:, 0], robot.limits[:, 1])[clipped])
    np.testing.assert_allclose(q[~clipped], wanted[~clipped], atol=1e-12)
    np.testing.assert_array_equal(d.ctrl[robot.arm_actuators], q)  # the servo holds the offset pose
    # Small offsets land exactly where asked.
    d.qpos[robot.arm_qpos] = home
    small = sample(RandomizationSpec(spawn_jitter=0.01), 4, targets)
    apply_to_env(small, env)
    np.testing.assert_allclose(d.qpos[robot.arm_qpos], home + [small["spawn_offset"][n] for n in targets.arm_joints])


def test_camera_jitter_does_not_drift_over_100_resets(env, targets):
    m, d, base = env.model, env.data, env.camera_base
    spec = RandomizationSpec(camera_pos_jitter_m=0.05, camera_rot_jitter_rad=0.2)
    front = base.names.index("front")
    for seed in range(100):
        draw = sample(spec, seed, targets)
        apply_to_env(draw, env)
        np.testing.assert_allclose(m.cam_pos[front], base.pos[front] + draw["camera_pos_offset_m"]["front"], atol=1e-15)
        # The tilt is exactly the drawn rotation relative to the nominal orientation.
        rel = np.zeros(4)
        inv = base.quat[front] * [1, -1, -1, -1]
        mujoco.mju_mulQuat(rel, inv, m.cam_quat[front])
        angle = 2 * np.arctan2(np.linalg.norm(rel[1:]), rel[0])
        assert angle == pytest.approx(np.linalg.norm(draw["camera_rot_offset_rad"]["front"]), abs=1e-9)
    apply_to_env(SCHEMA, env)
    assert np.array_equal(m.cam_pos, base.pos) and np.array_equal(m.cam_quat, base.quat)
    np.testing.assert_allclose(d.cam_xpos[front], base.pos[front], atol=1e-12)  # mj_forward ran


def test_env_rejects_names_it_does_not_have(env):
    with pytest.raises(RandomizationError, match="not arm joints"):
        apply_to_env({**SCHEMA, "kp_scale": {"robot/finger_joint1": 1.0}}, env)
    with pytest.raises(RandomizationError, match="'back'"):
        apply_to_env({**SCHEMA, "camera_pos_offset_m": {"back": [0, 0, 0]}}, env)


def test_scene_range_overrides():
    params = SceneParams(problem="p", family="stack_three", split="train", seed=1,
                         blocks=(("red", BlockLook((1, 0, 0, 1), "A", "task")),))
    out = apply_to_scene_params(RandomizationSpec(friction=(0.3, 0.4), block_size_m=(0.02, 0.03)), params)
    assert out.friction == (0.3, 0.4) and out.block_size_m == (0.02, 0.03)
    assert out.table_height_offset_m == params.table_height_offset_m
    assert apply_to_scene_params(RandomizationSpec(), params) == params


def test_nominal_model_saves_a_compile_with_the_same_result(mjspec, model, targets):
    draw = sample(RandomizationSpec(mass_scale=(0.5, 2.0)), 8, targets)
    a, b = apply_to_model(draw, mjspec), apply_to_model(draw, mjspec, nominal=model)
    assert np.array_equal(a.body_mass, b.body_mass) and np.array_equal(a.body_inertia, b.body_inertia)
    with pytest.raises(RandomizationError, match="nominal"):
        apply_to_model(draw, mjspec, nominal=mujoco.MjModel.from_xml_string("<mujoco/>"))


def test_compiler_settings_that_would_undo_mass_scaling_are_refused(targets):
    draw = {**SCHEMA, "mass_scale": {"b": 2.0}}
    body = '<worldbody><body name="b"><freejoint/><geom size=".1"/></body></worldbody>'
    with pytest.raises(RandomizationError, match="inertiafromgeom"):
        apply_to_model(draw, f'<mujoco><compiler inertiafromgeom="true"/>{body}</mujoco>')
    with pytest.raises(RandomizationError, match="settotalmass"):
        apply_to_model(draw, f'<mujoco><compiler settotalmass="20"/>{body}</mujoco>')
    assert apply_to_model(draw, f"<mujoco>{body}</mujoco>").body("b").mass[0] == pytest.approx(2 * 1000 * 4 / 3 * np.pi * 1e-3)


def test_env_reproduces_a_run_from_the_recorded_draw(mjspec, robot, targets):
    spec = RandomizationSpec(mass_scale=(0.8, 1.2), kp_scale=(0.8, 1.2), kd_scale=(0.8, 1.2),
                             camera_pos_jitter_m=0.02, camera_rot_jitter_rad=0.1, spawn_jitter=0.2)
    draw = sample(spec, 2024, targets)
    runs = []
    for recorded in (draw, loads_draw(dumps_draw(draw))):
        model = apply_to_model(recorded, mjspec)
        data = mujoco.MjData(model)
        data.qpos[robot.arm_qpos] = robot.card.home
        apply_to_env(recorded, env_handle(model, data, robot))
        mujoco.mj_step(model, data, 300)
        runs.append((model.cam_pos.copy(), model.cam_quat.copy(), model.actuator_gainprm.copy(), data.qpos.copy()))
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a, b)
