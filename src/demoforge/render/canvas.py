"""One GL context per worker, re-bound to each model it draws.

Creating a renderer costs about a second on a CPU (mostly the GL context); uploading a
model's textures and meshes costs a few tens of milliseconds. A render stage draws a new
model for every episode copy (its look edits textures and lights), so the canvas keeps
one context and rebuilds only the model's GPU resources. The context belongs to the thread
that opened it: draw from that thread only.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

from demoforge.errors import SimError
from demoforge.sim import open_renderer

MAX_GEOM = 10000
_NO_PERTURB = mujoco.MjvPerturb()  # nothing selected: mjv_addGeoms draws no perturbation


def blank_model(width: int, height: int) -> mujoco.MjModel:
    """An empty model with a framebuffer of at least (width, height): opens a canvas before
    the first real model exists."""
    w, h = max(width, 640), max(height, 480)
    return mujoco.MjModel.from_xml_string(f'<mujoco><visual><global offwidth="{w}" offheight="{h}"/></visual></mujoco>')


def _ground_options(model: mujoco.MjModel) -> tuple[mujoco.MjvOption, mujoco.MjvOption] | None:
    """(options drawing every geom but the ground, options drawing only the ground) when the
    model's ground, its upward planes fixed to the world, has a geom group of its own (the
    built-in scenes' FLOOR_GROUP); None otherwise (everything is drawn in one go)."""
    planes = (model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE) & (model.geom_bodyid == 0)
    if not planes.any():
        return None
    up = np.array([_z_axis(q)[2] for q in model.geom_quat[planes]])
    groups = set(model.geom_group[planes].tolist())
    if len(groups) != 1 or (up < 1.0 - 1e-9).any():
        return None
    (group,) = groups
    if (model.geom_group[~planes] == group).any():
        return None
    rest, ground = mujoco.MjvOption(), mujoco.MjvOption()
    rest.geomgroup[group] = 0
    for mask in (ground.geomgroup, ground.sitegroup, ground.jointgroup, ground.tendongroup, ground.actuatorgroup,
                 ground.flexgroup, ground.skingroup):
        mask[:] = 0  # the second pass adds the ground's geoms and nothing the first pass drew
    ground.geomgroup[group] = 1
    return rest, ground


def _z_axis(quat: np.ndarray) -> np.ndarray:
    mat = np.empty(9)
    mujoco.mju_quat2Mat(mat, quat)
    return mat.reshape(3, 3)[:, 2]


class Canvas:
    """Renders RGB, depth and body segmentation of a bound model's cameras."""

    def __init__(self, model: mujoco.MjModel, width: int, height: int) -> None:
        # llvmpipe rasterizes on the drawing thread itself: a rasterizer thread of its own (1)
        # draws the same pixels for about 10% more CPU per 224 px frame, spent handing each draw
        # over to it; more threads leave less of the other cores to the encoders. Read when Mesa
        # loads; a user's setting wins.
        os.environ.setdefault("LP_NUM_THREADS", "0")
        # The backend choice (EGL, then OSMesa) and its errors are demoforge.sim's.
        self._renderer, self.backend = open_renderer(model, width, height)
        self._gl = getattr(self._renderer, "_gl_context", None)
        self.width, self.height = width, height  # the largest image it draws [px]
        self._viewports: dict[tuple[int, int], tuple] = {}
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self.model: mujoco.MjModel | None = None
        self._context: mujoco.MjrContext | None = None
        self.bind(model)

    def bind(self, model: mujoco.MjModel) -> None:
        """Draw `model` from now on (uploads its textures and meshes)."""
        if model.vis.global_.offwidth < self.width or model.vis.global_.offheight < self.height:
            raise SimError(f"model framebuffer {model.vis.global_.offwidth}x{model.vis.global_.offheight} is "
                             f"smaller than the canvas {self.width}x{self.height}")
        self._make_current()
        if self._context is not None:
            self._context.free()
        self.model = model
        self._ground = _ground_options(model)
        self._scene = mujoco.MjvScene(model, maxgeom=MAX_GEOM)
        self._context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._context)

    def _make_current(self) -> None:
        if self._gl is not None:
            self._gl.make_current()

    def _viewport(self, size: tuple[int, int] | None) -> tuple:
        """(rect, rgb buffer, depth buffer) of an image of `size` (width, height) [px], the canvas's when None."""
        size = (self.width, self.height) if size is None else (int(size[0]), int(size[1]))
        if size not in self._viewports:
            w, h = size
            if not (0 < w <= self.width and 0 < h <= self.height):
                raise SimError(f"image {w}x{h} does not fit the canvas {self.width}x{self.height}")
            self._viewports[size] = (mujoco.MjrRect(0, 0, w, h), np.empty((h, w, 3), np.uint8),
                                     np.empty((h, w), np.float32))
        return self._viewports[size]

    def _draw(self, data: mujoco.MjData, camera: int, rect: mujoco.MjrRect, *, segment: bool = False) -> None:
        self._camera.fixedcamid = camera
        scene = self._scene
        if self._ground is None:
            mujoco.mjv_updateScene(self.model, data, self._option, None, self._camera,
                                   mujoco.mjtCatBit.mjCAT_ALL.value, scene)
        else:
            # The ground last: the table and the robot in front of it are drawn first, so the
            # depth test discards the ground's hidden fragments before they are shaded, in the
            # scene's pass and again in the shadowed one. Nothing lies below the ground for it to
            # shadow: as a decoration it stays out of the shadow map's depth pass. Same pixels.
            rest, ground = self._ground
            mujoco.mjv_updateScene(self.model, data, rest, None, self._camera, mujoco.mjtCatBit.mjCAT_ALL.value, scene)
            first = scene.ngeom
            mujoco.mjv_addGeoms(self.model, data, ground, _NO_PERTURB, mujoco.mjtCatBit.mjCAT_STATIC.value, scene)
            for g in scene.geoms[first:scene.ngeom]:
                g.category = mujoco.mjtCatBit.mjCAT_DECOR.value
        scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = segment
        scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = segment
        mujoco.mjr_render(rect, scene, self._context)

    def rgb(self, data: mujoco.MjData, camera: int, size: tuple[int, int] | None = None) -> np.ndarray:
        """(H, W, 3) uint8 image of camera id `camera` (a new array) at `size` (W, H) [px],
        the canvas's own size when None."""
        rect, rgb, _ = self._viewport(size)
        self._draw(data, camera, rect)
        mujoco.mjr_readPixels(rgb, None, rect, self._context)
        return np.flipud(rgb).copy()

    def depth(self, data: mujoco.MjData, camera: int, size: tuple[int, int] | None = None) -> np.ndarray:
        """(H, W) float32 distance along the view axis [m]."""
        rect, _, depth = self._viewport(size)
        self._draw(data, camera, rect)
        mujoco.mjr_readPixels(None, depth, rect, self._context)
        extent = self.model.stat.extent
        near, far = self.model.vis.map.znear * extent, self.model.vis.map.zfar * extent
        # The depth buffer holds OpenGL's non-linear [0, 1] depth; invert the projection.
        z = depth.astype(np.float64)
        linear = near * far / (far - z * (far - near))
        return np.flipud(linear).astype(np.float32)

    def segmentation(self, data: mujoco.MjData, camera: int, size: tuple[int, int] | None = None) -> np.ndarray:
        """(H, W) int32 body id under each pixel; -1 where no geom is."""
        rect, rgb, _ = self._viewport(size)
        self._draw(data, camera, rect, segment=True)
        mujoco.mjr_readPixels(rgb, None, rect, self._context)
        img = np.flipud(rgb).astype(np.int64)
        segid = img[..., 0] + (img[..., 1] << 8) + (img[..., 2] << 16)  # segid + 1; 0 = background
        n = self._scene.ngeom
        body = np.full(n + 1, -1, np.int32)
        for g in self._scene.geoms[:n]:
            if g.segid >= 0 and g.objtype == mujoco.mjtObj.mjOBJ_GEOM:
                body[g.segid + 1] = self.model.geom_bodyid[g.objid]
        return body[np.clip(segid, 0, n)]

    def close(self) -> None:
        """Free the model resources and the GL context."""
        if self._context is not None:
            self._make_current()
            self._context.free()
            self._context = None
        self._renderer.close()

    def __enter__(self) -> Canvas:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
