"""The built-in arm: Franka Panda kinematics from primitives, with a coupled two-finger gripper.

No mesh assets, so it works offline. Body offsets, joint axes, limits and the home pose are
the Panda's published values (MuJoCo Menagerie's layout); link shapes are capsules from each
joint to the next, which is enough for contacts with props and for rendering.
"""

from __future__ import annotations

import mujoco
import numpy as np

# (body, pos [m], quat wxyz unnormalized, joint range [rad], link mass [kg], capsule radius [m])
_LINKS = (
    ("link1", (0, 0, 0.333), (1, 0, 0, 0), (-2.8973, 2.8973), 4.97, 0.060),
    ("link2", (0, 0, 0), (1, -1, 0, 0), (-1.7628, 1.7628), 0.65, 0.060),
    ("link3", (0, -0.316, 0), (1, 1, 0, 0), (-2.8973, 2.8973), 3.23, 0.055),
    ("link4", (0.0825, 0, 0), (1, 1, 0, 0), (-3.0718, -0.0698), 3.59, 0.055),
    ("link5", (-0.0825, 0.384, 0), (1, -1, 0, 0), (-2.8973, 2.8973), 1.23, 0.050),
    ("link6", (0, 0, 0), (1, 1, 0, 0), (-0.0175, 3.7525), 1.67, 0.045),
    ("link7", (0.088, 0, 0), (1, 1, 0, 0), (-2.8973, 2.8973), 0.74, 0.040),
)
# Menagerie's Panda position gains: strong shoulder/elbow, weaker wrist.
_KP = (4500.0, 4500.0, 3500.0, 3500.0, 2000.0, 2000.0, 2000.0)
_FORCE = (87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0)
# Home: the hand pointing down 0.25 m above the table, over the middle of the block start
# window (TCP 0.45 m in front of the base), so an episode's first approach is a short drop
# rather than a fold of the elbow and wrist from high above.
HOME = (0.0, -0.1847, 0.0, -2.4969, 0.0, 2.3122, -0.7853)
HAND_POS = (0.0, 0.0, 0.107)
FINGER_Z = 0.0584  # finger bodies on the hand's z axis [m]
FINGER_TRAVEL = 0.04  # each finger, fully open [m]
FINGER_LENGTH = 0.054  # [m]
TCP_Z = 0.1034  # between the fingertip pads, on the hand's z axis [m]
GRIP_KP = 300.0  # gripper tendon gain [N/m]; a 4 cm cube is squeezed with ~6 N
GRIP_FORCE = 70.0  # the Panda gripper's continuous force [N]


def _quat_z(angle: float) -> list[float]:
    return [float(np.cos(angle / 2)), 0.0, 0.0, float(np.sin(angle / 2))]


def build_panda_spec() -> mujoco.MjSpec:
    """The arm as an MjSpec: joints `joint1..7`, fingers `finger_joint1/2`, site `tcp`,
    camera `wrist`, actuators `actuator1..7` and `gripper`, keyframe `home`."""
    # One function: it builds one MjSpec top to bottom (base, links, hand, fingers, tendon, actuators,
    # home key) in the order an MJCF file would list them; each part is a few lines.
    spec = mujoco.MjSpec()
    spec.modelname = "panda_primitives"
    spec.compiler.autolimits = True
    spec.compiler.degree = False
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    # Arm geoms collide with the world (conaffinity of props/table) but not with each other:
    # the capsule skeleton overlaps at every elbow by construction.
    arm_contype, arm_conaffinity = 1, 0
    grey = [0.85, 0.85, 0.87, 1.0]
    dark = [0.2, 0.2, 0.22, 1.0]

    base = spec.worldbody.add_body(name="link0")
    base.add_geom(
        type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[0.07, 0.07, 0], pos=[0, 0, 0.07],
        rgba=dark, contype=arm_contype, conaffinity=arm_conaffinity, mass=0.63,
    )
    parent = base
    for i, (name, pos, quat, rng, mass, radius) in enumerate(_LINKS):
        body = parent.add_body(name=name, pos=list(pos), quat=list(quat), gravcomp=1.0)
        body.add_joint(
            name=f"joint{i + 1}", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 0, 1],
            range=list(rng), armature=0.1, damping=1.0,
        )
        # Capsule from this joint towards the next body's origin (a sphere where they coincide).
        nxt = np.array(_LINKS[i + 1][1] if i + 1 < len(_LINKS) else HAND_POS, dtype=float)
        if name == "link1":
            nxt = np.array([0.0, 0.0, -0.19])  # the shoulder column down to the base
        common = dict(rgba=grey, contype=arm_contype, conaffinity=arm_conaffinity, mass=mass)
        if np.linalg.norm(nxt) < 1e-6:
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[radius, 0, 0], **common)
        else:
            body.add_geom(
                type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[radius, 0, 0],
                fromto=[0, 0, 0, *nxt.tolist()], **common,
            )
        parent = body

    hand = parent.add_body(name="hand", pos=list(HAND_POS), quat=_quat_z(-np.pi / 4), gravcomp=1.0)
    hand.add_geom(
        type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.025, 0.095, 0.02], pos=[0, 0, 0.035],
        rgba=grey, contype=arm_contype, conaffinity=arm_conaffinity, mass=0.73,
    )
    hand.add_site(name="tcp", pos=[0, 0, TCP_Z], size=[0.005, 0, 0], rgba=[1, 0, 0, 0.5], group=4)
    # Looks along the hand's +z (towards the fingers) from behind the palm.
    hand.add_camera(name="wrist", pos=[0.07, 0, 0.02], quat=[0, 1, 0, 0], fovy=70.0)
    for side, quat in (("1", [1, 0, 0, 0]), ("2", [0, 0, 0, 1])):
        finger = hand.add_body(name=f"finger{side}", pos=[0, 0, FINGER_Z], quat=quat, gravcomp=1.0)
        finger.add_joint(
            name=f"finger_joint{side}", type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[0, 1, 0],
            range=[0.0, FINGER_TRAVEL], armature=0.01, damping=0.5,
        )
        # Pad inner face sits at y = q, so the fingers touch at q = 0 and open 2 x travel.
        finger.add_geom(
            name=f"pad{side}", type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[0.011, 0.006, FINGER_LENGTH / 2], pos=[0, 0.006, FINGER_LENGTH / 2],
            rgba=dark, contype=arm_contype, conaffinity=arm_conaffinity, mass=0.015,
            friction=[1.0, 0.01, 0.0001], condim=4, priority=1,
            # Stiff, hard pads (priority 1: their parameters win in every pad contact); with
            # dmax 0.99 a held 4 cm cube creeps ~0.02 mm/s instead of ~0.1 mm/s with solimp defaults.
            solref=[0.004, 1.0], solimp=[0.95, 0.99, 0.001, 0.5, 2.0],
        )
    # Coupled fingers: a tendon averages them (the actuator drives it) and an equality keeps
    # them equal, so the tendon length is the opening of either finger.
    split = spec.add_tendon(name="split")
    split.wrap_joint("finger_joint1", 0.5)
    split.wrap_joint("finger_joint2", 0.5)
    spec.add_equality(
        name="finger_coupling", type=mujoco.mjtEq.mjEQ_JOINT,
        name1="finger_joint1", name2="finger_joint2", data=[0, 1, 0, 0, 0] + [0.0] * 7,
        solref=[0.005, 1.0], solimp=[0.95, 0.99, 0.001, 0.5, 2.0],
    )
    for i, (kp, frc) in enumerate(zip(_KP, _FORCE, strict=True)):
        _add_position(spec, f"actuator{i + 1}", f"joint{i + 1}", mujoco.mjtTrn.mjTRN_JOINT,
                      kp, 2 * np.sqrt(kp) * 0.5, _LINKS[i][3], frc)
    _add_position(spec, "gripper", "split", mujoco.mjtTrn.mjTRN_TENDON, GRIP_KP, 30.0,
                  (0.0, FINGER_TRAVEL), GRIP_FORCE)

    key = spec.add_key(name="home")
    key.qpos = [*HOME, FINGER_TRAVEL, FINGER_TRAVEL]
    key.ctrl = [*HOME, FINGER_TRAVEL]
    return spec


def _add_position(spec, name, target, trntype, kp, kv, ctrlrange, force) -> None:
    act = spec.add_actuator(name=name, target=target, trntype=trntype)
    act.set_to_position(kp=kp, kv=kv)
    act.ctrlrange = list(ctrlrange)
    act.ctrllimited = True
    act.forcerange = [-force, force]
    act.forcelimited = True
