"""A tiny scene built like `build_scene` does: one free cube, a world camera, the built-in arm
attached under the robot prefix; kept as an MjSpec so model-level draws can recompile it."""

import mujoco
import pytest

from demoforge.randomize import draw_targets, env_handle
from demoforge.sim import ROBOT_PREFIX, bind_robot, panda_card, robot_spec


def scene_mjspec() -> mujoco.MjSpec:
    mj = mujoco.MjSpec()
    mj.compiler.degree = False
    mj.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    mj.worldbody.add_camera(name="front", pos=[1.3, 0.0, 1.0], quat=[0.6, 0.37, 0.37, 0.6])
    cube = mj.worldbody.add_body(name="cube", pos=[0.5, 0.0, 0.42])
    cube.add_freejoint(name="cube")
    cube.add_geom(name="cube", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.02] * 3, density=800)
    robot = robot_spec(panda_card())
    robot.option.integrator = mj.option.integrator
    mj.attach(robot, frame=mj.worldbody.add_frame(pos=[0.0, 0.0, 0.4]), prefix=ROBOT_PREFIX)
    return mj


@pytest.fixture(scope="module")
def mjspec() -> mujoco.MjSpec:
    return scene_mjspec()


@pytest.fixture(scope="module")
def model(mjspec) -> mujoco.MjModel:
    return mjspec.compile()


@pytest.fixture(scope="module")
def robot(model):
    return bind_robot(model, panda_card(), ROBOT_PREFIX)


@pytest.fixture(scope="module")
def targets(model, robot):
    return draw_targets(model, robot)


@pytest.fixture
def env(mjspec, robot):
    """A fresh model/data pair at the home pose with the card's gains."""
    model = mjspec.compile()
    data = mujoco.MjData(model)
    data.qpos[robot.arm_qpos] = robot.card.home
    data.ctrl[robot.arm_actuators] = robot.card.home
    mujoco.mj_forward(model, data)
    return env_handle(model, data, robot)
