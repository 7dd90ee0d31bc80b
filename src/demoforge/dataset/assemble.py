"""Finalize: turn the writer's staged episode segments into lerobot's files.

Runs from the staged records alone, so a writer resumed after a crash assembles the
same bytes as one that never stopped. Every file goes through a temporary name;
info.json is written last, so a dataset with an info.json is complete.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.dataset.layout import (
    DATA_PATH, EPISODES_PATH, STATS_KEYS, STATS_PATH, TASKS_PATH, VIDEO_PATH, DatasetInfo, Feature,
    write_json_atomic,
)
from demoforge.dataset.stats import histogram_stats, numeric_stats
from demoforge.dataset.tables import tasks_table, write_parquet_atomic
from demoforge.dataset.video import concat_segments
from demoforge.errors import DatasetError

EXTRA_PREFIX = "demoforge/"
HISTOGRAM_PREFIX = "demoforge/pixel_histogram/"  # per-episode (3, 256) counts: exact merged video stats


def assemble(root: Path, staging: Path, config, features: dict[str, Feature], schema: pa.Schema,
             records: list[dict[str, Any]], tasks: list[str]) -> None:
    video_keys = [k for k, f in features.items() if f.dtype == "video"]
    data_files = _write_data(root, staging, schema, records)
    for key in video_keys:
        _write_video(root, staging, key, records, config.fps)
    if records:
        write_parquet_atomic(root / EPISODES_PATH.format(chunk_index=0, file_index=0),
                             [episodes_table(records, features)])
    write_parquet_atomic(root / TASKS_PATH, [tasks_table(tasks)])
    write_json_atomic(root / STATS_PATH, dataset_stats(features, data_files, records))
    info = DatasetInfo(
        fps=config.fps, features=features, robot_type=config.robot_type, total_episodes=len(records),
        total_frames=sum(r["length"] for r in records), total_tasks=len(tasks), chunks_size=config.chunks_size,
        data_files_size_in_mb=_plain(config.data_file_size_mb), video_files_size_in_mb=_plain(config.video_file_size_mb),
        splits={"train": f"0:{len(records)}"},
    )
    write_json_atomic(root / "meta" / "info.json", info.to_json())


def _plain(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _write_data(root: Path, staging: Path, schema: pa.Schema, records: list[dict]) -> list[Path]:
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for r in records:
        groups[(r["data/chunk_index"], r["data/file_index"])].append(r["episode_index"])
    paths = []
    for (chunk, file), episodes in sorted(groups.items()):
        path = root / DATA_PATH.format(chunk_index=chunk, file_index=file)
        tables = [pq.read_table(staging / "data" / f"{e:06d}.parquet", schema=schema) for e in episodes]
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


def episodes_table(records: list[dict], features: dict[str, Feature]) -> pa.Table:
    """meta/episodes rows in lerobot's column order, then demoforge's extra columns."""
    video_keys = [k for k, f in features.items() if f.dtype == "video"]
    extra_keys = sorted({k for r in records for k in r["extra"]})
    rows = []
    for r in records:
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
            if key in video_keys:
                stats = histogram_stats(np.asarray(r["videos"][key]["histogram"]), r["length"])
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
        rows.append(row)
    return pa.Table.from_pylist(rows)


def dataset_stats(features: dict[str, Feature], data_files: list[Path], records: list[dict]) -> dict[str, Any]:
    """Exact dataset-wide statistics: numeric features from the data files, cameras from histograms."""
    out: dict[str, Any] = {}
    if not records:
        return out
    for key, ft in features.items():
        if ft.dtype == "video":
            hist = sum(np.asarray(r["videos"][key]["histogram"], dtype=np.int64) for r in records)
            out[key] = histogram_stats(hist, sum(r["length"] for r in records))
        else:
            # One feature at a time: the only place memory scales with the frame count.
            parts = [column_to_numpy(pq.read_table(p, columns=[key]).column(key).combine_chunks()) for p in data_files]
            out[key] = numeric_stats(np.concatenate(parts))
    return out


def column_to_numpy(column: pa.Array) -> np.ndarray:
    """A scalar or fixed_size_list arrow column -> (N,) or (N, n) array."""
    if pa.types.is_fixed_size_list(column.type):
        n = column.type.list_size
        return column.flatten().to_numpy(zero_copy_only=False).reshape(-1, n)
    return column.to_numpy(zero_copy_only=False)
