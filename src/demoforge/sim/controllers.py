"""Control laws: what a command means, as a frozen record stamped into every dataset.

Two modes: `joint_position` (a command is the arm's joint targets [rad]) and `cartesian_delta`
(a command is a TCP displacement [m] and rotation vector [rad] in the world frame, added to the
last joint targets through one damped-least-squares differential-IK step). The gripper command is a
closedness in [0, 1] mapped linearly between the card's open and closed actuator controls.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from demoforge.errors import SimError

if TYPE_CHECKING:
    from demoforge.sim.robot_model import RobotIndex

MODES = ("joint_position", "cartesian_delta")
GRIPPER_DRIVES = ("continuous", "binary")


@dataclass(frozen=True)
class ControlLaw:
    """How commands become actuator controls."""

    mode: str  # one of MODES
    kp: tuple[float, ...]  # per arm joint position gain [N m/rad]
    kd: tuple[float, ...]  # per arm joint damping gain [N m s/rad]
    scales: tuple[float, ...] = ()  # per command component multiplier; () = all 1
    gripper_drive: str = "continuous"  # "continuous" closedness, or "binary" (>= 0.5 closes)
    damping: float = 0.05  # differential-IK damping lambda [-] (cartesian_delta)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys) for dataset metadata."""
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_dict(raw: dict, *, where: str = "controller") -> ControlLaw:
        """From YAML/JSON; unknown or missing keys are errors."""
        fields = set(ControlLaw.__dataclass_fields__)
        unknown = sorted(set(raw) - fields)
        missing = sorted({"mode", "kp", "kd"} - set(raw))
        if unknown or missing:
            raise SimError(f"{where}: unknown keys {unknown}, missing keys {missing}; valid keys: {sorted(fields)}")
        tuples = {k: tuple(float(x) for x in raw[k]) for k in ("kp", "kd", "scales") if k in raw}
        return ControlLaw(**{**raw, **tuples})


def command_size(law: ControlLaw, n_arm: int) -> int:
    """Length of an arm command under `law`."""
    return n_arm if law.mode == "joint_position" else 6


def law_problems(law: ControlLaw, n_arm: int, *, where: str = "controller") -> list[str]:
    """Every reason `law` cannot drive an arm of `n_arm` joints."""
    problems = []
    if law.mode not in MODES:
        problems.append(f"{where}.mode {law.mode!r} is not one of {list(MODES)}")
    if law.gripper_drive not in GRIPPER_DRIVES:
        problems.append(f"{where}.gripper_drive {law.gripper_drive!r} is not one of {list(GRIPPER_DRIVES)}")
    for label, gains in (("kp", law.kp), ("kd", law.kd)):
        if len(gains) != n_arm:
            problems.append(f"{where}.{label} needs {n_arm} values (one per arm joint), got {len(gains)}")
        elif any(not g >= 0 for g in gains):
            problems.append(f"{where}.{label} must be >= 0, got {gains}")
    if law.mode in MODES and law.scales and len(law.scales) != command_size(law, n_arm):
        problems.append(
            f"{where}.scales needs {command_size(law, n_arm)} values for mode {law.mode!r}, got {len(law.scales)}"
        )
    return problems


def apply_control_law(model: mujoco.MjModel, robot: RobotIndex, law: ControlLaw) -> None:
    """Write the law's kp/kd into the arm's position actuators of `model` (in place)."""
    problems = law_problems(law, len(robot.arm_qpos))
    for i, act in enumerate(robot.arm_actuators):
        if int(model.actuator_biastype[act]) != int(mujoco.mjtBias.mjBIAS_AFFINE):
            problems.append(f"actuator {model.actuator(act).name!r} is not a position actuator (affine bias)")
    if problems:
        raise SimError("control law does not fit the robot:\n  " + "\n  ".join(problems))
    for i, act in enumerate(robot.arm_actuators):
        # Position servo: force = kp * (ctrl - q) - kd * qdot.
        model.actuator_gainprm[act, 0] = law.kp[i]
        model.actuator_biasprm[act, 1] = -law.kp[i]
        model.actuator_biasprm[act, 2] = -law.kd[i]


def joint_targets(
    model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex, law: ControlLaw, command: np.ndarray
) -> np.ndarray:
    """Arm joint targets [rad] for one arm command under `law`. Targets are not clipped:
    the actuators' control range and the joint limits bound the motion, as on a real robot."""
    command = np.asarray(command, dtype=float)
    expected = command_size(law, len(robot.arm_qpos))
    if command.shape != (expected,):
        raise SimError(f"command for mode {law.mode!r} must have shape ({expected},), got {command.shape}")
    if law.scales:
        command = command * np.asarray(law.scales)
    if law.mode == "joint_position":
        return command
    # The Jacobian at the current qpos: after mj_step the kinematics in `data` are one substep
    # old, and a restored snapshot has them fresh; refreshed here, the targets are a function of
    # the state alone (qpos and the last targets), so a recorded episode replays bit for bit.
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)  # mj_jacSite reads the com-based dof frames
    jac = site_jacobian(model, data, robot)
    lam2 = law.damping**2
    dq = jac.T @ np.linalg.solve(jac @ jac.T + lam2 * np.eye(6), command)
    # Integrate from the last joint targets, not the measured joints: a position servo lags its
    # target, and restarting from the lagging joints each tick would shrink every motion.
    return data.ctrl[robot.arm_actuators] + dq


def command_toward(
    model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex, law: ControlLaw, q_target: np.ndarray,
    scratch: mujoco.MjData,
) -> np.ndarray:
    """The arm command under `law` that asks for joint targets `q_target` [rad] from the state in `data`.

    joint_position: `q_target` itself. cartesian_delta: the TCP displacement [m] and world-frame
    rotation vector [rad] from the pose of the joint targets in force (forward kinematics of the
    arm's `data.ctrl`) to the pose of `q_target`, divided by the law's scales. Measured from the
    targets, not the measured joints: the controller integrates from its last targets, so the
    command corrects its own linearization error without winding up the servo's lag. `scratch`:
    an MjData of `model` for the forward kinematics (`data` is not touched)."""
    q_target = np.asarray(q_target, dtype=float)
    if law.mode == "joint_position":
        return q_target
    if law.mode != "cartesian_delta":
        raise SimError(f"control law mode {law.mode!r} is not one of {list(MODES)}")
    scratch.qpos[robot.arm_qpos] = data.ctrl[robot.arm_actuators]
    mujoco.mj_kinematics(model, scratch)
    pos, quat = scratch.site_xpos[robot.tcp_site].copy(), np.zeros(4)
    mujoco.mju_mat2Quat(quat, scratch.site_xmat[robot.tcp_site])
    scratch.qpos[robot.arm_qpos] = q_target
    mujoco.mj_kinematics(model, scratch)
    goal, inv, diff = np.zeros(4), np.zeros(4), np.zeros(4)
    mujoco.mju_mat2Quat(goal, scratch.site_xmat[robot.tcp_site])
    mujoco.mju_negQuat(inv, quat)
    mujoco.mju_mulQuat(diff, goal, inv)  # world frame: goal = diff * current
    command = np.empty(6)
    command[:3] = scratch.site_xpos[robot.tcp_site] - pos
    mujoco.mju_quat2Vel(command[3:], diff, 1.0)
    return command / np.asarray(law.scales) if law.scales else command


def site_jacobian(model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex) -> np.ndarray:
    """(6, n_arm) TCP Jacobian [translation; rotation] in the world frame over the arm dofs."""
    jacp = np.zeros((3, model.nv))
    jacr = np.zeros((3, model.nv))
    mujoco.mj_jacSite(model, data, jacp, jacr, robot.tcp_site)
    return np.vstack([jacp[:, robot.arm_dofs], jacr[:, robot.arm_dofs]])


def gripper_ctrl(robot: RobotIndex, law: ControlLaw, closedness: float) -> float:
    """Actuator control for a gripper closedness in [0, 1]."""
    if not 0.0 <= closedness <= 1.0:
        raise SimError(f"gripper closedness must be in [0, 1], got {closedness}")
    if law.gripper_drive == "binary":
        closedness = 1.0 if closedness >= 0.5 else 0.0
    c_open, c_closed = robot.gripper_ctrl
    return c_open + closedness * (c_closed - c_open)


def apply_command(
    model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex, law: ControlLaw,
    command: np.ndarray, gripper: float,
) -> None:
    """Set `data.ctrl` for one arm command and a gripper closedness."""
    data.ctrl[robot.arm_actuators] = joint_targets(model, data, robot, law, command)
    data.ctrl[robot.gripper_actuator] = gripper_ctrl(robot, law, gripper)
