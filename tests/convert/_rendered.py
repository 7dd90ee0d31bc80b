"""A tiny rendered dataset with depth and segmentation, and the renderer's own frames of it:
two executed pick-and-place episodes cut to TICKS ticks, rendered under the plain look with
the front and wrist cameras (shared by the bake, export and conformance tests)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from demoforge.dataset import open_dataset
from demoforge.execute import generate
from demoforge.render import CameraRecorder, RenderConfig, parse_look_arg, render_dataset, segmentation_colour
from demoforge.replay import episode_scene, replay_states
from demoforge.tasks import generate_family, write_tasks
from tests.render.conftest import shorten

TICKS = 24  # native (60 Hz) ticks per episode; a multiple of 4, so 15 Hz keeps 6
CAMERAS = ("front", "wrist")
WORKING_RANGE_M = 2.5  # depths the 1 mm bound holds for (lerobot's default log coding: half a code <= 1 mm)


def render_tiny(folder: Path) -> tuple[Path, Path]:
    """(raw root, rendered root) under `folder`: 2 episodes x TICKS ticks, RGB, depth and segmentation."""
    paths = write_tasks(generate_family("pnp", count=1, seed=11), folder / "tasks")
    pddl = [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    full = generate(pddl, folder / "run", episodes_per_problem=2, envs=1, seed=4).roots["success"]
    raw = shorten(full, folder / "raw", TICKS)
    config = RenderConfig(looks=(parse_look_arg("plain"),), cameras=CAMERAS, depth=True, segmentation=True)
    return raw, render_dataset(raw, folder / "rendered", config).root


def renderer_frames(raw: Path, rendered: Path, episode: int) -> dict[str, np.ndarray]:
    """The renderer's own frames of a rendered episode, before any encoding: per camera
    `<camera>_depth` float32 metres (T, H, W) and `<camera>_ids` int32 body ids (T, H, W)."""
    draw = json.loads(open_dataset(rendered).episode(episode)["demoforge/look"])
    out: dict[str, list] = {}
    with CameraRecorder(episode_scene(raw, episode), draw, CAMERAS, depth=True) as rec:
        for _ in replay_states(raw, episode, rec.scene):
            for c in CAMERAS:
                cam = rec.scene.cameras[c]
                out.setdefault(f"{c}_depth", []).append(rec.canvas.depth(rec.scene.data, cam, rec.sizes[c]))
                out.setdefault(f"{c}_ids", []).append(rec.canvas.segmentation(rec.scene.data, cam, rec.sizes[c]))
    return {k: np.stack(v) for k, v in out.items()}


def ids_of(colours: np.ndarray, n_ids: int) -> np.ndarray:
    """(..., 3) uint8 segmentation colours -> (...) body ids (-1: no geom); every colour must be
    one of the palette's first `n_ids` (a colour that names no id fails the caller's test)."""
    palette = np.array([segmentation_colour(b) for b in range(-1, n_ids)], np.int64)
    packed = (colours[..., 0].astype(np.int64) << 16) | (colours[..., 1].astype(np.int64) << 8) | colours[..., 2]
    keys = (palette[:, 0] << 16) | (palette[:, 1] << 8) | palette[:, 2]
    assert len(np.unique(keys)) == len(keys), "the palette must give every id its own colour"
    order = np.argsort(keys)
    pos = np.searchsorted(keys[order], packed).clip(0, len(keys) - 1)
    found = keys[order][pos] == packed
    assert found.all(), f"{int((~found).sum())} pixels have colours that name no instance"
    return (order[pos] - 1).astype(np.int32)
