"""Robot cards: the few facts demoforge needs about an arm beyond its model file.

A card names the model (the built-in arm, an MJCF/URDF path, or `package://pkg/path` for
files shipped inside an installed Python package), the arm joints and their actuators, the TCP
site, each finger joint with its open and closed positions, the gripper actuator, the home pose
and controller defaults. `robot_model.bind_robot` checks every name against the compiled model at once: an
unknown finger joint is an error, because a guessed travel corrupts every gripper label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from demoforge.errors import SimError
from demoforge.sim.arm import FINGER_TRAVEL, HOME
from demoforge.sim.controllers import ControlLaw


@dataclass(frozen=True)
class FingerJoint:
    """One finger's joint and its range of motion."""

    name: str  # joint name in the robot model (before the scene prefix)
    open: float  # joint position when fully open [m] (slide) or [rad] (hinge)
    closed: float  # joint position when fully closed, same unit

    @property
    def travel(self) -> float:
        """Distance from open to closed [m] or [rad]."""
        return abs(self.closed - self.open)


@dataclass(frozen=True)
class GripperMount:
    """A separate gripper model attached to a site of the arm model."""

    model: str  # path or package:// URI of the gripper MJCF/URDF
    site: str  # site of the arm model the gripper's base attaches to
    prefix: str = "gripper/"  # prefix for the gripper's names inside the robot


@dataclass(frozen=True)
class RobotCard:
    """Everything demoforge needs to drive an arm and label its gripper."""

    name: str  # short identifier, e.g. "panda"
    model: str  # "builtin:<name>", a path to MJCF/URDF, or "package://pkg/relative/path"
    arm_joints: tuple[str, ...]  # arm joints, base to wrist
    arm_actuators: tuple[str, ...]  # one position actuator per arm joint, same order
    tcp_site: str  # site at the tool centre point
    finger_joints: tuple[FingerJoint, ...]  # joints whose positions define closedness
    gripper_actuator: str  # actuator driving the fingers
    gripper_ctrl: tuple[float, float]  # actuator control (fully open, fully closed)
    home: tuple[float, ...]  # arm joint positions at home [rad]
    controller: ControlLaw  # default control law
    joint_limits: tuple[tuple[float, float], ...] | None = None  # [rad]; None = the model's ranges
    # Per-joint motion limits that skill trajectories are timed under (a motion profile scales
    # them); None = DEFAULT_MOTION_LIMITS for every joint.
    max_velocity: tuple[float, ...] | None = None  # [rad/s]
    max_acceleration: tuple[float, ...] | None = None  # [rad/s^2]
    max_jerk: tuple[float, ...] | None = None  # [rad/s^3]
    wrist_camera: str | None = None  # camera in the robot model used as "wrist"
    tcp_body: str | None = None  # add `tcp_site` to this body (for models without the site, e.g. URDF)
    tcp_pos: tuple[float, float, float] = (0.0, 0.0, 0.0)  # added site's position in tcp_body [m]
    gripper: GripperMount | None = None  # separate gripper model, if the arm file has none
    base_dir: Path | None = field(default=None, compare=False)  # resolves relative paths


# (velocity [rad/s], acceleration [rad/s^2], jerk [rad/s^3]) of a card that states none:
# the smallest of the Panda's per-joint limits, so an unknown arm is not driven harder.
DEFAULT_MOTION_LIMITS = (2.175, 7.5, 3750.0)


def panda_card() -> RobotCard:
    """The built-in arm's card."""
    return RobotCard(
        name="panda",
        model="builtin:panda",
        arm_joints=tuple(f"joint{i}" for i in range(1, 8)),
        arm_actuators=tuple(f"actuator{i}" for i in range(1, 8)),
        tcp_site="tcp",
        finger_joints=(
            FingerJoint("finger_joint1", FINGER_TRAVEL, 0.0),
            FingerJoint("finger_joint2", FINGER_TRAVEL, 0.0),
        ),
        gripper_actuator="gripper",
        gripper_ctrl=(FINGER_TRAVEL, 0.0),
        home=HOME,
        controller=ControlLaw(
            mode="joint_position",
            kp=(4500.0, 4500.0, 3500.0, 3500.0, 2000.0, 2000.0, 2000.0),
            kd=(67.1, 67.1, 59.2, 59.2, 44.7, 44.7, 44.7),
        ),
        wrist_camera="wrist",
        # Franka's published joint limits.
        max_velocity=(2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61),
        max_acceleration=(15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0),
        max_jerk=(7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0),
    )


def load_card(path: str | Path) -> RobotCard:
    """A card from YAML; relative model paths resolve against the YAML's folder."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SimError(f"cannot read robot card {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise SimError(f"robot card {path} must be a mapping, got {type(raw).__name__}")
    fields = set(RobotCard.__dataclass_fields__) - {"base_dir"}
    required = {"name", "model", "arm_joints", "arm_actuators", "tcp_site", "finger_joints",
                "gripper_actuator", "gripper_ctrl", "home", "controller"}
    unknown, missing = sorted(set(raw) - fields), sorted(required - set(raw))
    if unknown or missing:
        raise SimError(
            f"robot card {path}: unknown keys {unknown}, missing keys {missing}; valid keys: {sorted(fields)}"
        )
    try:
        return RobotCard(
            name=str(raw["name"]),
            model=str(raw["model"]),
            arm_joints=tuple(raw["arm_joints"]),
            arm_actuators=tuple(raw["arm_actuators"]),
            tcp_site=str(raw["tcp_site"]),
            finger_joints=tuple(
                FingerJoint(str(f["name"]), float(f["open"]), float(f["closed"])) for f in raw["finger_joints"]
            ),
            gripper_actuator=str(raw["gripper_actuator"]),
            gripper_ctrl=tuple(float(x) for x in raw["gripper_ctrl"]),
            home=tuple(float(x) for x in raw["home"]),
            controller=ControlLaw.from_dict(raw["controller"], where=f"{path}: controller"),
            joint_limits=(
                tuple(tuple(float(x) for x in lim) for lim in raw["joint_limits"]) if raw.get("joint_limits") else None
            ),
            wrist_camera=raw.get("wrist_camera"),
            **{k: tuple(float(x) for x in raw[k]) for k in ("max_velocity", "max_acceleration", "max_jerk")
               if raw.get(k) is not None},
            tcp_body=raw.get("tcp_body"),
            tcp_pos=tuple(float(x) for x in raw.get("tcp_pos", (0.0, 0.0, 0.0))),
            gripper=GripperMount(**raw["gripper"]) if raw.get("gripper") else None,
            base_dir=path.parent,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SimError(f"robot card {path}: malformed field ({exc!r})") from exc

