"""A robot from a URDF file: MuJoCo's own URDF import, plus what URDF cannot say.

URDF describes links, joints, limits and meshes, but no actuators, sites or cameras, and its
mesh paths are often `package://` URIs that only a ROS workspace resolves. The card supplies the
rest: `mesh_root` (the folder `package://` paths resolve against), the position servos of the arm
(gains from its controller, force limits from the URDF efforts) and of the gripper
(`gripper_gains`), the TCP site (`tcp_body`, `tcp_pos`) and a wrist camera (`wrist_camera_mount`),
the last two added by `robot_model.robot_spec` for any model.
"""

from __future__ import annotations

from pathlib import Path

import mujoco

from demoforge.errors import SimError
from demoforge.sim.robot import RobotCard

GRIPPER_KP = 100.0  # servo gain of a URDF gripper whose card states no gripper_gains [N/m or N m/rad]
_MOVABLE = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)


def is_urdf(path: Path) -> bool:
    """Whether `path` names a URDF file (by its suffix, as MuJoCo's loader decides)."""
    return path.suffix.lower() == ".urdf"


def mesh_path(file: str, urdf: Path, root: Path) -> list[Path]:
    """Where a URDF mesh reference may lie, in the order tried: `package://rest` under `root`
    (a ROS package URI names its package first, so `root` may hold the package folder or be it),
    a relative path under the URDF's folder, an absolute path as is."""
    if file.startswith("package://"):
        rest = Path(file[len("package://"):])
        tries = [root / rest]
        if len(rest.parts) > 1:
            tries.append(root / Path(*rest.parts[1:]))
        return tries
    if file.startswith("file://"):
        file = file[len("file://"):]
    return [Path(file) if Path(file).is_absolute() else urdf.parent / file]


def load_urdf(path: Path, *, mesh_root: Path | None = None) -> mujoco.MjSpec:
    """The URDF at `path` as MuJoCo reads it, its mesh paths resolved (`package://` against
    `mesh_root`, the URDF's folder when None) and its links kept as bodies."""
    spec, problems = _read(path, mesh_root)
    if problems:
        raise SimError(f"URDF {path}:\n  " + "\n  ".join(problems))
    return spec


def urdf_spec(path: Path, card: RobotCard, *, mesh_root: Path | None) -> mujoco.MjSpec:
    """The URDF at `path` as an MjSpec for `card`: meshes resolved, links kept as bodies (so the
    card can name them), the card's servos added. Every problem of the card against the URDF
    is reported at once."""
    try:
        spec, problems = _read(path, mesh_root)
    except SimError as exc:
        raise SimError(f"model {card.model!r}: {exc}; fix the URDF or the card's model path") from None
    problems += _joint_problems(spec, card)
    if problems:
        raise SimError(f"URDF {path} does not fit robot card {card.name!r}:\n  " + "\n  ".join(problems))
    _add_servos(spec, card)
    _add_home_key(spec, card)
    # Neighbouring links' collision meshes overlap at every joint: the robot's geoms touch the
    # scene but not each other, as the built-in arm's (contacts need contype & conaffinity).
    for geom in spec.geoms:
        geom.conaffinity = 0
    return spec


def _read(path: Path, mesh_root: Path | None) -> tuple[mujoco.MjSpec, list[str]]:
    try:
        spec = mujoco.MjSpec.from_file(str(path))
    except ValueError as exc:
        raise SimError(f"MuJoCo cannot read the URDF {path}: {exc}") from None
    # MuJoCo merges links without joints into their parent; kept, a card can name any link
    # (tcp_body: panda_hand) and the base stays a robot body rather than part of the world.
    spec.compiler.fusestatic = False
    root = path.parent if mesh_root is None else mesh_root
    problems = []
    for mesh in spec.meshes:
        tries = mesh_path(mesh.file, path, root)
        found = next((p for p in tries if p.is_file()), None)
        if found is None:
            problems.append(f"mesh {mesh.file!r}: no file at {' or '.join(str(p) for p in tries)}; set mesh_root "
                            "to the folder package:// paths resolve against (the URDF's folder when unset)")
        else:
            mesh.file = str(found.resolve())
    return spec, problems


def _joint_problems(spec: mujoco.MjSpec, card: RobotCard) -> list[str]:
    joints = {j.name: j for j in spec.joints if j.type in _MOVABLE}
    arm = [n for n in card.arm_joints if n not in joints]
    problems = [f"arm_joints {arm} not in the URDF; its movable joints: {sorted(joints)}; name the URDF's joints, "
                "base to wrist"] if arm else []
    if card.gripper is not None:
        return problems  # the mounted gripper model holds the fingers
    fingers = [f.name for f in card.finger_joints if f.name not in joints]
    spare = sorted(set(joints) - set(card.arm_joints))
    if fingers and not spare:
        problems.append(f"finger_joints {fingers}: the URDF has no gripper joints (every movable joint is an arm "
                        "joint); use a URDF that includes its gripper, or mount a gripper model with `gripper:`")
    elif fingers:
        problems.append(f"finger_joints {fingers} not in the URDF; joints beside the arm's: {spare}; name the "
                        "gripper's joints")
    return problems


def _add_servos(spec: mujoco.MjSpec, card: RobotCard) -> None:
    """Position servos: the arm's from the card's controller, the gripper's on its first finger
    joint (URDF <mimic> fingers become MuJoCo joint equalities, so one servo drives them all)."""
    joints = {j.name: j for j in spec.joints}
    # Lengths that disagree are bind_robot's and law_problems' to report, every one at once.
    servos = list(zip(card.arm_actuators, card.arm_joints, card.controller.kp, card.controller.kd))
    if card.gripper is None and card.finger_joints:
        kp, kd = card.gripper_gains if card.gripper_gains is not None else (GRIPPER_KP, 2 * GRIPPER_KP**0.5)
        servos.append((card.gripper_actuator, card.finger_joints[0].name, kp, kd))
    for name, joint, kp, kd in servos:
        act = spec.add_actuator(name=name, target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=kp, kv=kd)
        if joints[joint].range[1] > joints[joint].range[0]:  # a continuous joint has no range to hold to
            act.ctrlrange = list(joints[joint].range)
            act.ctrllimited = True
        if joints[joint].actfrcrange[1] > joints[joint].actfrcrange[0]:
            act.forcerange = list(joints[joint].actfrcrange)
            act.forcelimited = True


def _add_home_key(spec: mujoco.MjSpec, card: RobotCard) -> None:
    """Keyframe `home` (arm at the card's home, fingers open), as the built-in arm and Menagerie's
    models carry: tools that start from keyframe 0 (the contact linter) find one."""
    if card.gripper is not None or len(card.home) != len(card.arm_joints):
        return  # the gripper's joints join later; a length mismatch is bind_robot's to report
    try:
        model = spec.copy().compile()  # the qpos layout is the compiler's (tree order)
    except ValueError:
        return  # the scene's own compile reports it, with its message
    qpos = model.qpos0.copy()
    for name, q in [*zip(card.arm_joints, card.home), *((f.name, f.open) for f in card.finger_joints)]:
        qpos[model.jnt_qposadr[model.joint(name).id]] = q
    key = spec.add_key(name="home")
    key.qpos = qpos.tolist()
    key.ctrl = [*card.home, card.gripper_ctrl[0]][:model.nu]
