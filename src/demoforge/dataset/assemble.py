"""Finalize: turn the writer's staged episode segments into lerobot's files.

Runs from the staged records alone, so a writer resumed after a crash assembles the
same bytes as one that never stopped. Every file goes through a temporary name;
info.json is written last, so a dataset with an info.json is complete. Memory stays
bounded: data tables are copied one episode at a time, episode rows are written in
batches, and dataset statistics stream over the data files.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.dataset.depth import DepthCoding, depth_stats, is_depth
from demoforge.dataset.keys import EXTRA_PREFIX, HISTOGRAM_PREFIX  # histograms: exact merged video stats
from demoforge.dataset.layout import (
    DATA_PATH, EPISODES_PATH, STATS_KEYS, STATS_PATH, TASKS_PATH, VIDEO_PATH, DatasetInfo, Feature,
    write_json_atomic,
)
from demoforge.dataset.quantiles import streaming_stats
from demoforge.dataset.stats import bool_stats, histogram_stats
from demoforge.dataset.tables import tasks_table, write_parquet_atomic
from demoforge.dataset.remux import concat_segments
from demoforge.errors import DatasetError

EPISODE_BATCH = 100  # episode rows per row group of meta/episodes (bounds finalize memory)


def assemble(root: Path, staging: Path, config, features: dict[str, Feature], schema: pa.Schema,
             records: list[dict[str, Any]], tasks: list[str], *, video_hists: dict[str, np.ndarray],
             extra_keys: list[str], threads: int = 1, written: frozenset = frozenset()) -> None:
    """`written`: the (chunk, file) data files already written as the episodes were added."""
    video_keys = [k for k, f in features.items() if f.dtype == "video"]
    data_files = _write_data(root, staging, schema, records, written)
    for key in video_keys:
        _write_video(root, staging, key, records, config.fps)
    if records:
        _write_episodes(root / EPISODES_PATH.format(chunk_index=0, file_index=0), staging, records, features,
                        extra_keys)
    write_parquet_atomic(root / TASKS_PATH, [tasks_table(tasks)])
    total = sum(r["length"] for r in records)
    write_json_atomic(root / STATS_PATH, dataset_stats(features, data_files, video_hists, total, threads=threads))
    info = DatasetInfo(
        fps=config.fps, features=features, robot_type=config.robot_type, total_episodes=len(records),
        total_frames=total, total_tasks=len(tasks), chunks_size=config.chunks_size,
        data_files_size_in_mb=_plain(config.data_file_size_mb), video_files_size_in_mb=_plain(config.video_file_size_mb),
        splits={"train": f"0:{len(records)}"},
    )
    write_json_atomic(root / "meta" / "info.json", info.to_json())


def _plain(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _write_data(root: Path, staging: Path, schema: pa.Schema, records: list[dict],
                written: frozenset = frozenset()) -> list[Path]:
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for r in records:
        groups[(r["data/chunk_index"], r["data/file_index"])].append(r["episode_index"])
    paths = []
    for (chunk, file), episodes in sorted(groups.items()):
        path = root / DATA_PATH.format(chunk_index=chunk, file_index=file)
        if (chunk, file) not in written:
            tables = (pq.read_table(staging / "data" / f"{e:06d}.parquet", schema=schema) for e in episodes)
            write_parquet_atomic(path, tables, schema)
        paths.append(path)
    return paths


def _write_video(root: Path, staging: Path, key: str, records: list[dict], fps: int) -> None:
    groups: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for r in records:
        v = r["videos"][key]
        groups[(v["chunk_index"], v["file_index"])].append(r)
    for (chunk, file), recs in sorted(groups.items()):
        out = root / VIDEO_PATH.format(video_key=key, chunk_index=chunk, file_index=file)
        segments = [staging / "videos" / key / f"{r['episode_index']:06d}.mp4" for r in recs]
        spans = concat_segments(segments, out, fps=fps)
        for r, (start, end) in zip(recs, spans):
            want = (r["videos"][key]["from_timestamp"], r["videos"][key]["to_timestamp"])
            if not np.allclose((start, end), want, atol=0.5 / fps):
                raise DatasetError(
                    f"{out}: episode {r['episode_index']} spans {start:.4f}-{end:.4f} s in the joined video but "
                    f"{want[0]:.4f}-{want[1]:.4f} s was recorded (its segment holds a different frame count)"
                )


def _write_episodes(path: Path, staging: Path, records: list[dict], features: dict[str, Feature],
                    extra_keys: list[str]) -> None:
    schema = episodes_schema(features, extra_keys)

    def batches() -> Iterator[pa.Table]:
        for start in range(0, len(records), EPISODE_BATCH):
            rows = []
            for slim in records[start:start + EPISODE_BATCH]:
                full = json.loads((staging / "episodes" / f"{slim['episode_index']:06d}.json").read_text())
                for key, placement in slim["videos"].items():
                    full["videos"][key].update(placement)
                rows.append(episode_row({**full, **{k: v for k, v in slim.items() if k != "videos"}},
                                        features, extra_keys))
            yield pa.Table.from_pylist(rows, schema=schema)

    write_parquet_atomic(path, batches(), schema)


def episodes_schema(features: dict[str, Feature], extra_keys: list[str]) -> pa.Schema:
    """meta/episodes columns in lerobot's order, then demoforge's extra columns."""
    i64, f64 = pa.int64(), pa.float64()
    fields = [("episode_index", i64), ("tasks", pa.list_(pa.string())), ("length", i64),
              ("data/chunk_index", i64), ("data/file_index", i64), ("dataset_from_index", i64),
              ("dataset_to_index", i64)]
    video_keys = [k for k, f in features.items() if f.dtype == "video"]
    for key in video_keys:
        fields += [(f"videos/{key}/chunk_index", i64), (f"videos/{key}/file_index", i64),
                   (f"videos/{key}/from_timestamp", f64), (f"videos/{key}/to_timestamp", f64)]
    for key, ft in features.items():
        if ft.dtype == "string":  # no statistics of texts (as lerobot)
            continue
        value = pa.list_(pa.list_(pa.list_(f64))) if ft.dtype == "video" else pa.list_(f64)
        for name in STATS_KEYS:
            fields.append((f"stats/{key}/{name}", pa.list_(i64) if name == "count" else value))
    fields += [("meta/episodes/chunk_index", i64), ("meta/episodes/file_index", i64)]
    fields += [(EXTRA_PREFIX + k, pa.string()) for k in extra_keys]
    fields += [(HISTOGRAM_PREFIX + k, pa.list_(pa.list_(i64))) for k in video_keys]
    return pa.schema(fields)


def episode_row(r: dict, features: dict[str, Feature], extra_keys: list[str]) -> dict[str, Any]:
    video_keys = [k for k, f in features.items() if f.dtype == "video"]
    row: dict[str, Any] = {
        "episode_index": r["episode_index"], "tasks": [r["task"]], "length": r["length"],
        "data/chunk_index": r["data/chunk_index"], "data/file_index": r["data/file_index"],
        "dataset_from_index": r["dataset_from_index"], "dataset_to_index": r["dataset_to_index"],
    }
    for key in video_keys:
        v = r["videos"][key]
        for name in ("chunk_index", "file_index", "from_timestamp", "to_timestamp"):
            row[f"videos/{key}/{name}"] = v[name]
    for key in features:
        if features[key].dtype == "string":
            continue
        if key in video_keys:
            stats = _video_stats(features[key], np.asarray(r["videos"][key]["histogram"]), r["length"])
        else:
            stats = r["stats"][key]
        for name in STATS_KEYS:
            row[f"stats/{key}/{name}"] = stats[name]
    row["meta/episodes/chunk_index"] = 0
    row["meta/episodes/file_index"] = 0
    for key in extra_keys:
        row[EXTRA_PREFIX + key] = json.dumps(r["extra"][key], sort_keys=True) if key in r["extra"] else None
    for key in video_keys:
        row[HISTOGRAM_PREFIX + key] = r["videos"][key]["histogram"]
    return row


def dataset_stats(features: dict[str, Feature], data_files: list[Path], video_hists: dict[str, np.ndarray],
                  total_frames: int, *, threads: int = 1) -> dict[str, Any]:
    """Exact dataset-wide statistics: numeric features streamed from the data files, cameras from
    histograms. With `threads` > 1 features are computed side by side (parquet reads and NumPy
    release the GIL); the values do not depend on it."""
    if not total_frames:
        return {}

    def one(key: str) -> dict[str, Any]:
        ft = features[key]
        if ft.dtype == "video":
            return _video_stats(ft, video_hists[key], total_frames)

        def chunks():
            for path in data_files:
                yield from _column_chunks(path, key)
        if ft.dtype == "bool":  # flags: exact from their counts, no sorting
            ones = sum((np.count_nonzero(c.reshape(len(c), -1), axis=0) for c in chunks()), np.zeros(1, np.int64))
            return bool_stats(ones, total_frames)
        return streaming_stats(chunks, ft.shape[0])

    keys = [k for k, ft in features.items() if ft.dtype != "string"]  # texts: no statistics (as lerobot)
    if threads <= 1 or len(keys) < 2:
        return {k: one(k) for k in keys}
    # the widest features first, so the longest job does not start last
    order = sorted(keys, key=lambda k: -int(np.prod(features[k].shape)) if features[k].dtype != "video" else 0)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dataset-stats") as pool:
        jobs = {k: pool.submit(one, k) for k in order}
    return {k: jobs[k].result() for k in keys}


def _column_chunks(path: Path, key: str, max_rows: int = 65536) -> Iterator[np.ndarray]:
    """One column of a data file as arrays, a row group (an episode, as written here) at a time;
    larger row groups in batches of `max_rows`. Reading row groups whole is several times faster
    than pyarrow's iter_batches, which re-slices across row groups."""
    pf = pq.ParquetFile(path)
    for i in range(pf.num_row_groups):
        if pf.metadata.row_group(i).num_rows <= max_rows:
            yield column_to_numpy(pf.read_row_group(i, columns=[key]).column(0))
        else:
            for batch in pf.iter_batches(batch_size=max_rows, row_groups=[i], columns=[key]):
                yield column_to_numpy(batch.column(0))


def _video_stats(ft: Feature, hist: np.ndarray, frames: int) -> dict[str, Any]:
    if is_depth(ft.info):
        return depth_stats(hist, frames, DepthCoding.from_info(ft.info))
    return histogram_stats(hist, frames)


def column_to_numpy(column: pa.Array) -> np.ndarray:
    """A scalar or fixed_size_list arrow column -> (N,) or (N, n) array."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_fixed_size_list(column.type):
        n = column.type.list_size
        return column.flatten().to_numpy(zero_copy_only=False).reshape(-1, n)
    return column.to_numpy(zero_copy_only=False)
