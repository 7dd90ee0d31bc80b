"""Robot cards: the few facts demoforge needs about an arm beyond its model file.

A card names the model (the built-in arm, an MJCF/URDF path, or `package://pkg/path` for
files shipped inside an installed Python package), the arm joints and their actuators, the TCP
site, each finger joint with its open and closed positions, the gripper actuator, the home pose
and controller defaults. `robot_model.bind_robot` checks every name against the compiled model at once: an
unknown finger joint is an error, because a guessed travel corrupts every gripper label. A URDF model
has no actuators, sites or cameras: the card supplies them (`sim.urdf`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
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
    # Body whose subtree is the finger's grasping surface (before the scene prefix); None = the
    # joint's own body. A linkage gripper's pads hang below another joint than the driven one.
    body: str | None = None

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
class CameraMount:
    """A camera the card adds to a robot body (for models without one, e.g. URDF)."""

    body: str  # body of the robot model the camera rides on
    pos: tuple[float, float, float]  # camera position in that body [m]
    quat: tuple[float, float, float, float]  # camera orientation in that body (wxyz); it looks along its -z
    fovy: float = 70.0  # vertical field of view [deg]


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
    controller: ControlLaw  # default control law; its gains replace a model file's own arm servo gains
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
    # Fingertip opening from fully closed to fully open [m] (a grasp opens the fingers only as
    # wide as the block needs, taken as linear in closedness); None = the finger joints' travel
    # summed, which is the opening only for slide fingers: hinge fingers must state it.
    finger_stroke_m: float | None = None
    # Cancel the robot's own weight (MuJoCo body gravcomp), as an arm's controller does; False =
    # the model's own setting. Without it a position servo sags under the arm's weight (the
    # UR5e under Menagerie's gains: about 1 cm at the TCP).
    gravity_compensation: bool = False
    # What a URDF model cannot say. Keys left at None are left out of `card_to_dict`, so a card
    # that does not use them records as it did before they existed.
    # Added site's orientation in tcp_body (wxyz), for a body whose frame is not the TCP's (+z the
    # approach out of the palm, +y the pinch axis); None = the body's own.
    tcp_quat: tuple[float, float, float, float] | None = None
    mesh_root: str | None = None  # folder URDF package:// mesh paths resolve against; None = the URDF's folder
    gripper_gains: tuple[float, float] | None = None  # URDF gripper servo (kp, kd); None = robot_model's default
    wrist_camera_mount: CameraMount | None = None  # add `wrist_camera` to a body (URDF has no cameras)
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


REQUIRED_KEYS = ("name", "model", "arm_joints", "arm_actuators", "tcp_site", "finger_joints", "gripper_actuator",
                 "gripper_ctrl", "home", "controller")


def _names(v) -> tuple[str, ...]:
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise TypeError
    return tuple(v)


def _numbers(v) -> tuple[float, ...]:
    if not isinstance(v, (list, tuple)) or isinstance(v, str):
        raise TypeError
    return tuple(float(x) for x in v)


def _text(v) -> str:
    if not isinstance(v, str) or not v:
        raise TypeError
    return v


def _fingers(v) -> tuple[FingerJoint, ...]:
    if not isinstance(v, (list, tuple)):
        raise TypeError
    if any(not isinstance(f, dict) or set(f) - {"name", "open", "closed", "body"} for f in v):
        raise TypeError
    return tuple(FingerJoint(_text(f["name"]), float(f["open"]), float(f["closed"]),
                             None if f.get("body") is None else _text(f["body"])) for f in v)


def _gripper(v) -> GripperMount | None:
    if v is None:
        return None
    if not isinstance(v, dict) or set(v) - {"model", "site", "prefix"} or not {"model", "site"} <= set(v):
        raise TypeError
    return GripperMount(**{k: _text(x) for k, x in v.items()})


def _camera(v) -> CameraMount | None:
    if v is None:
        return None
    if not isinstance(v, dict) or set(v) - {"body", "pos", "quat", "fovy"} or not {"body", "pos", "quat"} <= set(v):
        raise TypeError
    pos, quat = _numbers(v["pos"]), _numbers(v["quat"])
    if len(pos) != 3 or len(quat) != 4:
        raise ValueError
    return CameraMount(_text(v["body"]), pos, quat, float(v.get("fovy", 70.0)))


def _pair(v) -> tuple[float, float] | None:
    if v is None:
        return None
    pair = _numbers(v)
    if len(pair) != 2 or not all(x >= 0 for x in pair):
        raise ValueError
    return pair


# card key -> (parser, what a valid value is); `controller` is parsed by ControlLaw.from_dict
_PARSERS = {
    "name": (_text, "a non-empty string"),
    "model": (_text, "builtin:<name>, an MJCF/URDF path or package://pkg/path"),
    "arm_joints": (_names, "a list of joint names"),
    "arm_actuators": (_names, "a list of actuator names"),
    "tcp_site": (_text, "a site name"),
    "finger_joints": (_fingers, "a list of {name, open, closed[, body]}"),
    "gripper_actuator": (_text, "an actuator name"),
    "gripper_ctrl": (_numbers, "[open, closed] actuator controls"),
    "home": (_numbers, "a list of joint positions [rad]"),
    "joint_limits": (lambda v: None if not v else tuple(_numbers(x) for x in v), "a list of [low, high] [rad]"),
    "max_velocity": (lambda v: None if v is None else _numbers(v), "a list of joint speeds [rad/s]"),
    "max_acceleration": (lambda v: None if v is None else _numbers(v), "a list of accelerations [rad/s^2]"),
    "max_jerk": (lambda v: None if v is None else _numbers(v), "a list of jerks [rad/s^3]"),
    "wrist_camera": (lambda v: None if v is None else _text(v), "a camera name"),
    "tcp_body": (lambda v: None if v is None else _text(v), "a body name"),
    "tcp_pos": (lambda v: _numbers(v) if len(v) == 3 else _numbers(None), "[x, y, z] [m]"),
    "gripper": (_gripper, "{model, site[, prefix]}"),
    "finger_stroke_m": (lambda v: None if v is None else float(v), "a fingertip opening [m]"),
    "gravity_compensation": (lambda v: v if isinstance(v, bool) else _numbers(None), "true or false"),
    "tcp_quat": (lambda v: None if v is None else (_numbers(v) if len(v) == 4 else _numbers(None)), "[w, x, y, z]"),
    "mesh_root": (lambda v: None if v is None else _text(v), "a folder path or package://pkg/path"),
    "gripper_gains": (_pair, "[kp, kd] of the gripper servo, both >= 0"),
    "wrist_camera_mount": (_camera, "{body, pos: [x, y, z], quat: [w, x, y, z][, fovy]}"),
}
# Keys `card_to_dict` writes only when set (see RobotCard).
_OPTIONAL = ("tcp_quat", "mesh_root", "gripper_gains", "wrist_camera_mount")


def card_from_dict(raw, *, where: str, base_dir: Path | None = None) -> RobotCard:
    """A card from its YAML/JSON mapping; every bad key and value reported at once, each named
    with `where` (the card file)."""
    if not isinstance(raw, dict):
        raise SimError(f"{where} must be a mapping of card keys, got {type(raw).__name__}; "
                       "see examples/robots/panda.yaml")
    fields = set(RobotCard.__dataclass_fields__) - {"base_dir"}
    unknown, missing = sorted(set(raw) - fields), sorted(set(REQUIRED_KEYS) - set(raw))
    problems = [f"unknown keys {unknown}; valid keys: {sorted(fields)}"] if unknown else []
    problems += [f"missing keys {missing}"] if missing else []
    values = {}
    for key, (parse, what) in _PARSERS.items():
        if key in raw:
            try:
                values[key] = parse(raw[key])
            except (KeyError, TypeError, ValueError, AttributeError):
                problems.append(f"{key}: {raw[key]!r} is not {what}")
    if "controller" in raw:
        try:
            if not isinstance(raw["controller"], dict):
                raise SimError(f"controller: {raw['controller']!r} is not a mapping with mode, kp, kd")
            values["controller"] = ControlLaw.from_dict(raw["controller"], where="controller")
        except (SimError, TypeError, ValueError) as exc:
            problems.append(str(exc))
    if len(values.get("gripper_ctrl", (0, 0))) != 2:
        problems.append(f"gripper_ctrl: {raw['gripper_ctrl']!r} must be [open, closed]")
    if values.get("finger_stroke_m") is not None and not values["finger_stroke_m"] > 0:
        problems.append(f"finger_stroke_m: {raw['finger_stroke_m']!r} must be > 0 [m]")
    if problems:
        raise SimError(f"{where}:\n  " + "\n  ".join(problems))
    return RobotCard(**values, base_dir=base_dir)


def load_card(path: str | Path) -> RobotCard:
    """A card from YAML; relative model paths resolve against the YAML's folder."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SimError(f"cannot read robot card {path}: {exc}") from exc
    return card_from_dict(raw, where=f"robot card {path}", base_dir=path.parent)


def _absolute(uri: str, base_dir: Path | None) -> str:
    if uri.startswith(("builtin:", "package://")) or base_dir is None or Path(uri).is_absolute():
        return uri
    return str((base_dir / uri).resolve())


def card_to_dict(card: RobotCard) -> dict:
    """The card as plain JSON (what `card_from_dict` reads back), relative model paths made
    absolute so the record does not depend on the folder it is read from."""
    out = {}
    for f in fields(RobotCard):
        if f.name == "base_dir":
            continue
        value = getattr(card, f.name)
        if f.name in _OPTIONAL and value is None:
            continue
        if f.name == "finger_joints":
            value = [{"name": j.name, "open": j.open, "closed": j.closed, "body": j.body} for j in value]
        elif f.name == "controller":
            value = json.loads(value.to_json())
        elif f.name == "gripper" and value is not None:
            value = {"model": _absolute(value.model, card.base_dir), "site": value.site, "prefix": value.prefix}
        elif f.name in ("model", "mesh_root"):
            value = _absolute(value, card.base_dir)
        elif f.name == "wrist_camera_mount":
            value = {"body": value.body, "pos": list(value.pos), "quat": list(value.quat), "fovy": value.fovy}
        elif f.name == "joint_limits" and value is not None:
            value = [list(lim) for lim in value]
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out
