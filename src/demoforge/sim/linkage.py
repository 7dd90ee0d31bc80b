"""A linkage gripper's passive joints as a function of its closedness.

A card names the joints a gripper is driven by (the 2F-85's two driver joints). A linkage
gripper has more (couplers, spring links, followers) that its equality constraints move
along, and its pads hang below those: setting the driven joints alone leaves the pads where
they were. So a kinematic stand-in for the gripper at some closedness (a planned path's
collision check, a reset state that starts closed) also sets the passive joints, from a
table of each one's position against the measured closedness: the gripper settled at 11
commanded closednesses in the robot-only model, the arm held at home, nothing in its way.
The table is a pure function of the card (cached). Slide fingers (the built-in Panda's)
leave no passive joint, and no table is made.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.sim.robot import RobotCard

SETTLE_S = 1.5  # simulated time the gripper gets to settle at each commanded closedness [s]
STEPS = 11  # commanded closednesses, 0 to 1


@dataclass(frozen=True, eq=False)
class Linkage:
    """Passive gripper joints against closedness."""

    names: tuple[str, ...]  # passive joints (before the scene prefix), in model order
    closedness: np.ndarray  # (K,) measured closedness, increasing
    positions: np.ndarray  # (K, len(names)) joint positions there [rad] or [m]


def passive_joints(model: mujoco.MjModel, card: RobotCard, prefix: str, root_body: int) -> list[int]:
    """Hinge and slide joints of the robot under `root_body` that are neither arm nor finger joints."""
    named = {prefix + n for n in (*card.arm_joints, *(f.name for f in card.finger_joints))}
    kinds = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    return [j for j in range(model.njnt)
            if model.body_rootid[model.jnt_bodyid[j]] == root_body and int(model.jnt_type[j]) in kinds
            and model.joint(j).name not in named]


@functools.lru_cache(maxsize=8)
def card_linkage(card: RobotCard) -> Linkage:
    """The passive joints of `card`'s gripper and their table (empty for slide fingers)."""
    from demoforge.sim.robot_model import robot_spec  # robot_model binds a card with this module

    model = robot_spec(card).compile()
    arm = np.array([model.joint(n).id for n in card.arm_joints])
    passive = passive_joints(model, card, "", int(model.body_rootid[model.jnt_bodyid[arm[0]]]))
    if not passive:
        return Linkage((), np.zeros(0), np.zeros((0, 0)))
    data = mujoco.MjData(model)
    arm_qpos = model.jnt_qposadr[arm]
    fingers = model.jnt_qposadr[[model.joint(f.name).id for f in card.finger_joints]]
    f_open = np.array([f.open for f in card.finger_joints])
    f_closed = np.array([f.closed for f in card.finger_joints])
    acts = [model.actuator(n).id for n in card.arm_actuators]
    grip = model.actuator(card.gripper_actuator).id
    adr = model.jnt_qposadr[passive]
    rows = []
    for c in np.linspace(0.0, 1.0, STEPS):
        mujoco.mj_resetData(model, data)
        data.qpos[arm_qpos] = card.home
        data.ctrl[acts] = card.home
        data.ctrl[grip] = card.gripper_ctrl[0] + c * (card.gripper_ctrl[1] - card.gripper_ctrl[0])
        mujoco.mj_step(model, data, max(1, round(SETTLE_S / model.opt.timestep)))
        closed = float(np.mean((data.qpos[fingers] - f_open) / (f_closed - f_open)))
        rows.append((closed, data.qpos[adr].copy()))
    rows.sort(key=lambda r: r[0])
    kept = [r for k, r in enumerate(rows) if k == 0 or r[0] > rows[k - 1][0]]  # np.interp needs increasing x
    return Linkage(tuple(model.joint(j).name for j in passive), np.array([r[0] for r in kept]),
                   np.array([r[1] for r in kept]))


def linkage_positions(closedness: np.ndarray, positions: np.ndarray, c: float) -> np.ndarray:
    """(n,) passive joint positions at closedness `c`, interpolated in a table (clamped at its ends)."""
    return np.array([np.interp(c, closedness, col) for col in positions.T])
