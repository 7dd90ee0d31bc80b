"""Read any LeRobot v3.0 dataset: ours, or one written by lerobot 0.4.4 / 0.6.1.

Metadata (info, tasks, the episodes table) is loaded once; an episode's data rows are
read from its own row groups only, and its video frames are decoded from its own span
of the mp4 that holds it.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from demoforge.dataset.depth import DepthCoding, is_depth
from demoforge.dataset import decode
from demoforge.dataset.layout import STATS_PATH, TASKS_PATH, DatasetInfo, read_info
from demoforge.errors import DatasetError

EPISODES_GLOB = "meta/episodes/chunk-*/file-*.parquet"
# lerobot 0.6.1 names the tasks index column `task`; 0.4.4 leaves pandas' default name.
TASK_COLUMN_NAMES = ("task", "__index_level_0__")


@contextmanager
def parquet_errors(path: Path) -> Iterator[None]:
    """pyarrow's decode errors as a DatasetError naming `path`: a damaged page raises a bare
    OSError ("Corrupt snappy compressed data") that names no file."""
    try:
        yield
    except (OSError, pa.ArrowException) as exc:
        raise DatasetError(f"{path}: unreadable parquet ({exc}); the file is damaged: restore it from the dataset's "
                           "source, or rewrite the dataset (`demoforge dataset check` lists every damaged file)"
                           ) from exc


def read_parquet(path: Path, **options) -> pa.Table:
    """`pq.read_table(path, **options)`, its decode errors naming `path`."""
    with parquet_errors(path):
        return pq.read_table(path, **options)


def read_tasks(root: str | Path) -> list[str]:
    """meta/tasks.parquet as a list of task strings ordered by task_index."""
    path = Path(root) / TASKS_PATH
    if not path.is_file():
        raise DatasetError(f"{path}: not found")
    table = read_parquet(path)
    names = table.column_names
    column = next((c for c in TASK_COLUMN_NAMES if c in names), None)
    if column is None:
        pandas_meta = json.loads((table.schema.metadata or {}).get(b"pandas", b"{}"))
        column = next((c for c in pandas_meta.get("index_columns", []) if isinstance(c, str)), None)
    if "task_index" not in names or column is None or column not in names:
        raise DatasetError(
            f"{path}: needs columns 'task_index' and one of {list(TASK_COLUMN_NAMES)}; has {names}"
        )
    order = np.asarray(table.column("task_index").to_numpy(zero_copy_only=False), dtype=np.int64)
    if not np.array_equal(np.sort(order), np.arange(order.size)):
        raise DatasetError(f"{path}: task_index must be 0..{order.size - 1} once each, got {order.tolist()}")
    tasks = table.column(column).to_pylist()
    by_index: list[str] = [""] * order.size
    for i, task in zip(order.tolist(), tasks):
        by_index[i] = task
    return by_index


def read_episodes_table(root: str | Path) -> pa.Table:
    """All meta/episodes files concatenated and sorted by episode_index."""
    root = Path(root)
    files = sorted(root.glob(EPISODES_GLOB))
    if not files:
        raise DatasetError(f"{root / 'meta/episodes'}: no episodes parquet files; was the dataset finalized?")
    tables = [read_parquet(f) for f in files]
    table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
    if "episode_index" not in table.column_names:
        raise DatasetError(f"{files[0]}: no 'episode_index' column; has {table.column_names}")
    return table.sort_by("episode_index")


class DatasetReader:
    """An open v3 dataset root; see `open_dataset`."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.info: DatasetInfo = read_info(self.root)
        self.tasks: list[str] = read_tasks(self.root)
        self._episodes = read_episodes_table(self.root)
        if "length" not in self._episodes.column_names:
            raise DatasetError(f"{self.root / 'meta/episodes'}: no 'length' column; has {self._episodes.column_names}")
        ids = self._episodes.column("episode_index").to_numpy()
        self._row_of = {int(e): r for r, e in enumerate(ids)}
        if len(self._row_of) != len(ids):
            raise DatasetError(f"{self.root / 'meta/episodes'}: episode_index values repeat")
        self._episode_ids = [int(e) for e in ids]

    def __repr__(self) -> str:
        return f"DatasetReader({str(self.root)!r}, episodes={self.num_episodes}, frames={self.num_frames})"

    @property
    def num_episodes(self) -> int:
        return len(self._episode_ids)

    @property
    def num_frames(self) -> int:
        return int(pc.sum(self._episodes.column("length")).as_py() or 0)

    @property
    def episode_indices(self) -> list[int]:
        return list(self._episode_ids)

    @property
    def episodes_table(self) -> pa.Table:
        """The whole meta/episodes table, one row per episode, sorted by episode_index."""
        return self._episodes

    def episode(self, i: int) -> dict[str, Any]:
        """Episode `i`'s row of meta/episodes, every column included."""
        return self._episodes.slice(self._row(i), 1).to_pylist()[0]

    def iter_episodes(self) -> Iterator[dict[str, Any]]:
        """Every episode's meta/episodes row, in episode_index order."""
        for batch in self._episodes.to_batches(max_chunksize=256):
            yield from batch.to_pylist()

    def data_path(self, i: int) -> Path:
        ep = self._meta(i, "data/chunk_index", "data/file_index")
        return self.root / self.info.data_path.format(chunk_index=ep[0], file_index=ep[1])

    def video_path(self, i: int, key: str) -> Path:
        self._check_video_key(key)
        ep = self._meta(i, f"videos/{key}/chunk_index", f"videos/{key}/file_index")
        return self.root / self.info.video_path.format(video_key=key, chunk_index=ep[0], file_index=ep[1])

    def read_episode(self, i: int, columns: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Episode `i`'s data columns as arrays with leading axis T.

        Features of shape (n,) come back as (T, n) and shape (1,) scalars as (T,), in
        the feature's dtype. Only the row groups that hold episode `i` are read.
        """
        path = self.data_path(i)
        length = self._meta(i, "length")[0]
        if not path.is_file():
            raise DatasetError(f"{path}: data file of episode {i} not found")
        with parquet_errors(path):
            pf = pq.ParquetFile(path)
        available = pf.schema_arrow.names
        if "episode_index" not in available:
            raise DatasetError(f"{path}: no 'episode_index' column; the file has {available}")
        wanted = list(columns) if columns is not None else [k for k in self.info.data_keys if k in available]
        unknown = [c for c in wanted if c not in available]
        if unknown:
            hint = [c for c in unknown if c in self.info.video_keys]
            extra = f"; {hint} are videos, read them with read_video" if hint else ""
            raise DatasetError(f"{path}: episode {i}: unknown columns {unknown}; the file has {available}{extra}")
        read_cols = list(dict.fromkeys([*wanted, "episode_index"]))
        groups = _row_groups_of(pf, i)
        with parquet_errors(path):
            table = pf.read_row_groups(groups, columns=read_cols) if groups else pf.schema_arrow.empty_table()
        table = table.filter(pc.equal(table.column("episode_index"), i))
        if table.num_rows != length:
            raise DatasetError(
                f"{path}: episode {i} has {table.num_rows} data rows but meta/episodes says length {length}; "
                "run `demoforge dataset check` on the root"
            )
        return {c: _to_numpy(table.column(c), self.info.features.get(c), path, c) for c in wanted}

    def read_video(self, i: int, key: str, frame_indices: Sequence[int] | None = None) -> np.ndarray:
        """Decoded RGB frames of episode `i`'s video `key`: uint8 (N, H, W, 3).

        `frame_indices` are frame numbers within the episode (0..T-1); all frames when None.
        """
        length = self._meta(i, "length")[0]
        if frame_indices is None:
            ks = np.arange(length)
        else:
            ks = np.asarray(frame_indices, dtype=np.int64).reshape(-1)
            bad = ks[(ks < 0) | (ks >= length)]
            if bad.size:
                raise DatasetError(
                    f"episode {i} video {key!r}: frame indices {bad.tolist()} outside 0..{length - 1}"
                )
        return self.read_video_at(i, key, ks / self.info.fps)

    def read_video_at(self, i: int, key: str, timestamps: Sequence[float]) -> np.ndarray:
        """Frames of episode `i`'s video `key` shown at `timestamps` [s] within the episode."""
        path = self.video_path(i, key)
        from_ts, to_ts = self._meta(i, f"videos/{key}/from_timestamp", f"videos/{key}/to_timestamp")
        ts = np.asarray(timestamps, dtype=np.float64).reshape(-1)
        if ts.size == 0:
            return np.empty((0, *self.info.features[key].shape), dtype=np.uint8)
        outside = ts[(ts < -decode.TOLERANCE_S) | (ts > to_ts - from_ts)]
        if outside.size:
            raise DatasetError(
                f"episode {i} video {key!r}: timestamps {outside.tolist()} [s] outside the episode "
                f"(0 to {to_ts - from_ts:.6f} s)"
            )
        info = self.info.features[key].info
        if is_depth(info):  # 12-bit codes back to metres, (N, H, W, 1)
            codes = decode.decode_at(path, from_ts + ts, raw=True)
            return DepthCoding.from_info(info).dequantize(codes)[..., None]
        return decode.decode_at(path, from_ts + ts)

    def _row(self, i: int) -> int:
        try:
            return self._row_of[int(i)]
        except (KeyError, TypeError, ValueError):
            n = self.num_episodes
            have = f"0..{n - 1}" if self._episode_ids == list(range(n)) else str(self._episode_ids)
            raise DatasetError(f"{self.root}: no episode {i!r}; episodes are {have}") from None

    def _meta(self, i: int, *columns: str) -> list[Any]:
        row = self._row(i)
        missing = [c for c in columns if c not in self._episodes.column_names]
        if missing:
            raise DatasetError(
                f"{self.root / 'meta/episodes'}: missing columns {missing}; has {self._episodes.column_names}"
            )
        return [self._episodes.column(c)[row].as_py() for c in columns]

    def _check_video_key(self, key: str) -> None:
        if key not in self.info.video_keys:
            raise DatasetError(f"{self.root}: no video feature {key!r}; video features are {self.info.video_keys}")


def open_dataset(root: str | Path) -> DatasetReader:
    """Open the v3 dataset at `root` for reading."""
    return DatasetReader(root)


def read_stats(root: str | Path) -> dict[str, Any]:
    path = Path(root) / STATS_PATH
    if not path.is_file():
        raise DatasetError(f"{path}: not found")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: invalid JSON ({exc})") from exc


def _row_groups_of(pf: pq.ParquetFile, episode: int) -> list[int]:
    """Row groups whose episode_index statistics may include `episode`."""
    meta = pf.metadata
    col = pf.schema_arrow.get_field_index("episode_index")
    groups = []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(col).statistics
        if stats is None or not stats.has_min_max or stats.min <= episode <= stats.max:
            groups.append(g)
    return groups


def _to_numpy(column: pa.ChunkedArray, feature: Any, path: Path, name: str) -> np.ndarray:
    """A column of scalars or (nested) lists -> (T,) or (T, *shape) array."""
    arr = column.combine_chunks()
    num_rows = len(arr)
    while pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type):
        arr = arr.flatten()
    values = arr.to_numpy(zero_copy_only=False)
    if feature is None or feature.dtype in ("string", "video", "image"):
        dtype = None
    else:
        dtype = np.dtype(feature.dtype)
    if dtype is not None and values.dtype != dtype:
        values = values.astype(dtype)
    if values.size == num_rows:
        return values if feature is None or tuple(feature.shape) == (1,) else values.reshape(num_rows, *feature.shape)
    shape = tuple(feature.shape) if feature is not None else (values.size // max(num_rows, 1),)
    if values.size != num_rows * int(np.prod(shape)):
        raise DatasetError(
            f"{path}: column {name!r} holds {values.size} values for {num_rows} rows; "
            f"info.json gives shape {list(shape)}"
        )
    return values.reshape(num_rows, *shape)


def summarize(ds: DatasetReader) -> dict[str, Any]:
    """A JSON-able overview of an open dataset: sizes, features, video settings, disk use."""
    info = ds.info
    lengths = np.asarray(ds.episodes_table.column("length").to_numpy(), dtype=np.int64)
    files = [p for p in ds.root.rglob("*") if p.is_file()]
    videos = {}
    for key in info.video_keys:
        block = info.features[key].info or {}
        settings = {k.removeprefix("video."): v for k, v in block.items()}
        n_files = len({(c, f) for c, f in zip(
            ds.episodes_table.column(f"videos/{key}/chunk_index").to_pylist(),
            ds.episodes_table.column(f"videos/{key}/file_index").to_pylist(),
        )}) if f"videos/{key}/chunk_index" in ds.episodes_table.column_names else 0
        videos[key] = {**settings, "files": n_files}
    return {
        "root": str(ds.root),
        "codebase_version": info.codebase_version,
        "robot_type": info.robot_type,
        "fps": info.fps,
        "episodes": ds.num_episodes,
        "frames": ds.num_frames,
        "duration_s": ds.num_frames / info.fps,
        "episode_length": {
            "min": int(lengths.min()) if lengths.size else 0,
            "mean": float(lengths.mean()) if lengths.size else 0.0,
            "max": int(lengths.max()) if lengths.size else 0,
        },
        "tasks": list(ds.tasks),
        "features": {k: {"dtype": f.dtype, "shape": list(f.shape)} for k, f in info.features.items()},
        "videos": videos,
        "data_files": len(list(ds.root.glob("data/**/*.parquet"))),
        "size_bytes": sum(p.stat().st_size for p in files),
    }
