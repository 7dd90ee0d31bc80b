"""DatasetWriter: streaming, crash-safe writing of LeRobot v3.0 datasets.

While a dataset is being written, each finished episode lives in the root's staging
folder as its own small parquet segment, one mp4 segment per camera and a JSON record,
all fsynced and renamed into place before `add_episode` returns: a killed process loses
at most the episode in progress. `finalize()` joins the segments into lerobot's files
(one parquet row group per episode, mp4s joined by remuxing) and writes the metadata.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.dataset import assemble
from demoforge.dataset.camera_encoding import CameraEncoding
from demoforge.dataset.datafiles import DataFiles, FileCursor
from demoforge.dataset.layout import (
    DEFAULT_CHUNKS_SIZE, DEFAULT_DATA_FILE_SIZE_MB, DEFAULT_VIDEO_FILE_DURATION_S,
    DEFAULT_VIDEO_FILE_SIZE_MB, DEMOFORGE_META_DIR, INFO_PATH, Feature, chunk_file,
    write_json_atomic,
)
from demoforge.dataset.stats import numeric_stats
from demoforge.dataset.tables import data_schema, data_table, fsync_file, write_parquet_atomic
from demoforge.dataset.validate import check_columns, check_extra, check_features, check_task
from demoforge.dataset.remux import EncodedVideo, extract_segment
from demoforge.dataset.video import VideoSettings
from demoforge.dataset.writer_config import WriterConfig
from demoforge.dataset.locks import STAGING_DIR, create_staging, lock_staging, recover_staging
from demoforge.errors import DatasetError, EmptyDatasetError

_MB = 1024 * 1024


class DatasetWriter:
    """Writes one LeRobot v3.0 dataset. Use `create` or `resume`, as a context manager."""

    def __init__(self, root: Path, config: WriterConfig, lock_fd: int):
        self.root = root
        self.config = config
        self._lock_fd = lock_fd
        self._features = config.all_features()
        self._user = config.features
        self._video_keys = [k for k, f in self._user.items() if f.dtype == "video"]
        self._schema = data_schema(self._features)
        self._records: list[dict[str, Any]] = []  # per episode: placement only (see _remember)
        self._cams = CameraEncoding(root / STAGING_DIR / "videos", self._user, self._features,
                                    video=config.video, fps=config.fps)
        self._video_hists = {k: self._cams.empty_hist(k) for k in self._video_keys}  # dataset-wide pixels
        self._extra_keys: set[str] = set()
        self._tasks: dict[str, int] = {}
        self._data_cursor = FileCursor()
        self._video_cursors = {k: FileCursor() for k in self._video_keys}
        self._frame_buffer: dict[str, list[np.ndarray]] | None = None  # non-camera columns, frame by frame
        self._frame_task: str | None = None
        self._frame_n = 0  # frames in the episode being recorded frame by frame
        self._finalized = False
        self._data_files: DataFiles | None = None  # data files written as episodes are added (create's option)
        self._made_root = False  # create made the root folder: discard removes it again
        self._discarded = False

    # -- opening -----------------------------------------------------------------------
    @classmethod
    def create(
        cls, root: str | Path, *, fps: int, features: Mapping[str, Feature], robot_type: str | None = None,
        video: VideoSettings | None = None, data_file_size_mb: float = DEFAULT_DATA_FILE_SIZE_MB,
        video_file_size_mb: float = DEFAULT_VIDEO_FILE_SIZE_MB,
        video_file_duration_s: float = DEFAULT_VIDEO_FILE_DURATION_S, chunks_size: int = DEFAULT_CHUNKS_SIZE,
        data_as_added: bool = False,
    ) -> "DatasetWriter":
        """Start a new dataset in `root`, which must not exist or be empty.

        `data_as_added`: also write each episode's rows into its data file as it is added, so
        finalize only closes the files instead of copying every staged episode (the same bytes).
        For writers that run in one go (a merge): a resumed writer copies from staging again."""
        root = Path(root)
        if not isinstance(fps, int) or fps <= 0:
            raise DatasetError(f"fps={fps!r} must be a positive integer [Hz]")
        if chunks_size < 1 or data_file_size_mb <= 0 or video_file_size_mb <= 0 or video_file_duration_s <= 0:
            raise DatasetError("chunks_size, data_file_size_mb, video_file_size_mb, video_file_duration_s must be > 0")
        check_features(features)
        config = WriterConfig(
            fps=fps, features=dict(features), robot_type=robot_type, video=video or VideoSettings(),
            data_file_size_mb=data_file_size_mb, video_file_size_mb=video_file_size_mb,
            video_file_duration_s=video_file_duration_s, chunks_size=chunks_size,
        )
        made_root = not root.exists()
        fd = create_staging(root, config.to_json(), folders=(
            "data", "episodes", *(f"videos/{k}" for k in config.features if config.features[k].dtype == "video")))
        writer = cls(root, config, fd)
        writer._made_root = made_root
        if data_as_added:
            writer._data_files = DataFiles(root, writer._schema)
        return writer

    @classmethod
    def resume(cls, root: str | Path) -> "DatasetWriter":
        """Reopen an interrupted dataset: finished episodes are kept, the partial one is dropped."""
        root = Path(root)
        staging = root / STAGING_DIR
        if not staging.is_dir():
            if (root / INFO_PATH).is_file():
                raise DatasetError(f"{root}: already finalized; write a new root and merge the two to extend it")
            raise DatasetError(f"{root}: no interrupted demoforge dataset here to resume (no {STAGING_DIR}/)")
        fd = lock_staging(staging)
        try:
            config = WriterConfig.from_json(json.loads((staging / "config.json").read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            os.close(fd)
            raise DatasetError(f"{staging / 'config.json'}: unreadable ({exc}); the run cannot be resumed") from exc
        writer = cls(root, config, fd)
        for record in recover_staging(staging):
            writer._remember(record)
        return writer

    def __enter__(self) -> "DatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finalize()
        else:
            self._abort_frames()
            if self._data_files is not None:
                self._data_files.abort()
            self._unlock()  # finished episodes stay in staging: DatasetWriter.resume(root) continues

    # -- writing -----------------------------------------------------------------------
    @property
    def num_episodes(self) -> int:
        return len(self._records)

    def episode_extras(self) -> Iterator[dict[str, Any]]:
        """The `extra` records of the episodes written so far, in order (read back from staging,
        so a resumed writer has them too)."""
        self._check_open()
        for r in self._records:
            path = self.root / STAGING_DIR / "episodes" / f"{r['episode_index']:06d}.json"
            yield json.loads(path.read_text())["extra"]

    def add_episode(
        self, columns: Mapping[str, np.ndarray], *, task: str, extra: Mapping[str, Any] | None = None,
        encoded: Mapping[str, EncodedVideo] | None = None,
    ) -> int:
        """Write one whole episode (arrays with a leading time axis); durable on return.

        Cameras given in `encoded` are copied from an existing mp4 without re-encoding
        (merge does this); the others are encoded from their frames in `columns`.
        Returns the episode index."""
        self._check_open()
        if self._frame_buffer is not None:
            raise DatasetError("an episode is being recorded frame by frame; call save_episode() first")
        episode = len(self._records)
        check_task(task, episode=episode)
        encoded = dict(encoded or {})
        unknown = sorted(set(encoded) - set(self._video_keys))
        if unknown:
            raise DatasetError(f"episode {episode}: encoded videos {unknown} are not video features {self._video_keys}")
        expected = {k: f for k, f in self._user.items() if k not in encoded}
        cols, length = check_columns(columns, expected, episode=episode)
        extra = check_extra(extra, episode)
        hists = {}
        for key, video in sorted(encoded.items()):
            seg = self._cams.segment_path(episode, key)
            try:
                count, hists[key] = extract_segment(video, seg, fps=self.config.fps, depth=key in self._cams.depth)
            except BaseException:
                seg.unlink(missing_ok=True)
                raise
            if count != length:
                seg.unlink(missing_ok=True)
                raise DatasetError(
                    f"episode {episode}: {video.path} holds {count} frames of {key!r} between "
                    f"{video.from_timestamp:.4f} and {video.to_timestamp:.4f} s, but the episode has {length}"
                )
            fsync_file(seg)
        # SVT-AV1 and x264 cameras are encoded on threads of their own (the encoders and NumPy
        # release the GIL) and the data rows written on another, so the largest camera does not
        # hold up the episode and the disk's sync latency overlaps the encoding; other cameras
        # (CameraEncoding.threaded) are encoded here, one after the other.
        depth = self._cams.depth
        to_encode = [k for k in self._video_keys if k not in encoded]
        frames = {k: depth[k].quantize(cols[k]) if k in depth else cols[k] for k in to_encode}
        # the largest camera first: it is the episode's critical path
        threaded = sorted((k for k in to_encode if self._cams.threaded(k)), key=lambda k: -np.prod(self._user[k].shape))
        task_index, start = self._next_indices(task)
        if not threaded:  # nothing to overlap
            hists.update({k: self._cams.encode_episode(episode, k, frames[k]) for k in to_encode})
            return self._commit(episode, length, task, extra, hists,
                                self._stage_data(episode, cols, length, task_index, start))
        with ThreadPoolExecutor(max_workers=1 + len(threaded), thread_name_prefix="episode") as pool:
            staged = pool.submit(self._stage_data, episode, cols, length, task_index, start)
            segments = {k: pool.submit(self._cams.encode_episode, episode, k, frames[k]) for k in threaded}
            hists.update({k: self._cams.encode_episode(episode, k, frames[k]) for k in to_encode if k not in segments})
        hists.update({k: job.result() for k, job in segments.items()})
        return self._commit(episode, length, task, extra, hists, staged.result())

    def add_frame(self, frame: Mapping[str, np.ndarray], *, task: str) -> None:
        """Append one frame to the episode in progress; camera frames are encoded at once."""
        self._check_open()
        episode = len(self._records)
        check_task(task, episode=episode)
        if self._frame_buffer is None:
            self._frame_buffer = {k: [] for k in self._user if k not in self._video_keys}
            self._frame_task = task
        elif task != self._frame_task:
            raise DatasetError(
                f"episode {episode}: task changed within the episode ({self._frame_task!r} -> {task!r}); "
                "call save_episode() before starting the next task"
            )
        cols, _ = check_columns(frame, self._user, episode=episode, frame=self._frame_n)
        self._cams.add_frame(episode, self._frame_n, cols)
        for key, values in self._frame_buffer.items():
            value = cols[key][0]
            values.append(value.copy() if isinstance(value, np.ndarray) else value)  # callers may reuse buffers
        self._frame_n += 1

    def save_episode(self, *, extra: Mapping[str, Any] | None = None) -> int:
        """Close the episode recorded with add_frame; durable on return. Returns its index."""
        self._check_open()
        episode = len(self._records)
        if self._frame_buffer is None:
            raise DatasetError(f"episode {episode}: no frames added; call add_frame() first")
        extra = check_extra(extra, episode)
        cols = {k: np.stack(v) for k, v in self._frame_buffer.items()}
        length = self._frame_n
        task = self._frame_task
        self._cams.flush(length)
        try:
            self._cams.finish()  # each lane flushes and syncs its camera's segment while the rows are written here
            staged = self._stage_data(episode, cols, length, *self._next_indices(task))
            hists = self._cams.histograms()
        except BaseException:
            self._abort_frames()
            raise
        self._end_frames()
        return self._commit(episode, length, task, extra, hists, staged)

    def clear_episode(self) -> None:
        """Drop the frames of the episode in progress."""
        self._abort_frames()

    def write_meta_file(self, name: str, obj: Any) -> Path:
        """Write `obj` (JSON-able, str or bytes) to meta/demoforge/<name>, atomically."""
        if "/" in name or name.startswith("."):
            raise DatasetError(f"meta file name {name!r} must be a plain file name such as 'provenance.json'")
        path = self.root / DEMOFORGE_META_DIR / name
        if isinstance(obj, (str, bytes)):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(name + ".tmp")
            tmp.write_bytes(obj.encode() if isinstance(obj, str) else obj)
            tmp.replace(path)
        else:
            write_json_atomic(path, obj)
        return path

    def finalize(self, *, threads: int = 1) -> None:
        """Join the segments into the dataset's files and write its metadata. Idempotent.
        `threads` > 1 computes the dataset statistics of several features at once (same values)."""
        if self._finalized or self._discarded:
            return
        if self._frame_buffer is not None:
            raise DatasetError("an episode is being recorded frame by frame; call save_episode() or clear_episode()")
        if not self._records:  # info.json without meta/episodes: not a dataset lerobot (or the doctor) reads
            self.discard()
            raise EmptyDatasetError(
                f"{self.root}: no episode was added, and a dataset without episodes is no LeRobot dataset (its "
                "meta/episodes would be missing); add an episode before finalizing, or open no writer when there "
                "is nothing to write")
        try:
            written = self._data_files.close() if self._data_files is not None else frozenset()
            assemble.assemble(self.root, self.root / STAGING_DIR, self.config, self._features, self._schema,
                              self._records, sorted(self._tasks, key=self._tasks.get),
                              video_hists=self._video_hists, extra_keys=sorted(self._extra_keys), threads=threads,
                              written=written)
        except BaseException:  # a full disk: the staging stays, unlocked, for the next run to resume or restart
            self._unlock()
            raise
        shutil.rmtree(self.root / STAGING_DIR)
        self._unlock()
        self._finalized = True

    def discard(self) -> None:
        """Remove what this writer put under its root and release it, for a caller left with nothing
        to keep (no episode): no staging, meta file or root it made stays to look like a dataset or
        to block the next writer there. A later `finalize` does nothing."""
        self._abort_frames()
        if self._data_files is not None:
            self._data_files.abort()
            shutil.rmtree(self.root / "data", ignore_errors=True)  # create began with an empty root: ours
        shutil.rmtree(self.root / STAGING_DIR, ignore_errors=True)
        meta = self.root / DEMOFORGE_META_DIR
        shutil.rmtree(meta, ignore_errors=True)  # write_meta_file's
        for folder in (meta.parent, *((self.root,) if self._made_root else ())):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        self._unlock()
        self._discarded = True

    # -- internals ---------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._finalized:
            raise DatasetError(f"{self.root}: the writer is finalized; open a new root to write more")
        if self._discarded:
            raise DatasetError(f"{self.root}: the writer was discarded (nothing of it is kept); create a new one")

    def _abort_frames(self) -> None:
        self._cams.abort()
        self._end_frames()

    def _end_frames(self) -> None:
        self._cams.end()
        self._frame_buffer, self._frame_task, self._frame_n = None, None, 0

    def _next_indices(self, task: str) -> tuple[int, int]:
        """The next episode's task index and the dataset index of its first frame."""
        return self._tasks.get(task, len(self._tasks)), self._records[-1]["dataset_to_index"] if self._records else 0

    def _stage_data(self, episode: int, cols: dict[str, np.ndarray], length: int, task_index: int,
                    start: int) -> tuple[Any, int, dict[str, Any]]:
        """Write the episode's rows to staging, synced; returns the table, its file size and the
        columns' statistics. Touches no writer state, so it runs beside the encoders."""
        staging = self.root / STAGING_DIR
        frame_index = np.arange(length, dtype=np.int64)
        cols = dict(cols)
        cols.update({
            "timestamp": (frame_index / self.config.fps).astype(np.float32),
            "frame_index": frame_index,
            "episode_index": np.full(length, episode, np.int64),
            "index": np.arange(start, start + length, dtype=np.int64),
            "task_index": np.full(length, task_index, np.int64),
        })
        data_path = staging / "data" / f"{episode:06d}.parquet"
        table = data_table(cols, self._schema)
        write_parquet_atomic(data_path, [table])
        fsync_file(staging / "data")
        stats = {k: numeric_stats(cols[k]) for k in self._features
                 if k not in self._video_keys and self._features[k].dtype != "string"}  # texts: no stats
        return table, data_path.stat().st_size, stats

    def _commit(self, episode: int, length: int, task: str, extra: dict[str, Any], hists: dict[str, np.ndarray],
                staged: tuple[Any, int, dict[str, Any]]) -> int:
        """Write the episode's record (its segments and rows are staged and synced): the episode is durable."""
        staging = self.root / STAGING_DIR
        table, data_bytes, stats = staged
        task_index, start = self._next_indices(task)
        videos = {}
        for key in self._video_keys:
            seg = self._cams.segment_path(episode, key)
            videos[key] = {"bytes": seg.stat().st_size, "histogram": hists[key].tolist()}
        record = {
            "episode_index": episode, "task": task, "task_index": task_index, "length": length,
            "dataset_from_index": start, "dataset_to_index": start + length, "data_bytes": data_bytes,
            "stats": stats, "videos": videos, "extra": extra,
        }
        write_json_atomic(staging / "episodes" / f"{episode:06d}.json", record, indent=None)
        fsync_file(staging / "episodes")
        self._remember(record)
        if self._data_files is not None:
            self._data_files.add((record["data/chunk_index"], record["data/file_index"]), table)
        return episode

    def _remember(self, record: dict[str, Any]) -> None:
        """Place a committed episode in the output files (deterministic from the records alone)."""
        cfg = self.config
        self._tasks.setdefault(record["task"], record["task_index"])
        n = self._data_cursor.place(record["data_bytes"], record["length"], max_bytes=cfg.data_file_size_mb * _MB)
        record["data/chunk_index"], record["data/file_index"] = chunk_file(n, cfg.chunks_size)
        for key in self._video_keys:
            cursor = self._video_cursors[key]
            n = cursor.place(record["videos"][key]["bytes"], record["length"], max_bytes=cfg.video_file_size_mb * _MB,
                             max_frames=cfg.video_file_duration_s * cfg.fps)
            chunk, file = chunk_file(n, cfg.chunks_size)
            first = cursor.frames - record["length"]
            record["videos"][key].update({
                "chunk_index": chunk, "file_index": file,
                "from_timestamp": first / cfg.fps, "to_timestamp": cursor.frames / cfg.fps,
            })
            self._video_hists[key] += np.asarray(record["videos"][key]["histogram"], dtype=np.int64)
        self._extra_keys.update(record["extra"])
        # Keep only what placement needs: stats, histograms and extras are re-read from
        # staging at finalize, so memory does not grow with the episode count.
        slim = {k: v for k, v in record.items() if k not in ("stats", "extra", "videos")}
        slim["videos"] = {k: {n: v for n, v in vid.items() if n != "histogram"} for k, vid in record["videos"].items()}
        self._records.append(slim)

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
