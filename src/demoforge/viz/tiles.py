"""Tiled episode videos: modalities (rows: rgb, depth, segmentation) by cameras (columns),
with the running operator and the step burnt in.

Frames come from the dataset's camera videos (`observation.images.<camera>[_depth|
_segmentation]`) when it has them; a state-only (raw) dataset is rendered on the fly
along its recorded physics states (a kinematic replay) with the scene's cameras. Depth is
shown as grey, near bright, over the frame's own range; segmentation as the render
stage's body colours. Depth grey spans the frame's 1st..99th percentile, near bright.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from demoforge.dataset import open_dataset
from demoforge.dataset.keys import IMAGES_PREFIX, camera_of, image_key
from demoforge.errors import DemoforgeError
from demoforge.fields import option
from demoforge.raw.schema import OPERATOR, PHASE, read_vocab
from demoforge.render.recorder import segmentation_colour
from demoforge.replay import episode_scene, replay_states
from demoforge.sim import CameraRig
from demoforge.stage.protocol import Progress, ProgressEvent
from demoforge.viz.text import burn_text

KINDS = ("rgb", "depth", "segmentation")


class VizError(DemoforgeError):
    """Nothing to show, or an episode or camera that is not there."""


@dataclass(frozen=True)
class TileSettings:
    """Rendering of a state-only dataset and the output video; the option fields are `demoforge
    viz`'s flags (`viz.config.VizConfig`)."""

    width: int = option(160, "Tile width when rendering a raw dataset [px] (even).", range=(2, 4096))
    height: int = option(120, "Tile height when rendering a raw dataset [px] (even).", range=(2, 4096))
    cameras: tuple[str, ...] = option((), "Cameras shown, one column each, e.g. front,wrist [default: all].")
    kinds: tuple[str, ...] = option(KINDS, "Modalities shown, one row each, in this order.", choices=KINDS)
    stride: int = option(1, "Show every N-th tick.", range=(1, 100_000))
    crf: int = 23  # x264 quality (library only)


def _labels(root: Path, reader, k: int) -> list[str]:
    cols = reader.read_episode(k, [c for c in (OPERATOR, PHASE) if c in reader.info.features])
    vocab = read_vocab(root) or {}
    n = reader.episode(k)["length"]
    ops = cols.get(OPERATOR, np.full((n, 1), -1)).reshape(-1)
    phs = cols.get(PHASE, np.full((n, 1), -1)).reshape(-1)

    def name(names, i):
        return names[i] if 0 <= i < len(names) else "-"

    ops_, phases = vocab.get("operators", []), vocab.get("phases", [])
    return [f"{name(ops_, int(o))} {name(phases, int(p))}" for o, p in zip(ops, phs, strict=True)]


def _depth_rgb(d: np.ndarray) -> np.ndarray:
    d = np.asarray(d, np.float64)
    if d.ndim == 3:
        d = d[..., 0]
    finite = np.isfinite(d)
    # percentiles, not min/max: a far wall or the sky would squash the scene into one grey
    lo, hi = np.percentile(d[finite], [1, 99]) if finite.any() else (0.0, 1.0)
    g = np.where(finite, 1.0 - np.clip((d - lo) / max(hi - lo, 1e-9), 0.0, 1.0), 0.0)
    return np.repeat((g * 255).astype(np.uint8)[..., None], 3, axis=2)


class _Frames:
    """Frames per (kind, camera) of one episode, rendered or decoded."""

    def __init__(self, root: Path, reader, k: int, s: TileSettings):
        self.root, self.reader, self.k, self.s = root, reader, k, s
        videos = sorted(camera_of(f) for f, spec in reader.info.features.items()
                        if f.startswith(IMAGES_PREFIX) and spec.dtype == "video")
        self.from_video = bool(videos)
        if self.from_video:
            streams = {}
            for v in videos:
                kind = "depth" if v.endswith("_depth") else "segmentation" if v.endswith("_segmentation") else "rgb"
                cam = v.removesuffix("_depth").removesuffix("_segmentation")
                streams[(kind, cam)] = image_key(v)
            cams = sorted({c for _, c in streams})
        else:
            self.scene = episode_scene(root, k)
            cams = sorted(self.scene.cameras, key=self.scene.cameras.get)
            streams = {(kind, c): None for kind in KINDS for c in cams}
        cams = [c for c in cams if not s.cameras or c in s.cameras]
        missing = sorted(set(s.cameras) - set(cams))
        if missing or not cams:
            raise VizError(f"{root} episode {k}: cameras {missing or list(s.cameras)} not available; it has "
                           f"{sorted({c for _, c in streams})}")
        self.cams = cams
        self.kinds = [kind for kind in s.kinds if any((kind, c) in streams for c in cams)]
        self.streams = streams

    def __iter__(self):
        n = self.reader.episode(self.k)["length"]
        ticks = range(0, n, self.s.stride)
        if self.from_video:
            decoded = {key: self.reader.read_video(self.k, v, list(ticks)) for key, v in self.streams.items()}
            for j, t in enumerate(ticks):
                yield t, {key: (_depth_rgb(f[j]) if key[0] == "depth" else f[j]) for key, f in decoded.items()}
            return

        palette = np.array([segmentation_colour(b) for b in range(-1, self.scene.model.nbody)], np.uint8)
        with CameraRig(self.scene.model, self.scene.cameras, width=self.s.width, height=self.s.height) as rig:
            for t, scene in enumerate(replay_states(self.root, self.k, self.scene)):
                if t % self.s.stride:
                    continue
                out = {}
                for c in self.cams:
                    if "rgb" in self.kinds:
                        out[("rgb", c)] = rig.rgb(scene.data, c)
                    if "depth" in self.kinds:
                        out[("depth", c)] = _depth_rgb(rig.depth(scene.data, c))
                    if "segmentation" in self.kinds:
                        out[("segmentation", c)] = palette[rig.segmentation(scene.data, c) + 1]
                yield t, out


def tile(frames: dict, kinds: Sequence[str], cams: Sequence[str]) -> np.ndarray:
    """One (rows*H, cols*W, 3) image; a missing stream is black."""
    h, w = next(iter(frames.values())).shape[:2]
    out = np.zeros((len(kinds) * h, len(cams) * w, 3), np.uint8)
    for r, kind in enumerate(kinds):
        for c, cam in enumerate(cams):
            f = frames.get((kind, cam))
            if f is not None:
                out[r * h:(r + 1) * h, c * w:(c + 1) * w] = f[:h, :w, :3]
    return out


def write_tiles(root: str | Path, out: str | Path, episodes: list[int] | None = None,
                settings: TileSettings = TileSettings(),
                progress: Progress | None = None) -> list[Path]:
    """One MP4 per episode in OUT (`episode_XXXXXX.mp4`); returns the files. `progress` takes a
    "viz" episode event after each episode."""
    root, out = Path(root), Path(out)
    reader = open_dataset(root)
    indices = reader.episode_indices if episodes is None else list(episodes)
    unknown = sorted(set(indices) - set(reader.episode_indices))
    if unknown:
        raise VizError(f"{root}: no episodes {unknown}; it has 0..{reader.num_episodes - 1}")
    bad = sorted(set(settings.kinds) - set(KINDS))
    if bad or settings.stride < 1 or settings.width % 2 or settings.height % 2:
        raise VizError(f"viz settings: kinds {bad} not in {KINDS}, or stride {settings.stride} < 1, or odd size "
                       f"{settings.width}x{settings.height}")
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    files = []
    try:
        for k in indices:
            files.append(_write_episode(root, reader, k, settings, out / f"episode_{k:06d}.mp4"))
            if progress is not None:
                progress(ProgressEvent("viz", "episode", f"episode {k}", len(files), len(indices)))
    except BaseException:
        if made and not any(out.iterdir()):
            out.rmdir()  # a refused or failed run leaves no empty output behind
        raise
    return files


def _write_episode(root: Path, reader, k: int, settings: TileSettings, path: Path) -> Path:
    """Episode `k` tiled into `path`, written under a temporary name and renamed when complete."""
    frames = _Frames(root, reader, k, settings)
    labels = _labels(root, reader, k)
    partial = path.with_name(path.name + ".partial")
    try:
        with av.open(str(partial), "w", format="mp4") as container:
            stream = None
            for t, f in frames:
                img = tile(f, frames.kinds, frames.cams)
                if img.shape[0] % 2 or img.shape[1] % 2:
                    img = img[: img.shape[0] // 2 * 2, : img.shape[1] // 2 * 2]
                burn_text(img, f"EP {k} T {t} {labels[t]}", 2, 2, scale=1 if img.shape[1] < 400 else 2)
                if stream is None:
                    stream = container.add_stream("libx264", rate=max(1, round(reader.info.fps / settings.stride)))
                    stream.width, stream.height, stream.pix_fmt = img.shape[1], img.shape[0], "yuv420p"
                    stream.options = {"crf": str(settings.crf)}
                for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                    container.mux(packet)
            if stream is not None:
                for packet in stream.encode():
                    container.mux(packet)
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path
