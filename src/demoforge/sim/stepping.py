"""Advancing a scene: reset to home, raw physics steps, and one control tick.

The hot path adds only a few array writes per control tick on top of `mj_step`; the
benchmark (benchmarks/bench_sim.py) holds it to that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import numpy as np

from demoforge.sim.controllers import ControlLaw, apply_command

if TYPE_CHECKING:
    from demoforge.sim.scene import Scene


def reset(scene: Scene) -> None:
    """Props at their spec poses, arm at the card's home pose, gripper open, velocities zero."""
    m, d, robot = scene.model, scene.data, scene.robot
    mujoco.mj_resetData(m, d)
    home = np.asarray(robot.card.home)
    d.qpos[robot.arm_qpos] = home
    d.qpos[robot.finger_qpos] = robot.finger_open
    d.ctrl[robot.arm_actuators] = home
    d.ctrl[robot.gripper_actuator] = robot.gripper_ctrl[0]
    mujoco.mj_forward(m, d)


def step(scene: Scene, nstep: int = 1) -> None:
    """`nstep` physics steps with the current controls."""
    mujoco.mj_step(scene.model, scene.data, nstep)


def control_step(scene: Scene, law: ControlLaw, command: np.ndarray, gripper: float, substeps: int) -> None:
    """One control tick: turn (arm command, gripper closedness) into controls under `law`,
    then `substeps` physics steps (10 at 60 Hz control with 1/600 s physics)."""
    apply_command(scene.model, scene.data, scene.robot, law, command, gripper)
    mujoco.mj_step(scene.model, scene.data, substeps)


def move_joints(
    scene: Scene, law: ControlLaw, q_target: np.ndarray, gripper: float, duration: float,
    *, control_hz: float = 60.0,
) -> None:
    """Drive the arm along a straight joint-space line to `q_target` [rad] over `duration` [s]
    at `control_hz`, holding the gripper command; needs a `joint_position` law."""
    substeps = round(1.0 / (control_hz * scene.model.opt.timestep))
    ticks = max(1, round(duration * control_hz))
    q0 = scene.data.ctrl[scene.robot.arm_actuators].copy()
    for k in range(1, ticks + 1):
        control_step(scene, law, q0 + (np.asarray(q_target) - q0) * (k / ticks), gripper, substeps)
