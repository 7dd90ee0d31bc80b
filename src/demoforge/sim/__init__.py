"""MuJoCo core: robot cards and the built-in arm, scenes, materials, controllers, IK, state, cameras.

Offscreen rendering needs its GL backend chosen before mujoco is imported: EGL by default,
OSMesa when EGL is missing (see gl_backend.py).
"""

from demoforge.sim.gl_backend import choose_gl_backend

GL_BACKEND = choose_gl_backend()

from demoforge.sim.arm import build_panda_spec  # noqa: E402
from demoforge.sim.cameras import (  # noqa: E402
    CameraRig,
    Intrinsics,
    intrinsics,
    open_renderer,
    project,
    world_T_camera,
)
from demoforge.sim.controllers import (  # noqa: E402
    ControlLaw,
    apply_command,
    apply_control_law,
    command_size,
    command_toward,
    gripper_ctrl,
    joint_targets,
    site_jacobian,
)
from demoforge.sim.ik import (  # noqa: E402
    IKOptions, IKResult, first_collision, nearest_ik, path_collides, solve_ik, solve_ik_near,
)
from demoforge.sim.materials import MATERIALS, Material, material, material_problems  # noqa: E402
from demoforge.sim.robot import (  # noqa: E402
    FingerJoint, GripperMount, RobotCard, card_from_dict, card_to_dict, load_card, panda_card,
)
from demoforge.sim.robot_model import RobotIndex, bind_robot, gripper_closedness, robot_spec, tcp_positions  # noqa: E402
from demoforge.sim.robots import ROBOTS, check_card, resolve_robot, ur5e_2f85_card  # noqa: E402
from demoforge.sim.props import Box, Cylinder, MeshProp, body_half_extents, half_extents  # noqa: E402
from demoforge.sim.scene import (  # noqa: E402
    DEFAULT_CAMERAS,
    ROBOT_PREFIX,
    Camera,
    Light,
    Scene,
    SceneSpec,
    Table,
    build_scene,
    default_scene,
    look_at_quat,
    scene_from_model,
    scene_mjspec,
)
from demoforge.sim.state import restore, snapshot, state_size  # noqa: E402
from demoforge.sim.stepping import control_step, move_joints, reset, step  # noqa: E402

__all__ = [
    "DEFAULT_CAMERAS", "MATERIALS", "ROBOTS", "ROBOT_PREFIX", "Box", "Camera", "CameraRig", "ControlLaw", "Cylinder", "FingerJoint",
    "GripperMount", "IKOptions", "IKResult", "Intrinsics", "Light", "Material", "MeshProp", "RobotCard",
    "RobotIndex", "Scene", "SceneSpec", "Table", "apply_command", "apply_control_law", "bind_robot",
    "body_half_extents", "build_panda_spec", "command_size", "command_toward", "build_scene", "card_from_dict", "card_to_dict", "check_card", "control_step", "default_scene", "first_collision", "gripper_closedness", "tcp_positions",
    "gripper_ctrl", "half_extents", "intrinsics", "joint_targets", "load_card", "look_at_quat", "material", "material_problems", "move_joints",
    "open_renderer", "panda_card", "path_collides", "project", "reset", "resolve_robot", "restore", "robot_spec", "scene_from_model", "scene_mjspec", "site_jacobian",
    "nearest_ik", "snapshot", "solve_ik", "solve_ik_near", "state_size", "step", "ur5e_2f85_card", "world_T_camera",
]
