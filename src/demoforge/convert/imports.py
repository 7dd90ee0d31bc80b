"""Import: the episodes of any registered reader (`convert.readers`) written as a LeRobot v3.0 dataset.

Bake reads LeRobot v3.0 in place; another format (robomimic HDF5, LeRobot v2.1, a user's own) is
imported first into a folder beside the bake's output (`.OUT.bake-imports`), read from there and
the folder removed once the bake is published. The imported dataset holds, per tick,
`observation.state` = [arm q, gripper] (joint names, then `gripper`), the recorded `action`, the
source's other columns (`Episode.columns`) and its cameras: frames given as arrays are encoded
with the bake's video settings, videos given as mp4 references are copied packet for packet.
meta/demoforge/import.json records the reader, the source and what its gripper value means.
Same source, same settings: same bytes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.convert.episode import BakeError, Episode
from demoforge.convert.readers import Reader, reader_for
from demoforge.dataset.keys import ACTION, STATE
from demoforge.dataset.layout import Feature, write_json_atomic
from demoforge.dataset.remux import EncodedVideo
from demoforge.dataset.video import VideoSettings
from demoforge.dataset.writer import DatasetWriter

IMPORT_PATH = "meta/demoforge/import.json"
GRIPPER = "gripper"  # the state's last name in an imported dataset


def read_import(root: str | Path) -> dict[str, Any] | None:
    """The import record of a dataset written by `import_source`, else None."""
    path = Path(root) / IMPORT_PATH
    return json.loads(path.read_text()) if path.is_file() else None


def source_digest(path: Path) -> str:
    """sha256 of a source file's bytes, or of a folder's file names, sizes and bytes of its JSON and
    parquet metadata (its videos by name and size): enough to tell a changed source from the same."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        h.update(f"{p.relative_to(path) if p != path else p.name}|{p.stat().st_size}|".encode())
        if p.suffix != ".mp4":
            with p.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def _features(ep: Episode) -> dict[str, Feature]:
    feats = {STATE: Feature("float32", (ep.n_arm + 1,), [*ep.joint_names, GRIPPER])}
    if ep.action is not None:
        feats[ACTION] = Feature("float32", (ep.action.shape[1],), list(ep.action_names))
    for key, values in sorted(ep.columns.items()):
        dtype = "bool" if values.dtype == bool else str(values.dtype)
        feats[key] = Feature(dtype, tuple(values.shape[1:]) or (1,))
    for key, frames in sorted(ep.frames.items()):
        feats[key] = Feature("video", tuple(frames.shape[1:]))
    for key, cam in sorted(ep.cameras.items()):
        feats[key] = Feature("video", tuple(cam.feature.shape), info=cam.feature.info)
    return feats


def _columns(ep: Episode) -> dict[str, np.ndarray]:
    cols = {STATE: np.concatenate([ep.q, ep.gripper[:, None]], axis=1).astype(np.float32)}
    if ep.action is not None:
        cols[ACTION] = ep.action.astype(np.float32)
    cols.update(ep.columns)
    cols.update(ep.frames)
    return cols


def import_source(source: str | Path, out: str | Path, *, reader: Reader | None = None,
                  video: VideoSettings = VideoSettings(), robot_type: str | None = None) -> Path:
    """Write the episodes `reader` (default: the one that detects `source`) yields as a new v3.0
    dataset at `out` (absent or empty); returns `out`."""
    source, out = Path(source), Path(out)
    reader = reader or reader_for(source)
    writer = None
    first: tuple[Episode, dict[str, Feature]] | None = None
    skipped: list[str] = []
    try:
        for ep in reader.episodes(source):
            feats = _features(ep)
            if first is None:
                first = (ep, feats)
                writer = DatasetWriter.create(out, fps=ep.fps, features=feats, robot_type=robot_type, video=video)
            elif ep.fps != first[0].fps or feats != first[1]:
                raise BakeError(f"{source}: episode {ep.index} has rate {ep.fps} Hz and columns {_shapes(feats)}, "
                                f"episode {first[0].index} {first[0].fps} Hz and {_shapes(first[1])}; every "
                                "episode of one source must have the same columns")
            encoded = {k: EncodedVideo(c.path, c.from_timestamp, c.to_timestamp, c.histogram)
                       for k, c in ep.cameras.items()}
            extra = dict(ep.extra)
            if ep.outcome is not None:
                extra["outcome"] = ep.outcome
            skipped += [k for k in extra.pop("not_read", []) if k not in skipped]
            writer.add_episode(_columns(ep), task=ep.task, extra=extra, encoded=encoded)
        if writer is None:
            raise BakeError(f"{source}: the {reader.name!r} reader found no episodes in it")
        writer.finalize()
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    ep0 = first[0]
    notes = [f"{source}: {', '.join(skipped)} fit no column of the import (not low-dimensional, not an RGB camera "
             "the reader takes) and are not read"] if skipped else []
    write_json_atomic(out / IMPORT_PATH, {
        "reader": reader.name, "source": str(source), "source_sha256": source_digest(source),
        "gripper": ep0.gripper_meaning, "notes": notes, "video": video.to_json(),
    })
    return out


def _shapes(feats: dict[str, Feature]) -> dict[str, list[int]]:
    return {k: list(f.shape) for k, f in feats.items()}


def imported_sources(sources: Iterable[str | Path], folder: Path, *, video: VideoSettings) -> list[Path]:
    """`sources` with each one that is not a LeRobot v3.0 dataset replaced by its import under
    `folder` (`<n>-<name>`); an import already there from the same source bytes and settings is reused."""
    out = []
    for n, src in enumerate(map(Path, sources)):
        try:
            reader = reader_for(src)
        except BakeError:
            if src.is_dir():  # a `generate` run folder, or a broken dataset: make_plan says which
                out.append(src)
                continue
            raise
        if reader.lerobot_v3:
            out.append(src)
            continue
        root = folder / f"{n}-{src.name}"
        done = read_import(root)
        if done is not None and done.get("source_sha256") == source_digest(src) and \
                done.get("video") == video.to_json() and done.get("reader") == reader.name:
            out.append(root)
            continue
        shutil.rmtree(root, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            out.append(import_source(src, root, reader=reader, video=video))
        except BaseException:  # a refused source leaves no folder behind
            shutil.rmtree(root, ignore_errors=True)
            if not any(folder.iterdir()):
                folder.rmdir()
            raise
    return out
