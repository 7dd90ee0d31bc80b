"""Offscreen RGB, depth and segmentation of named cameras, with each camera's calibration.

`MUJOCO_GL=egl` is the default (Mesa's EGL renders on a CPU); OSMesa is the fallback (chosen
before mujoco loads when EGL is missing, see gl_backend.py, and tried again here when an EGL
context cannot start); when neither works the error says which packages to install. A renderer takes about a
second and 150 MB to create, so a `CameraRig` creates one and reuses it for every frame.

Camera convention (MuJoCo/OpenGL): the camera looks along its -z axis with +y up. Pixel
coordinates (u, v) run right and down from the image's top-left corner; pixel (i, j) covers
u in [i, i + 1), v in [j, j + 1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.errors import SimError
from demoforge.sim import gl_backend

INSTALL_FIX = (
    "install EGL (Debian/Ubuntu: apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri libopengl0) "
    "and set MUJOCO_GL=egl, or install OSMesa (apt-get install libosmesa6) and set MUJOCO_GL=osmesa"
)


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of one camera at one image size."""

    fx: float  # focal length [px]
    fy: float  # focal length [px]
    cx: float  # principal point u [px]
    cy: float  # principal point v [px]
    width: int  # [px]
    height: int  # [px]

    def matrix(self) -> np.ndarray:
        """(3, 3) K matrix."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])


def intrinsics(model: mujoco.MjModel, camera: int, width: int, height: int) -> Intrinsics:
    """Intrinsics from the camera's vertical field of view; pixels are square."""
    fy = (height / 2.0) / np.tan(np.deg2rad(model.cam_fovy[camera]) / 2.0)
    return Intrinsics(float(fy), float(fy), width / 2.0, height / 2.0, width, height)


def world_T_camera(data: mujoco.MjData, camera: int) -> np.ndarray:
    """(4, 4) pose of the camera frame in the world (after mj_forward / mj_step)."""
    pose = np.eye(4)
    pose[:3, :3] = data.cam_xmat[camera].reshape(3, 3)
    pose[:3, 3] = data.cam_xpos[camera]
    return pose


def project(
    points_world: np.ndarray, intr: Intrinsics, world_T_cam: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (N, 2) [u, v] and depths (N,) [m, along the view axis] of world points (N, 3).
    Points behind the camera get depth <= 0; their pixels are meaningless."""
    p = np.atleast_2d(np.asarray(points_world, float))
    cam = (p - world_T_cam[:3, 3]) @ world_T_cam[:3, :3]  # R^T (p - t), row-wise
    depth = -cam[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = intr.cx + intr.fx * cam[:, 0] / depth
        v = intr.cy - intr.fy * cam[:, 1] / depth
    return np.column_stack([u, v]), depth


def _gl_context_class(backend: str):
    if backend == "egl":
        from mujoco.egl import GLContext
    elif backend == "osmesa":
        from mujoco.osmesa import GLContext
    elif backend == "glfw":
        from mujoco.glfw import GLContext
    else:
        raise SimError(f"MUJOCO_GL={backend!r} is not one of ['egl', 'osmesa', 'glfw']")
    return GLContext


def open_renderer(model: mujoco.MjModel, width: int, height: int) -> tuple[mujoco.Renderer, str]:
    """A Renderer and the GL backend it runs on (MUJOCO_GL's, then OSMesa after EGL). EGL draws on
    the first EGL device that works (an NVIDIA GPU where its driver is installed, else Mesa's
    llvmpipe on the CPU), or on the one `MUJOCO_EGL_DEVICE_ID` names: then a failure is an error,
    not a quiet fall back to the CPU."""
    from mujoco.rendering.classic import gl_context

    requested = os.environ.get("MUJOCO_GL", "egl").strip().lower() or "egl"
    if requested in ("disable", "disabled", "off", "false", "0"):
        why = gl_backend.disabled_because or f"MUJOCO_GL={requested}"
        raise SimError(f"offscreen rendering is unavailable: {why}. Fix: {INSTALL_FIX}")
    device = os.environ.get("MUJOCO_EGL_DEVICE_ID")  # a chosen GPU: no fallback to the CPU behind the user's back
    order = [requested] + (["osmesa"] if requested == "egl" and device is None else [])
    errors = []
    for backend in order:
        try:
            # The Renderer reads this class when it is built; setting it also covers a process
            # that imported mujoco before demoforge.sim could choose the backend.
            gl_context.GLContext = _gl_context_class(backend)
            return mujoco.Renderer(model, height=height, width=width), backend
        except (SimError, ImportError, OSError, RuntimeError, AttributeError) as exc:
            errors.append(f"{backend}: {exc}")
    if requested == "egl" and device is not None:
        raise SimError(f"MUJOCO_EGL_DEVICE_ID={device!r}: EGL cannot render on that device ({'; '.join(errors)}). "
                       "Fix: give the index of one of this machine's EGL devices (0 is the first; with "
                       "CUDA_VISIBLE_DEVICES set, a CUDA device id), or unset it to render on the first device "
                       "that works (the GPU where an NVIDIA driver is installed, else Mesa on the CPU)")
    raise SimError("offscreen rendering is unavailable (" + "; ".join(errors) + f"). Fix: {INSTALL_FIX}")


class CameraRig:
    """One reusable renderer for a model's named cameras. Use as a context manager or
    call `close()`: OSMesa contexts must be freed explicitly."""

    def __init__(
        self, model: mujoco.MjModel, cameras: dict[str, int], *, width: int = 224, height: int = 224
    ) -> None:
        self.model = model
        self.cameras = dict(cameras)
        self.width, self.height = width, height
        self.renderer, self.backend = open_renderer(model, width, height)

    def _camera(self, name: str) -> int:
        try:
            return self.cameras[name]
        except KeyError:
            raise SimError(f"unknown camera {name!r}; cameras: {sorted(self.cameras)}") from None

    def intrinsics(self, name: str) -> Intrinsics:
        """Intrinsics of camera `name` at this rig's image size."""
        return intrinsics(self.model, self._camera(name), self.width, self.height)

    def world_T_camera(self, data: mujoco.MjData, name: str) -> np.ndarray:
        """(4, 4) pose of camera `name` in the world."""
        return world_T_camera(data, self._camera(name))

    def project(self, data: mujoco.MjData, name: str, points_world: np.ndarray):
        """Pixels and depths of world points in camera `name`; see `project`."""
        return project(points_world, self.intrinsics(name), self.world_T_camera(data, name))

    def rgb(self, data: mujoco.MjData, name: str) -> np.ndarray:
        """(H, W, 3) uint8."""
        r = self.renderer
        r.disable_depth_rendering()
        r.disable_segmentation_rendering()
        r.update_scene(data, camera=self._camera(name))
        return r.render()

    def depth(self, data: mujoco.MjData, name: str) -> np.ndarray:
        """(H, W) float32 distance along the view axis [m]."""
        r = self.renderer
        r.enable_depth_rendering()
        r.update_scene(data, camera=self._camera(name))
        out = r.render()
        r.disable_depth_rendering()
        return out

    def segmentation(self, data: mujoco.MjData, name: str) -> np.ndarray:
        """(H, W) int32 body id under each pixel; -1 where no geom is (background)."""
        r = self.renderer
        r.enable_segmentation_rendering()
        r.update_scene(data, camera=self._camera(name))
        seg = r.render()
        r.disable_segmentation_rendering()
        ids, types = seg[..., 0], seg[..., 1]
        is_geom = (types == int(mujoco.mjtObj.mjOBJ_GEOM)) & (ids >= 0)
        return np.where(is_geom, self.model.geom_bodyid[np.where(is_geom, ids, 0)], -1).astype(np.int32)

    def close(self) -> None:
        """Free the GL context."""
        self.renderer.close()

    def __enter__(self) -> CameraRig:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
