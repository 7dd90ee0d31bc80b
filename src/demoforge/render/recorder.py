"""CameraRecorder: a scene's cameras under a look draw, frame by frame, as video features.

The render stage uses it on replayed states; execution can use it inline while generating:

    rec = CameraRecorder(scene, draw, cameras=("front", "wrist"))   # once per env (or re-`bind`)
    writer = DatasetWriter.create(root, fps=60, features={**raw_features, **rec.features()})
    for each tick:
        writer.add_frame({**row, **rec.render_state(snapshot(scene.model, scene.data))}, task=task)
    writer.save_episode(extra={..., LOOK_EXTRA: draw})

`render_state` copies a physics state into the recorder's own render model (same degrees of
freedom, different appearance), so the stepped model is never touched.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence

import mujoco
import numpy as np

from demoforge.dataset import Feature
from demoforge.dataset.keys import image_key
from demoforge.render.apply import image_size, look_scene, max_image
from demoforge.render.canvas import Canvas
from demoforge.render.look import LookError
from demoforge.sim import Scene, restore

LOOK_EXTRA = "look"  # per-episode column demoforge/look: the look draw
DEPTH_SUFFIX = "_depth"
DEPTH_RANGE_M = (0.01, 10.0)  # depth video code range [m] (lerobot's defaults)
SEGMENTATION_SUFFIX = "_segmentation"


def camera_key(camera: str, kind: str = "rgb") -> str:
    """Feature name of one camera stream: observation.images.<camera>[_depth|_segmentation]."""
    suffix = {"rgb": "", "depth": DEPTH_SUFFIX, "segmentation": SEGMENTATION_SUFFIX}[kind]
    return image_key(camera + suffix)


def segmentation_colour(body: int) -> tuple[int, int, int]:
    """The colour body id `body` has in segmentation videos (black for -1, no geom).
    Hues step by the golden ratio so neighbouring ids differ strongly."""
    if body < 0:
        return (0, 0, 0)
    h = (body * 0.6180339887) % 1.0
    v = 1.0 if body % 2 == 0 else 0.7
    return tuple(int(round(255 * c)) for c in colorsys.hsv_to_rgb(h, 0.85, v))  # type: ignore[return-value]


class CameraRecorder:
    """Renders the named cameras of a scene under one look draw."""

    def __init__(self, scene: Scene, draw: dict, cameras: Sequence[str], *, depth: bool = False,
                 segmentation: bool = False, depth_range_m: tuple[float, float] = DEPTH_RANGE_M,
                 canvas: Canvas | None = None) -> None:
        missing = [c for c in cameras if c not in scene.cameras]
        if missing or not cameras:
            raise LookError(f"cameras {list(missing) or list(cameras)} are not in the scene; cameras: "
                            f"{sorted(scene.cameras)}")
        self.cameras = tuple(cameras)
        self.depth, self.segmentation = depth, segmentation
        self.depth_range_m = (float(depth_range_m[0]), float(depth_range_m[1]))
        self.width, self.height = draw["image"]  # the look's image size [px]
        self.sizes = {c: image_size(draw, c) for c in self.cameras}  # camera -> (width, height) [px]
        self._owns_canvas = canvas is None
        self.canvas = canvas
        self.bind(scene, draw)

    def bind(self, scene: Scene, draw: dict) -> None:
        """Switch to another scene (same cameras) or another draw; the GL context is kept."""
        sizes = {c: image_size(draw, c) for c in self.cameras}
        if sizes != self.sizes:
            raise LookError(f"look draw image sizes {sizes} differ from the recorder's {self.sizes}; "
                            "one recorder writes one image size per camera")
        self.draw = draw
        self.scene = look_scene(scene, draw)
        if self.canvas is None:
            self.canvas = Canvas(self.scene.model, *max_image(draw))
        else:
            self.canvas.bind(self.scene.model)
        n = self.scene.model.nbody
        self._palette = np.array([segmentation_colour(b) for b in range(-1, n)], np.uint8)

    def features(self) -> dict[str, Feature]:
        """The video features this recorder fills (camera order, then depth, then segmentation)."""
        shape = {c: (h, w) for c, (w, h) in self.sizes.items()}
        out = {camera_key(c): Feature("video", (*shape[c], 3)) for c in self.cameras}
        if self.depth:
            near, far = self.depth_range_m
            info = {"is_depth_map": True, "depth_min": near, "depth_max": far}
            out.update({camera_key(c, "depth"): Feature("video", (*shape[c], 1), info=dict(info))
                        for c in self.cameras})
        if self.segmentation:
            out.update({camera_key(c, "segmentation"): Feature("video", (*shape[c], 3)) for c in self.cameras})
        return out

    def render(self, data: mujoco.MjData | None = None) -> dict[str, np.ndarray]:
        """Frames of every stream for the current state of `data` (default: the recorder's
        own scene data, as positioned by `render_state` or a replay)."""
        data = self.scene.data if data is None else data
        out = {}
        for c in self.cameras:
            out[camera_key(c)] = self.canvas.rgb(data, self.scene.cameras[c], self.sizes[c])
        if self.depth:
            for c in self.cameras:
                # metres; the writer stores lerobot's 12-bit depth codes losslessly
                out[camera_key(c, "depth")] = self.canvas.depth(data, self.scene.cameras[c], self.sizes[c])
        if self.segmentation:
            for c in self.cameras:
                seg = self.canvas.segmentation(data, self.scene.cameras[c], self.sizes[c])
                out[camera_key(c, "segmentation")] = self._palette[seg + 1]
        return out

    def render_state(self, state: np.ndarray) -> dict[str, np.ndarray]:
        """Frames for a physics state vector (`demoforge.sim.snapshot` of the stepped scene)."""
        restore(self.scene.model, self.scene.data, state)
        return self.render()

    def close(self) -> None:
        """Free the GL context (only when this recorder opened it)."""
        if self._owns_canvas and self.canvas is not None:
            self.canvas.close()
            self.canvas = None

    def __enter__(self) -> CameraRecorder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
