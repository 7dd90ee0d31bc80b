"""Merge several v3 datasets into a new one.

Episodes, frames and tasks are re-indexed; data is copied; camera streams are copied
packet for packet when their encoder settings agree (and re-encoded with the first
source's settings only when they do not); statistics are recomputed exactly; the
result is checked (episode boundaries, video spans) before merge returns.
`DatasetMerger` takes the sources one at a time (a run merges the shards that are
final while others are still being made).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.dataset.keys import HISTOGRAM_PREFIX, episode_extras
from demoforge.dataset.check import check_dataset
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, INFO_PATH, DatasetInfo, Feature
from demoforge.dataset.reader import DatasetReader, open_dataset
from demoforge.dataset.remux import EncodedVideo
from demoforge.dataset.video import VideoSettings
from demoforge.dataset.locks import STAGING_DIR, lock_staging
from demoforge.dataset.writer import DatasetWriter
from demoforge.errors import DatasetError, listing
from demoforge.dataset.guard import guard_output_dir

# Settings that must agree for packets to be copied into one stream.
_STREAM_KEYS = ("video.codec", "video.pix_fmt", "video.height", "video.width", "video.g", "video.crf", "video.preset")


def merge_datasets(
    sources: Sequence[str | Path], out: str | Path, *, data_file_size_mb: float | None = None,
    video_file_size_mb: float | None = None, video_file_duration_s: float | None = None,
    chunks_size: int | None = None, on_episode: Callable[[int, int], None] | None = None,
) -> DatasetInfo:
    """Merge `sources` (in order) into the new root `out`; returns the merged info.

    Caps default to the first source's. `on_episode(done, total)` reports progress. Every
    source is checked against the first before anything is written."""
    if not sources:
        raise DatasetError("merge: no source datasets given")
    out = Path(out)
    guard_output_dir(out, sources, what="merge output", error=DatasetError)
    readers = [open_dataset(s) for s in sources]
    _check_compatible(readers, _user_features(readers[0]))
    total = sum(r.num_episodes for r in readers)
    partial = out.parent / f".{out.name}.merge-partial"  # renamed to `out` once verified
    remove_stale(partial)
    merger = DatasetMerger(partial, data_file_size_mb=data_file_size_mb, video_file_size_mb=video_file_size_mb,
                           video_file_duration_s=video_file_duration_s, chunks_size=chunks_size,
                           on_episode=None if on_episode is None else (lambda done: on_episode(done, total)))
    try:
        with merger:
            for reader in readers:
                merger.add(reader)
        if out.exists():
            out.rmdir()  # empty (checked above)
        partial.replace(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # a failed merge leaves nothing; rerun the same command
        raise
    return merger.info


def remove_stale(partial: Path) -> None:
    """Remove `partial`, a temporary root left by a killed run, unless a live writer holds it."""
    staging = partial / STAGING_DIR
    if staging.is_dir():
        os.close(lock_staging(staging))  # DatasetLockedError while another run writes it
    if partial.exists():
        shutil.rmtree(partial)


class DatasetMerger:
    """A merge fed one source at a time, so the sources that are ready can be merged while
    later ones are still being made (`merge_datasets` is this with every source at once):

        with DatasetMerger(out) as merger:   # finishes (and verifies) on a clean exit
            merger.add("shard-0")            # each source is checked against the first
            merger.add("shard-1")
        merger.info

    The bytes depend only on the sources and their order. On an exception the partial root is
    left as it is (write it again into a new root)."""

    def __init__(self, out: str | Path, *, data_file_size_mb: float | None = None,
                 video_file_size_mb: float | None = None, video_file_duration_s: float | None = None,
                 chunks_size: int | None = None, on_episode: Callable[[int], None] | None = None):
        self.out = Path(out)
        self._caps = {"data_file_size_mb": data_file_size_mb, "video_file_size_mb": video_file_size_mb,
                      "chunks_size": chunks_size}
        self._duration = video_file_duration_s
        self._on_episode = on_episode
        self._readers: list[DatasetReader] = []
        self._copied: list[dict[str, bool]] = []  # per source: camera -> packets copied
        self._mapping: list[dict] = []
        self._writer: DatasetWriter | None = None
        self._user: dict[str, Feature] = {}
        self.info: DatasetInfo | None = None  # the merged info, once finished

    def __enter__(self) -> "DatasetMerger":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finish()
        elif self._writer is not None:
            self._writer.__exit__(exc_type, exc, tb)  # releases the root; nothing is finalized

    def add(self, source: str | Path | DatasetReader) -> None:
        """Append every episode of `source` (a root or an open reader)."""
        reader = source if isinstance(source, DatasetReader) else open_dataset(source)
        if self._writer is None:
            self._start(reader)
        else:
            _check_compatible([self._readers[0], reader], self._user)
        s = len(self._readers)
        copy = {k: _stream_settings(reader.info.features[k]) == _stream_settings(f)
                for k, f in self._user.items() if f.dtype == "video"}
        self._readers.append(reader)
        self._copied.append(copy)
        for i in reader.episode_indices:
            row = reader.episode(i)
            cols, encoded = _episode_payload(reader, i, row, self._user, copy)
            tasks = row["tasks"]
            if len(tasks) != 1:
                raise DatasetError(f"{reader.root}: episode {i} has tasks {tasks}; merge supports one task per episode")
            extra = episode_extras(row)
            new = self._writer.add_episode(cols, task=tasks[0], extra=extra, encoded=encoded)
            self._mapping.append({"source": s, "episode_index": i, "merged_episode_index": new})
            if self._on_episode:
                self._on_episode(len(self._mapping))

    def finish(self, *, threads: int = 1) -> DatasetInfo:
        """Write the merged root's files, verify it, and return its info. Idempotent.
        `threads`: see DatasetWriter.finalize."""
        if self.info is not None:
            return self.info
        if self._writer is None:
            raise DatasetError(f"{self.out}: merge: no source datasets given")
        self._writer.write_meta_file("merge.json", {
            "sources": [{"root": str(Path(r.root).resolve()), "info_sha256": _sha256(r.root / INFO_PATH),
                         "episodes": r.num_episodes, "videos_copied": self._copied[s]}
                        for s, r in enumerate(self._readers)],
            "episodes": self._mapping,
        })
        self._writer.finalize(threads=threads)
        merged = open_dataset(self.out)
        _verify(self._readers, merged, self._mapping)
        self.info = merged.info
        return self.info

    def _start(self, first: DatasetReader) -> None:
        self._user = _user_features(first)
        kwargs: dict[str, Any] = {
            "data_file_size_mb": self._caps["data_file_size_mb"] or first.info.data_files_size_in_mb,
            "video_file_size_mb": self._caps["video_file_size_mb"] or first.info.video_files_size_in_mb,
            "chunks_size": self._caps["chunks_size"] or first.info.chunks_size,
        }
        if self._duration is not None:
            kwargs["video_file_duration_s"] = self._duration
        self._writer = DatasetWriter.create(self.out, fps=first.info.fps, features=self._user,
                                            robot_type=first.info.robot_type, video=_reencode_settings(self._user),
                                            data_as_added=True, **kwargs)


def _user_features(reader: DatasetReader) -> dict[str, Feature]:
    return {k: f for k, f in reader.info.features.items() if k not in INDEX_FEATURE_NAMES}


def _check_compatible(readers: list[DatasetReader], user: dict[str, Feature]) -> None:
    first = readers[0]
    problems = []
    for r in readers[1:]:
        if r.info.fps != first.info.fps:
            problems.append(f"{r.root}: fps {r.info.fps} but {first.root} has {first.info.fps}")
        theirs = {k: f for k, f in r.info.features.items() if k not in INDEX_FEATURE_NAMES}
        if set(theirs) != set(user):
            problems.append(f"{r.root}: features {sorted(theirs)} but {first.root} has {sorted(user)}")
            continue
        for k, f in user.items():
            g = theirs[k]
            if (g.dtype, tuple(g.shape)) != (f.dtype, tuple(f.shape)):
                problems.append(f"{r.root}: feature {k!r} is {g.dtype}{list(g.shape)} but {f.dtype}{list(f.shape)} "
                                f"in {first.root}")
            elif g.names != f.names and f.dtype != "video":
                problems.append(f"{r.root}: feature {k!r} names {g.names} differ from {f.names} in {first.root}")
    if problems:
        raise DatasetError("merge: sources do not agree:" + listing(problems))


def _stream_settings(ft: Feature) -> tuple:
    info = ft.info or {}
    return tuple(info.get(k) for k in _STREAM_KEYS)


def _reencode_settings(user: dict[str, Feature]) -> VideoSettings:
    """Settings for sources whose streams differ from the first's (only then is anything encoded)."""
    for ft in user.values():
        if ft.dtype == "video":
            info = ft.info or {}
            codec = info.get("video.codec", "h264")
            default = VideoSettings.lerobot_default() if codec in ("av1", "libsvtav1") else VideoSettings()
            return VideoSettings(codec=codec, crf=info.get("video.crf") or default.crf,
                                 g=info.get("video.g") or default.gop(int(info.get("video.fps", 30))),
                                 pix_fmt=info.get("video.pix_fmt", "yuv420p"),
                                 preset=info.get("video.preset", default.preset))
    return VideoSettings()


def _episode_payload(reader: DatasetReader, i: int, row: dict, user: dict[str, Feature], copy: dict[str, bool]):
    data_keys = [k for k, f in user.items() if f.dtype != "video"]
    cols: dict[str, np.ndarray] = reader.read_episode(i, data_keys) if data_keys else {}
    encoded = {}
    for key in reader.info.video_keys:
        if copy[key]:
            hist = row.get(HISTOGRAM_PREFIX + key)
            encoded[key] = EncodedVideo(
                path=reader.video_path(i, key), from_timestamp=row[f"videos/{key}/from_timestamp"],
                to_timestamp=row[f"videos/{key}/to_timestamp"], histogram=None if hist is None else np.asarray(hist),
            )
        else:
            cols[key] = reader.read_video(i, key)
    return cols, encoded


def _verify(readers: list[DatasetReader], merged: DatasetReader, mapping: list[dict]) -> None:
    problems = [str(p) for p in check_dataset(merged.root)]
    for m in mapping:
        src = readers[m["source"]].episode(m["episode_index"])
        dst = merged.episode(m["merged_episode_index"])
        if (src["length"], src["tasks"]) != (dst["length"], dst["tasks"]):
            problems.append(f"merged episode {m['merged_episode_index']}: length/tasks {dst['length']}/{dst['tasks']} "
                            f"differ from source {m['source']} episode {m['episode_index']}")
    if problems:
        raise DatasetError(f"{merged.root}: merged dataset failed verification:" + listing(problems))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
