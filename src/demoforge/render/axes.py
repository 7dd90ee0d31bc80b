"""A camera-tuning aid: the world axes and the cameras' frustums drawn over rendered images.

    image = draw_axes(image, intr, world_T_cam)                    # X red, Y green, Z blue at the origin
    view = overview(scene, data, cameras, canvas, size=(224, 224))  # every camera's frustum, from afar

The world axes start at the world origin (the env origin every camera pose and look `pos` is
given in; the robot's base stands above it on the table top). A camera's frustum is its apex
and the four rays through its image corners, each cut where it meets the table top (so the
outline on the table is what that camera frames) or at `FAR_M` when it does not reach it.
Lines are drawn over the image (no depth test: a tuning aid shows what is hidden too), clipped
at the camera's near plane and at the image's border.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import mujoco
import numpy as np

from demoforge.sim.cameras import Intrinsics, intrinsics, project, world_T_camera
from demoforge.sim.scene import look_at_quat

AXES_M = 0.5  # length of each world axis [m]: Z reaches above the table top
AXES_RGB = ((255, 0, 0), (0, 200, 0), (0, 80, 255))  # X, Y, Z
FAR_M = 1.5  # a frustum ray that does not meet the table top is cut this far from the camera [m]
NEAR_M = 0.01  # lines are clipped this far in front of the drawing camera [m]
# Frustum outline colour per camera; cameras not listed are white.
FRUSTUM_RGB = {"front": (255, 210, 0), "side": (255, 0, 255), "wrist": (0, 230, 230)}
OVERVIEW_FOVY = 50.0  # [deg]
OVERVIEW_DIRECTION = np.array([0.55, 0.75, 0.5]) / np.linalg.norm([0.55, 0.75, 0.5])  # from the scene to the eye


def axes_segments(length: float = AXES_M) -> list[tuple[np.ndarray, np.ndarray, tuple[int, int, int]]]:
    """(start, end, colour) of the world X, Y and Z axes [m]."""
    origin = np.zeros(3)
    return [(origin, np.eye(3)[k] * length, AXES_RGB[k]) for k in range(3)]


def frustum_segments(intr: Intrinsics, world_T_cam: np.ndarray, table_z: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """World segments [m] of a camera's frustum outline: apex to each corner, and corner to corner."""
    apex = world_T_cam[:3, 3]
    corners = []
    for u, v in ((0, 0), (intr.width, 0), (intr.width, intr.height), (0, intr.height)):
        ray = world_T_cam[:3, :3] @ np.array([(u - intr.cx) / intr.fx, -(v - intr.cy) / intr.fy, -1.0])
        ray /= np.linalg.norm(ray)
        t = (table_z - apex[2]) / ray[2] if ray[2] < -1e-9 else np.inf
        corners.append(apex + ray * min(t, FAR_M))
    return [(apex, c) for c in corners] + [(corners[k], corners[(k + 1) % 4]) for k in range(4)]


def _clip_near(p0: np.ndarray, p1: np.ndarray, world_T_cam: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The part of segment p0-p1 at least NEAR_M in front of the camera, or None."""
    axis = -world_T_cam[:3, 2]  # the view direction
    d0, d1 = ((p - world_T_cam[:3, 3]) @ axis for p in (p0, p1))
    if d0 < NEAR_M and d1 < NEAR_M:
        return None
    if d0 < NEAR_M:
        p0 = p0 + (p1 - p0) * (NEAR_M - d0) / (d1 - d0)
    elif d1 < NEAR_M:
        p1 = p1 + (p0 - p1) * (NEAR_M - d1) / (d0 - d1)
    return p0, p1


def _clip_rect(a: np.ndarray, b: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Liang-Barsky: the part of the pixel segment a-b inside [0, width] x [0, height], or None."""
    d = b - a
    t0, t1 = 0.0, 1.0
    for p, q in ((-d[0], a[0]), (d[0], width - a[0]), (-d[1], a[1]), (d[1], height - a[1])):
        if p == 0:
            if q < 0:
                return None
        elif p < 0:
            t0 = max(t0, q / p)
        else:
            t1 = min(t1, q / p)
        if t0 > t1:
            return None
    return a + t0 * d, a + t1 * d


def draw_segments(image: np.ndarray, segments: Sequence[tuple], intr: Intrinsics, world_T_cam: np.ndarray, *,
                  thickness: int = 2) -> np.ndarray:
    """`image` (H, W, 3) uint8 with each world segment (start, end, colour) drawn over it, as the
    camera `intr`, `world_T_cam` sees it; a new array."""
    out = image.copy()
    h, w = out.shape[:2]
    for p0, p1, colour in segments:
        near = _clip_near(np.asarray(p0, float), np.asarray(p1, float), world_T_cam)
        if near is None:
            continue
        uv, _ = project(np.stack(near), intr, world_T_cam)
        inside = _clip_rect(uv[0], uv[1], w, h)
        if inside is None:
            continue
        a, b = inside
        n = int(np.ceil(np.abs(b - a).max() * 2)) + 1
        points = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
        for du in range(thickness):
            for dv in range(thickness):
                cols = np.clip(np.floor(points[:, 0] - (thickness - 1) / 2 + du).astype(int), 0, w - 1)
                rows = np.clip(np.floor(points[:, 1] - (thickness - 1) / 2 + dv).astype(int), 0, h - 1)
                out[rows, cols] = colour
    return out


def draw_axes(image: np.ndarray, intr: Intrinsics, world_T_cam: np.ndarray) -> np.ndarray:
    """`image` with the world axes drawn over it (X red, Y green, Z blue); a new array."""
    return draw_segments(image, axes_segments(), intr, world_T_cam)


def overview_pose(points: np.ndarray, fovy: float = OVERVIEW_FOVY) -> tuple[np.ndarray, np.ndarray]:
    """(eye, target) [m] of a camera along OVERVIEW_DIRECTION that frames every point in `points` (N, 3)."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    target = (lo + hi) / 2
    radius = float(np.linalg.norm(points - target, axis=1).max())
    distance = radius / np.sin(np.deg2rad(fovy) / 2) * 1.05
    return target + OVERVIEW_DIRECTION * distance, target


def overview(scene, data: mujoco.MjData, cameras: Sequence[str], canvas, size: tuple[int, int],
             sizes: dict[str, tuple[int, int]]) -> np.ndarray:
    """(H, W, 3) uint8: `scene` (in the state of `data`) seen from afar, with the frustum outline of
    each of `cameras` (at its image size `sizes[c]`, (width, height) [px]) and the world axes.
    Drawn on `canvas` (a demoforge.render.canvas.Canvas, rebound to a copy of the model)."""
    model = scene.model
    table_z = float(scene.spec.table.height)
    frusta = {c: frustum_segments(intrinsics(model, scene.cameras[c], *sizes[c]),
                                  world_T_camera(data, scene.cameras[c]), table_z) for c in cameras}
    (tx, ty), (sx, sy) = scene.spec.table.center, scene.spec.table.size
    table = np.array([[tx + i * sx / 2, ty + j * sy / 2, table_z] for i in (-1, 1) for j in (-1, 1)])
    # framed: the table, the origin, each camera and where its frustum meets the table (rays cut at
    # FAR_M may leave the picture)
    ends = [p for f in frusta.values() for seg in f for p in seg]
    points = np.concatenate([table, np.zeros((1, 3)), np.stack([p for p in ends if p[2] <= table_z + 1e-6]),
                             np.stack([f[0][0] for f in frusta.values()])])
    eye, target = overview_pose(points)
    # A copy of the model whose first world-fixed camera is moved to the overview pose: the canvas
    # draws model cameras only, and the scene's own model stays as it is.
    view = copy.deepcopy(model)
    cam = next(k for k in range(view.ncam) if view.cam_bodyid[k] == 0)
    view.cam_pos[cam], view.cam_quat[cam] = eye, look_at_quat(tuple(eye), tuple(target))
    view.cam_fovy[cam] = OVERVIEW_FOVY
    view_data = mujoco.MjData(view)
    view_data.qpos[:], view_data.qvel[:] = data.qpos, data.qvel
    view_data.mocap_pos[:], view_data.mocap_quat[:] = data.mocap_pos, data.mocap_quat
    mujoco.mj_forward(view, view_data)
    canvas.bind(view)
    image = canvas.rgb(view_data, cam, size)
    intr, pose = intrinsics(view, cam, *size), world_T_camera(view_data, cam)
    segments = [(p0, p1, FRUSTUM_RGB.get(c, (255, 255, 255))) for c, f in frusta.items() for p0, p1 in f]
    return draw_segments(image, segments + axes_segments(), intr, pose)
