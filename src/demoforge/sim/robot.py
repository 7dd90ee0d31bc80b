"""Robot cards: the few facts demoforge needs about an arm beyond its model file.

A card names the model (the built-in arm, an MJCF/URDF path, or `package://pkg/path` for
files shipped inside an installed Python package), the arm joints and their actuators, the TCP
site, each finger joint with its open and closed positions, the gripper actuator, the home pose
and controller defaults. `bind_robot` checks every name against the compiled model at once: an
unknown finger joint is an error, because a guessed travel corrupts every gripper label.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
import yaml

from demoforge.errors import SimError
from demoforge.sim.arm import FINGER_TRAVEL, HOME, build_panda_spec
from demoforge.sim.controllers import ControlLaw, law_problems

BUILDERS: dict[str, Callable[[], mujoco.MjSpec]] = {"builtin:panda": build_panda_spec}
GRIPPER_KP = 100.0  # servo gain for a URDF gripper's first finger joint [N/m or N m/rad]


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
    wrist_camera: str | None = None  # camera in the robot model used as "wrist"
    tcp_body: str | None = None  # add `tcp_site` to this body (for models without the site, e.g. URDF)
    tcp_pos: tuple[float, float, float] = (0.0, 0.0, 0.0)  # added site's position in tcp_body [m]
    gripper: GripperMount | None = None  # separate gripper model, if the arm file has none
    base_dir: Path | None = field(default=None, compare=False)  # resolves relative paths


@dataclass(frozen=True)
class RobotIndex:
    """A card resolved against one compiled model: ids and addresses for the hot path."""

    card: RobotCard
    prefix: str  # name prefix of the robot in the scene
    arm_qpos: np.ndarray  # qpos addresses of the arm joints (int)
    arm_dofs: np.ndarray  # dof addresses of the arm joints (int)
    arm_actuators: np.ndarray  # actuator ids, same order (int)
    limits: np.ndarray  # (n_arm, 2) joint limits [rad]
    tcp_site: int  # site id
    finger_qpos: np.ndarray  # qpos addresses of the finger joints (int)
    finger_open: np.ndarray  # open positions per finger
    finger_closed: np.ndarray  # closed positions per finger
    gripper_actuator: int  # actuator id
    gripper_ctrl: tuple[float, float]  # (open, closed) control
    body_ids: np.ndarray  # every body of the robot (int), for collision exclusions
    wrist_camera: int | None  # camera id


def panda_card() -> RobotCard:
    """The built-in arm's card."""
    return RobotCard(
        name="panda",
        model="builtin:panda",
        arm_joints=tuple(f"joint{i}" for i in range(1, 8)),
        arm_actuators=tuple(f"actuator{i}" for i in range(1, 8)),
        tcp_site="tcp",
        finger_joints=(FingerJoint("finger_joint1", FINGER_TRAVEL, 0.0), FingerJoint("finger_joint2", FINGER_TRAVEL, 0.0)),
        gripper_actuator="gripper",
        gripper_ctrl=(FINGER_TRAVEL, 0.0),
        home=HOME,
        controller=ControlLaw(
            mode="joint_position",
            kp=(4500.0, 4500.0, 3500.0, 3500.0, 2000.0, 2000.0, 2000.0),
            kd=(67.1, 67.1, 59.2, 59.2, 44.7, 44.7, 44.7),
        ),
        wrist_camera="wrist",
    )


def load_card(path: str | Path) -> RobotCard:
    """A card from YAML; relative model paths resolve against the YAML's folder."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SimError(f"cannot read robot card {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise SimError(f"robot card {path} must be a mapping, got {type(raw).__name__}")
    fields = set(RobotCard.__dataclass_fields__) - {"base_dir"}
    required = {"name", "model", "arm_joints", "arm_actuators", "tcp_site", "finger_joints",
                "gripper_actuator", "gripper_ctrl", "home", "controller"}
    unknown, missing = sorted(set(raw) - fields), sorted(required - set(raw))
    if unknown or missing:
        raise SimError(f"robot card {path}: unknown keys {unknown}, missing keys {missing}; valid keys: {sorted(fields)}")
    try:
        return RobotCard(
            name=str(raw["name"]),
            model=str(raw["model"]),
            arm_joints=tuple(raw["arm_joints"]),
            arm_actuators=tuple(raw["arm_actuators"]),
            tcp_site=str(raw["tcp_site"]),
            finger_joints=tuple(FingerJoint(str(f["name"]), float(f["open"]), float(f["closed"])) for f in raw["finger_joints"]),
            gripper_actuator=str(raw["gripper_actuator"]),
            gripper_ctrl=tuple(float(x) for x in raw["gripper_ctrl"]),
            home=tuple(float(x) for x in raw["home"]),
            controller=ControlLaw.from_dict(raw["controller"], where=f"{path}: controller"),
            joint_limits=tuple(tuple(float(x) for x in lim) for lim in raw["joint_limits"]) if raw.get("joint_limits") else None,
            wrist_camera=raw.get("wrist_camera"),
            tcp_body=raw.get("tcp_body"),
            tcp_pos=tuple(float(x) for x in raw.get("tcp_pos", (0.0, 0.0, 0.0))),
            gripper=GripperMount(**raw["gripper"]) if raw.get("gripper") else None,
            base_dir=path.parent,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SimError(f"robot card {path}: malformed field ({exc!r})") from exc


def resolve_model_path(uri: str, base_dir: Path | None) -> Path:
    """A filesystem path for a card's model reference."""
    if uri.startswith("package://"):
        package, _, rel = uri[len("package://"):].partition("/")
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise SimError(f"model {uri!r}: Python package {package!r} is not installed (pip install it)")
        path = Path(next(iter(spec.submodule_search_locations))) / rel
    else:
        path = Path(uri)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
    if not path.is_file():
        raise SimError(f"model file {path} (from {uri!r}) does not exist")
    return path


def _copy_options(src: mujoco.MjSpec, dst: mujoco.MjSpec) -> None:
    # MjSpec.attach keeps the parent's options and warns on each difference; the parent's
    # options are the ones we want, so make the child agree before attaching.
    for name in ("timestep", "cone", "impratio", "integrator", "solver", "iterations",
                 "ls_iterations", "noslip_iterations", "jacobian"):
        setattr(dst.option, name, getattr(src.option, name))


def robot_spec(card: RobotCard) -> mujoco.MjSpec:
    """The robot's MjSpec (arm plus mounted gripper), fresh on each call."""
    if card.model.startswith("builtin:"):
        if card.model not in BUILDERS:
            raise SimError(f"unknown built-in robot {card.model!r}; built-ins: {sorted(BUILDERS)}")
        return BUILDERS[card.model]()
    path = resolve_model_path(card.model, card.base_dir)
    spec = mujoco.MjSpec.from_file(str(path))
    if path.suffix.lower() == ".urdf":
        _add_urdf_actuators(spec, card)
    if card.tcp_body is not None:
        body = spec.body(card.tcp_body)
        if body is None:
            raise SimError(f"robot card {card.name!r}: tcp_body {card.tcp_body!r} not in the model; "
                           f"bodies: {sorted(b.name for b in spec.bodies if b.name)}")
        body.add_site(name=card.tcp_site, pos=list(card.tcp_pos), size=[0.005, 0, 0], group=4)
    if card.gripper is not None:
        gripper = mujoco.MjSpec.from_file(str(resolve_model_path(card.gripper.model, card.base_dir)))
        site = spec.site(card.gripper.site)
        if site is None:
            sites = sorted(s.name for s in spec.sites)
            raise SimError(f"robot card {card.name!r}: gripper.site {card.gripper.site!r} not in the arm model; sites: {sites}")
        _copy_options(spec, gripper)
        spec.attach(gripper, site=site, prefix=card.gripper.prefix)
    return spec


def _add_urdf_actuators(spec: mujoco.MjSpec, card: RobotCard) -> None:
    """URDF carries no actuators: add the card's position servos (gains from its controller,
    force limits from the URDF efforts). Finger joints tied by <mimic> become MuJoCo joint
    equalities in the URDF import, so one servo on the first finger drives the gripper."""
    joints = {j.name: j for j in spec.joints}
    missing = [n for n in (*card.arm_joints, card.finger_joints[0].name if card.finger_joints else "")
               if n not in joints]
    if missing:
        raise SimError(f"robot card {card.name!r}: joints {missing} not in the URDF; joints: {sorted(joints)}")
    servos = [(a, j, kp, kd) for a, j, kp, kd in zip(card.arm_actuators, card.arm_joints, card.controller.kp,
                                                         card.controller.kd, strict=True)]
    finger = card.finger_joints[0]
    servos.append((card.gripper_actuator, finger.name, GRIPPER_KP, 2 * GRIPPER_KP**0.5))
    for name, joint, kp, kd in servos:
        act = spec.add_actuator(name=name, target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=kp, kv=kd)
        act.ctrlrange = list(joints[joint].range)
        act.ctrllimited = True
        if joints[joint].actfrcrange[1] > joints[joint].actfrcrange[0]:
            act.forcerange = list(joints[joint].actfrcrange)
            act.forcelimited = True


def _ids(model, obj: mujoco.mjtObj, names, prefix, label, problems) -> list[int]:
    ids = []
    for name in names:
        i = mujoco.mj_name2id(model, obj, prefix + name)
        if i < 0:
            ids.append(-1)
            count = {mujoco.mjtObj.mjOBJ_JOINT: model.njnt, mujoco.mjtObj.mjOBJ_SITE: model.nsite,
                     mujoco.mjtObj.mjOBJ_ACTUATOR: model.nu, mujoco.mjtObj.mjOBJ_CAMERA: model.ncam}[obj]
            exist = sorted(n for n in (mujoco.mj_id2name(model, obj, k) for k in range(count)) if n and n.startswith(prefix))
            problems.append(f"{label} {name!r} not in the model; available: {[e[len(prefix):] for e in exist]}")
        else:
            ids.append(i)
    return ids


def bind_robot(model: mujoco.MjModel, card: RobotCard, prefix: str = "") -> RobotIndex:
    """Resolve every name in `card` against `model`; all problems reported at once."""
    problems: list[str] = []
    J, S, A, C = (mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_SITE, mujoco.mjtObj.mjOBJ_ACTUATOR, mujoco.mjtObj.mjOBJ_CAMERA)
    n = len(card.arm_joints)
    joints = _ids(model, J, card.arm_joints, prefix, "arm joint", problems)
    acts = _ids(model, A, card.arm_actuators, prefix, "arm actuator", problems)
    (tcp,) = _ids(model, S, [card.tcp_site], prefix, "tcp_site", problems)
    fingers = _ids(model, J, [f.name for f in card.finger_joints], prefix, "finger joint", problems)
    (grip,) = _ids(model, A, [card.gripper_actuator], prefix, "gripper_actuator", problems)
    cams = _ids(model, C, [card.wrist_camera], prefix, "wrist_camera", problems) if card.wrist_camera else [None]
    if len(acts) != n:
        problems.append(f"arm_actuators has {len(acts)} names for {n} arm joints")
    if len(card.home) != n:
        problems.append(f"home has {len(card.home)} values for {n} arm joints")
    if not card.finger_joints:
        problems.append("finger_joints is empty: gripper closedness needs at least one finger joint")
    if len(card.gripper_ctrl) != 2:
        problems.append(f"gripper_ctrl must be (open, closed), got {card.gripper_ctrl}")
    for j in [*joints, *fingers]:
        if j >= 0 and int(model.jnt_type[j]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            problems.append(f"joint {model.joint(j).name!r} is not a hinge or slide joint")
    for f, j in zip(card.finger_joints, fingers, strict=True):
        if f.travel <= 0:
            problems.append(f"finger joint {f.name!r}: open ({f.open}) and closed ({f.closed}) must differ")
        if j >= 0 and model.jnt_limited[j]:
            lo, hi = model.jnt_range[j]
            for label, q in (("open", f.open), ("closed", f.closed)):
                if not lo - 1e-9 <= q <= hi + 1e-9:
                    problems.append(f"finger joint {f.name!r}: {label} {q} outside the joint range [{lo}, {hi}]")
    limits = np.zeros((n, 2))
    for k, j in enumerate(joints):
        if j < 0:
            continue
        model_range = model.jnt_range[j] if model.jnt_limited[j] else np.array([-np.pi, np.pi]) * 2
        limits[k] = model_range
        if card.joint_limits is not None:
            if len(card.joint_limits) != n:
                problems.append(f"joint_limits has {len(card.joint_limits)} pairs for {n} arm joints")
                break
            lo, hi = card.joint_limits[k]
            if not (model_range[0] - 1e-9 <= lo < hi <= model_range[1] + 1e-9):
                problems.append(f"joint_limits[{k}] {card.joint_limits[k]} not inside the model range {tuple(model_range)} of {card.arm_joints[k]!r}")
            limits[k] = (lo, hi)
        if k < len(card.home) and not limits[k, 0] - 1e-9 <= card.home[k] <= limits[k, 1] + 1e-9:
            problems.append(f"home[{k}] = {card.home[k]} outside the limits {tuple(limits[k])} of {card.arm_joints[k]!r}")
    problems += law_problems(card.controller, n)
    if problems:
        raise SimError(f"robot card {card.name!r} does not match its model:\n  " + "\n  ".join(problems))
    base = model.body(model.jnt_bodyid[joints[0]]).id
    root = model.body_rootid[base]
    bodies = np.flatnonzero(model.body_rootid == root)
    return RobotIndex(
        card=card, prefix=prefix,
        arm_qpos=model.jnt_qposadr[joints].astype(int), arm_dofs=model.jnt_dofadr[joints].astype(int),
        arm_actuators=np.array(acts, dtype=int), limits=limits, tcp_site=tcp,
        finger_qpos=model.jnt_qposadr[fingers].astype(int),
        finger_open=np.array([f.open for f in card.finger_joints]),
        finger_closed=np.array([f.closed for f in card.finger_joints]),
        gripper_actuator=grip, gripper_ctrl=tuple(card.gripper_ctrl), body_ids=bodies,
        wrist_camera=cams[0],
    )


def gripper_closedness(robot: RobotIndex, qpos: np.ndarray) -> float:
    """Mean finger closedness, 0 open and 1 closed, from joint positions; contact slack can
    put it a hair outside [0, 1], and it is reported as is."""
    q = np.asarray(qpos)[robot.finger_qpos]
    return float(np.mean((q - robot.finger_open) / (robot.finger_closed - robot.finger_open)))
