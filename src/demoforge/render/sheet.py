"""A contact sheet of a look: one task scene under several draws, as one PNG.

The scene is a generated problem of a task family in a sampled reset state (as an
scene package samples it); draw k is the look's draw for copy k of episode 0 under
`seed`, the same draw `demoforge render --seed SEED` gives that copy. Each cell shows the
cameras of one draw stacked top to bottom; cells run left to right, `columns` per row.

With `axes`, a camera-tuning aid (demoforge.render.axes): every image shows the world axes
(X red, Y green, Z blue) at the world origin, and each cell ends with an overview from afar that
outlines each camera's frustum (front yellow, side magenta, wrist cyan) down to the table top,
under that draw's camera jitter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from demoforge.dataset.guard import write_file
from demoforge.fields import MAX_SEED, nested, option
from demoforge.randomize.robot_start import RobotStartParams
from demoforge.randomize.scene import bake_profiles
from demoforge.render.apply import look_targets
from demoforge.render.axes import draw_axes, overview
from demoforge.render.look import Look, LookError
from demoforge.render.recorder import CameraRecorder, camera_key
from demoforge.render.sample import draw_look, look_seed
from demoforge.scenes import build_task_scene
from demoforge.sim.cameras import intrinsics, world_T_camera
from demoforge.symbolic import reset_rng, sample_reset_state
from demoforge.tasks import generate_family, parse_task
from demoforge.tasks import package as registry
from demoforge.tasks.library import domain_text
from demoforge.tasks.package import family_value, task_packages_option


@dataclass(frozen=True)
class SheetSettings:
    """What a sheet shows; the fields are `demoforge look-sheet`'s options (`LookSheetConfig`)."""

    draws: int = option(8, "Draws (episode copies) shown.", range=(1, 256))
    columns: int = option(4, "Draws per row.", range=(1, 64))
    cameras: tuple[str, ...] = option(("front", "side"), "Cameras stacked in each cell, top to bottom, e.g. "
                                                         "front,side.")
    family: str = option("stack_three", "Task family of the scene (a task package's too: --task-package).",
                         normalize=family_value)
    seed: int = option(0, "Root of the draws (as render --seed) and of the scene.", range=(0, MAX_SEED))
    axes: bool = option(False, "Camera tuning: draw the world axes (X red, Y green, Z blue) at the origin on every "
                               "image and add an overview outlining each camera's frustum.")


@dataclass(frozen=True)
class LookSheetConfig:
    """`demoforge look-sheet`: the look shown, and how (`SheetSettings`' options taken in as its own)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the family below may be one of theirs
    look: str = option("randomized", "Look YAML file or shipped look name (plain, randomized).")
    sheet: SheetSettings = nested(SheetSettings)


def sheet_image(look: Look, settings: SheetSettings = SheetSettings()) -> np.ndarray:
    """(H, W, 3) uint8: the sheet of `look` (see the module docstring)."""
    if not (settings.draws >= 1 and settings.columns >= 1 and settings.cameras):
        raise LookError(f"sheet: draws {settings.draws} and columns {settings.columns} must be >= 1, "
                        f"cameras {list(settings.cameras)} not empty")
    generated = generate_family(settings.family, count=1, seed=settings.seed)[0]  # refuses an unknown family
    owner = registry.owner("families", settings.family)  # so a package brings it: its domain is the problem's
    task = parse_task(generated.problem_pddl, domain_text=domain_text(owner.name),
                      problem_file=f"{generated.name}.pddl")
    draw = bake_profiles(generated.scene, 1, settings.seed)[0]
    scene, binding = build_task_scene(task, generated.scene, draw)
    state = sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, settings.seed, 0, 0),
                               robot_start=RobotStartParams())
    cells, recorder = [], None
    try:
        for k in range(settings.draws):
            look_draw = draw_look(look, look_seed(settings.seed, look.name, 0, k), look_targets(scene))
            if recorder is None:
                recorder = CameraRecorder(scene, look_draw, settings.cameras)
            else:
                recorder.bind(scene, look_draw)
            frames = recorder.render_state(state.state)
            images = [frames[camera_key(c)] for c in settings.cameras]
            if settings.axes:
                images = _with_axes(recorder, images, settings.cameras)
            cells.append(_stack(images, axis=0))
    finally:
        if recorder is not None:
            recorder.close()
    blank = np.zeros_like(cells[0])
    rows = [cells[i:i + settings.columns] for i in range(0, len(cells), settings.columns)]
    rows = [_stack(r + [blank] * (settings.columns - len(r)), axis=1) for r in rows]
    return _stack(rows, axis=0)


def _with_axes(recorder: CameraRecorder, images: list[np.ndarray], cameras: Sequence[str]) -> list[np.ndarray]:
    """The cell's images with the world axes drawn on each, then the frustum overview."""
    scene, data = recorder.scene, recorder.scene.data
    out = [draw_axes(im, intrinsics(scene.model, scene.cameras[c], im.shape[1], im.shape[0]),
                     world_T_camera(data, scene.cameras[c])) for im, c in zip(images, cameras, strict=True)]
    size = (max(im.shape[1] for im in images), max(im.shape[0] for im in images))
    return out + [overview(scene, data, cameras, recorder.canvas, size, recorder.sizes)]


def _stack(images: Sequence[np.ndarray], *, axis: int, gap: int = 2) -> np.ndarray:
    """Images joined along `axis` with a white gap, padded with white to a common size."""
    other = 1 - axis
    size = max(im.shape[other] for im in images)
    parts = []
    for i, im in enumerate(images):
        pad = [(0, 0), (0, 0), (0, 0)]
        pad[other] = (0, size - im.shape[other])
        parts.append(np.pad(im, pad, constant_values=255))
        if i < len(images) - 1:
            shape = list(parts[-1].shape)
            shape[axis] = gap
            parts.append(np.full(shape, 255, np.uint8))
    return np.concatenate(parts, axis=axis)


def write_png(image: np.ndarray, out: str | Path) -> Path:
    """Write an (H, W, 3) uint8 image as PNG (through PyAV's encoder), via a temporary name."""
    out = Path(out)
    codec = av.CodecContext.create("png", "w")
    codec.width, codec.height, codec.pix_fmt = image.shape[1], image.shape[0], "rgb24"
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
    data = b"".join(bytes(p) for p in [*codec.encode(frame), *codec.encode(None)])
    return write_file(out, data)
