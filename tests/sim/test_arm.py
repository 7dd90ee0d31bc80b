import mujoco
import numpy as np

from demoforge.sim import build_panda_spec

# Franka's published modified-DH parameters (a [m], d [m], alpha [rad]) and flange offset.
DH = [(0, 0.333, 0), (0, 0, -np.pi / 2), (0, 0.316, np.pi / 2), (0.0825, 0, np.pi / 2),
      (-0.0825, 0.384, -np.pi / 2), (0, 0, np.pi / 2), (0.088, 0, np.pi / 2)]


def _dh(a, d, alpha, theta):
    ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
    return np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -d * sa], [st * sa, ct * sa, ca, d * ca], [0, 0, 0, 1]])


def _flange(q):
    pose = np.eye(4)
    for (a, d, alpha), theta in zip(DH, q, strict=True):
        pose = pose @ _dh(a, d, alpha, theta)
    return pose @ _dh(0, 0.107, 0, 0)


def test_kinematics_match_franka_dh():
    model = build_panda_spec().compile()
    data = mujoco.MjData(model)
    rng = np.random.default_rng(1)
    rz = np.array([[np.cos(-np.pi / 4), -np.sin(-np.pi / 4), 0], [np.sin(-np.pi / 4), np.cos(-np.pi / 4), 0], [0, 0, 1]])
    for _ in range(20):
        q = rng.uniform(model.jnt_range[:7, 0], model.jnt_range[:7, 1])
        data.qpos[:7] = q
        mujoco.mj_kinematics(model, data)
        flange = _flange(q)
        np.testing.assert_allclose(data.body("hand").xpos, flange[:3, 3], atol=1e-9)
        np.testing.assert_allclose(data.body("hand").xmat.reshape(3, 3), flange[:3, :3] @ rz, atol=1e-9)


def test_published_limits_and_home_keyframe():
    model = build_panda_spec().compile()
    np.testing.assert_allclose(model.jnt_range[3], [-3.0718, -0.0698])
    np.testing.assert_allclose(model.jnt_range[5], [-0.0175, 3.7525])
    np.testing.assert_allclose(model.key("home").qpos[:7], [0, -0.1847, 0, -2.4969, 0, 2.3122, -0.7853])
    assert all(model.body_gravcomp[model.body(f"link{i}").id] == 1 for i in range(1, 8))


def test_home_pose_holds_still_under_gravity():
    model = build_panda_spec().compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    mujoco.mj_step(model, data, 600)
    np.testing.assert_allclose(data.qpos[:7], model.key("home").qpos[:7], atol=1e-3)
    # TCP points straight down between the fingers.
    np.testing.assert_allclose(data.site("tcp").xmat.reshape(3, 3)[:, 2], [0, 0, -1], atol=1e-3)


def test_fingers_are_coupled_and_follow_the_gripper_actuator():
    model = build_panda_spec().compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("home").id)
    data.ctrl[model.actuator("gripper").id] = 0.01
    mujoco.mj_step(model, data, 600)
    q1, q2 = data.joint("finger_joint1").qpos[0], data.joint("finger_joint2").qpos[0]
    assert abs(q1 - q2) < 1e-4
    assert abs(q1 - 0.01) < 1e-3
