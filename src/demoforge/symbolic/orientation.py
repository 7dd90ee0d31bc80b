"""Block orientation in symbols: which block-frame axis points up, and the yaw about the vertical.

A face name (`px nx py ny pz nz`) is the block-frame axis that points up. Each face has a
reference axis `h(face)` that lies flat when that face is up (pz, nz: +x; px, nx: +y;
py, ny: +z); the yaw is the heading of `h(face)` in the world, in 90-degree steps
(`yaw0` = along world +x). `block_rotation(face, yaw)` builds the world_R_block that
`face_and_yaw` reads back, so a sampled pose and its evaluation agree by construction.
"""

from __future__ import annotations

import numpy as np

from demoforge.tasks.families import FACES, YAWS  # the domain's symbols; raw.envstate encodes the same ones

YAW_RAD = {name: k * np.pi / 2 for k, name in enumerate(YAWS)}
_AXIS = {"x": 0, "y": 1, "z": 2}
_REF = {"x": "y", "y": "z", "z": "x"}  # reference axis per up-axis


def top_half_edge(half: np.ndarray, up) -> np.ndarray:
    """The smaller half edge [m] of the top face of blocks with half extents `half` (..., 3) whose
    block axis `up` (an index, or an array of them) points up: the smaller of the other two half
    extents (a flat plate's radius, not its thickness; a cube's half edge)."""
    return np.where(np.arange(3) == np.asarray(up)[..., None], np.inf, half).min(axis=-1)


def face_axis(face: str) -> np.ndarray:
    """Unit vector of `face` in the block frame."""
    v = np.zeros(3)
    v[_AXIS[face[1]]] = 1.0 if face[0] == "p" else -1.0
    return v


def reference_axis(face: str) -> np.ndarray:
    """The block-frame axis whose world heading is the yaw while `face` is up."""
    v = np.zeros(3)
    v[_AXIS[_REF[face[1]]]] = 1.0
    return v


def block_rotation(face: str, yaw: str) -> np.ndarray:
    """world_R_block (3, 3) with `face` up and the reference axis at heading `yaw`."""
    f, h = face_axis(face), reference_axis(face)
    block_basis = np.column_stack([h, np.cross(f, h), f])  # right-handed: h x (f x h) = f
    theta = YAW_RAD[yaw]
    c, s = np.cos(theta), np.sin(theta)
    world_R_level = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return world_R_level @ block_basis.T


def rotation_quat(world_R_block: np.ndarray) -> tuple[float, float, float, float]:
    """wxyz quaternion of a rotation matrix, sign fixed so w >= 0."""
    import mujoco

    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.asarray(world_R_block, float).flatten())
    if quat[0] < 0:
        quat = -quat
    return tuple(float(q) for q in quat)


def face_up(world_R_block: np.ndarray, tilt_tol: float) -> str | None:
    """The face whose axis is within `tilt_tol` [rad] of world up, or None when tilted."""
    up = world_R_block[2]  # world z component of each block axis
    k = int(np.argmax(np.abs(up)))
    if abs(up[k]) < np.cos(tilt_tol):
        return None
    return ("p" if up[k] > 0 else "n") + "xyz"[k]


def yaw_of(world_R_block: np.ndarray, face: str, yaw_tol: float) -> str | None:
    """The 90-degree yaw step within `yaw_tol` [rad] of the reference axis's heading, or None."""
    h = world_R_block @ reference_axis(face)
    heading = float(np.arctan2(h[1], h[0]))
    k = int(np.round(heading / (np.pi / 2))) % 4
    off = abs((heading - k * np.pi / 2 + np.pi) % (2 * np.pi) - np.pi)
    return YAWS[k] if off <= yaw_tol else None
