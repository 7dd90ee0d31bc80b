"""Frames of blocks and of the gripper that every skill shares.

Conventions: the TCP frame's +z is the approach direction (out of the palm between the
fingers) and its +y is the pinch axis (the fingers close along it). A top-down grasp has
TCP z pointing down; its yaw `psi` is the angle of the pinch axis in the world xy plane.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from demoforge.sim import body_half_extents
from demoforge.skills.context import SkillContext, SkillError

UP = np.array([0.0, 0.0, 1.0])


def wrap(angle: float) -> float:
    """`angle` [rad] in [-pi, pi)."""
    return (angle + math.pi) % (2 * math.pi) - math.pi


def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_axis(axis, angle: float) -> np.ndarray:
    """Rotation matrix of `angle` [rad] about the unit `axis`."""
    quat = np.zeros(4)
    mujoco.mju_axisAngle2Quat(quat, np.asarray(axis, float), angle)
    return mat(quat)


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """Angle [rad] of the rotation taking orientation `a` to `b`."""
    return float(np.arccos(np.clip((np.trace(a.T @ b) - 1.0) / 2.0, -1.0, 1.0)))


def slerp(a: np.ndarray, b: np.ndarray, f: float) -> np.ndarray:
    """Orientation a fraction `f` of the way from `a` to `b` (about the fixed relative axis)."""
    vel = np.zeros(3)
    mujoco.mju_quat2Vel(vel, quat(a.T @ b), 1.0)
    angle = float(np.linalg.norm(vel))
    if angle < 1e-12:
        return a.copy()
    return a @ rot_axis(vel / angle, f * angle)


def mat(quat) -> np.ndarray:
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(quat, float))
    return out.reshape(3, 3)


def quat(rot: np.ndarray) -> np.ndarray:
    out = np.zeros(4)
    mujoco.mju_mat2Quat(out, np.asarray(rot, float).flatten())
    return out


def down(psi: float) -> np.ndarray:
    """TCP orientation of a top-down grasp whose pinch axis has yaw `psi` [rad]."""
    y = np.array([math.cos(psi), math.sin(psi), 0.0])
    z = np.array([0.0, 0.0, -1.0])
    return np.column_stack([np.cross(y, z), y, z])


def block(ctx: SkillContext, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centre [m], world_R_block, half extents [m]) of a free prop in the live state: a box's own,
    any other prop's (a mesh's convex pieces) bounding box about its frame."""
    if name not in ctx.props:
        raise SkillError(f"block {name!r} is not a prop of this scene; props: {sorted(ctx.props)}")
    body = ctx.props[name]
    return (ctx.data.xpos[body].copy(), ctx.data.xmat[body].reshape(3, 3).copy(),
            body_half_extents(ctx.model, body))


def up_axis(rot: np.ndarray) -> tuple[int, float]:
    """(index, sign) of the block axis that points most nearly up."""
    k = int(np.argmax(np.abs(rot[2])))
    return k, float(np.sign(rot[2, k]))


def vertical_half(rot: np.ndarray, half: np.ndarray) -> float:
    """Half height [m] of a box standing on its face (its up axis' half extent)."""
    return float(half[up_axis(rot)[0]])


def upright(rot: np.ndarray) -> np.ndarray:
    """`rot` snapped to the nearest orientation whose up axis is exactly vertical, same yaw."""
    k, sign = up_axis(rot)
    out = np.zeros((3, 3))
    out[:, k] = sign * UP
    i, j = (k + 1) % 3, (k + 2) % 3  # (i, j, k) cyclic, so x_i = x_j x x_k keeps it right-handed
    h = rot[:, j] - rot[2, j] * UP
    out[:, j] = h / np.linalg.norm(h)
    out[:, i] = np.cross(out[:, j], out[:, k])
    return out


def pinch_yaws(rot: np.ndarray, half: np.ndarray, max_width: float) -> list[tuple[float, float]]:
    """(yaw of the pinch axis [rad], block width along it [m]) for each horizontal block
    axis narrower than `max_width`, in both directions (the two 180-degree twins)."""
    k, _ = up_axis(rot)
    out = []
    for j in (a for a in range(3) if a != k):
        if 2 * half[j] <= max_width:
            yaw = math.atan2(rot[1, j], rot[0, j])
            out += [(wrap(yaw), 2 * half[j]), (wrap(yaw + math.pi), 2 * half[j])]
    return out


def top_z(ctx: SkillContext, exclude: tuple[str, ...] = ()) -> float:
    """Highest point [m] of every prop but `exclude` (the table top when none are left)."""
    tops = [ctx.table_z]
    for name, body in ctx.props.items():
        if name in exclude:
            continue
        for g in range(ctx.model.body_geomadr[body], ctx.model.body_geomadr[body] + ctx.model.body_geomnum[body]):
            if ctx.model.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX:
                reach = float(np.abs(ctx.data.geom_xmat[g].reshape(3, 3)[2]) @ ctx.model.geom_size[g])
            else:
                reach = float(ctx.model.geom_rbound[g])
            tops.append(float(ctx.data.geom_xpos[g][2]) + reach)
    return max(tops)


def footprint_radius(half: np.ndarray, rot: np.ndarray) -> float:
    """Radius [m] of a circle around the block's footprint on the table."""
    k, _ = up_axis(rot)
    return float(np.linalg.norm([half[a] for a in range(3) if a != k]))
