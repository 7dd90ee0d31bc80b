"""The data files' part of `check_dataset`: each file exists, its pages decode, its columns
have the features' types, and its rows agree with meta/episodes frame by frame (index,
frame_index, timestamp = frame_index / fps, task_index)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.dataset import decode
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, DatasetInfo
from demoforge.dataset.problem import Problem

TIMESTAMP_TOLERANCE_S = decode.TOLERANCE_S


def check_data(root: Path, info: DatasetInfo, episodes: pa.Table, tasks: list[str] | None, out: list[Problem], *,
               quick: bool = False) -> None:
    """Each data file exists, its pages decode (unless `quick`) and its rows agree with meta/episodes
    frame by frame."""
    by_file = rows_by_file(episodes, "data/chunk_index", "data/file_index")
    global_row = 0
    for (chunk, file), rows in sorted(by_file.items()):
        rel = info.data_path.format(chunk_index=chunk, file_index=file)
        eps = [int(episodes.column("episode_index")[r].as_py()) for r in rows]
        meta_rows = int(sum(episodes.column("length")[r].as_py() for r in rows))  # to skip an unread file's place
        if not (root / rel).is_file():
            out.append(Problem("file.missing", rel, f"data file of episodes {eps} not found"))
            global_row += meta_rows
            continue
        try:
            pf = pq.ParquetFile(root / rel)
        except (OSError, pa.ArrowException) as exc:
            out.append(Problem("data", rel, f"unreadable parquet ({exc})"))
            global_row += meta_rows
            continue
        names = pf.schema_arrow.names
        absent = [k for k in info.data_keys if k not in names]
        if absent:
            out.append(Problem("data.columns", rel, f"feature columns {absent} missing; the file has {names}"))
        for key in info.data_keys:
            if key in names:
                why = _type_mismatch(pf.schema_arrow.field(key).type, info.features[key])
                if why:
                    out.append(Problem("data.columns", rel, f"column {key!r}: {why}"))
        broken = set() if quick else check_pages(pf, rel, out)
        table = None
        if not any(k not in names or k in broken for k in INDEX_FEATURE_NAMES):
            try:
                table = pf.read(columns=list(INDEX_FEATURE_NAMES))
            except (OSError, pa.ArrowException) as exc:  # a damaged page, met even when `quick`
                out.append(Problem("data.pages", rel, f"the index columns do not decode ({exc}); the file is "
                                   "damaged: restore it from the dataset's source, or rewrite the dataset"))
        if table is None:
            global_row += meta_rows
            continue
        cols = {k: column_values(table, k, np.float32 if k == "timestamp" else np.int64) for k in INDEX_FEATURE_NAMES}
        index = cols["index"]
        want_index = np.arange(global_row, global_row + len(index))
        if not np.array_equal(index, want_index):
            bad = int(np.flatnonzero(index != want_index)[0])
            out.append(Problem("data.index", rel, f"row {bad}: index is {index[bad]} but its position across "
                               f"the data files is {want_index[bad]} (lerobot looks frames up by position)"))
        global_row += len(index)
        order = np.argsort(cols["episode_index"], kind="stable")
        present, first, counts = np.unique(cols["episode_index"][order], return_index=True, return_counts=True)
        orphans = sorted(set(present.tolist()) - set(eps))
        if orphans:
            out.append(Problem("data.episodes", rel, f"holds rows of episodes {orphans} that meta/episodes "
                               "does not place in this file"))
        where = {int(e): (int(s), int(c)) for e, s, c in zip(present, first, counts)}
        for r, e in zip(rows, eps):
            ep = {c: episodes.column(c)[r].as_py() for c in ("length", "dataset_from_index", "tasks")}
            s, c = where.get(e, (0, 0))
            sel = order[s:s + c]
            _check_episode_rows(rel, e, ep, {k: v[sel] for k, v in cols.items()}, info.fps, tasks, out)


def check_pages(pf: pq.ParquetFile, rel: str, out: list[Problem]) -> set[str]:
    """Decode every page of `pf`, one row group (one episode as we write them) at a time, and
    report each column with pages that do not decode; returns those columns."""
    bad: dict[str, list[int]] = defaultdict(list)
    why: dict[str, str] = {}
    for g in range(pf.metadata.num_row_groups):
        if _decode_error(pf, g) is None:
            continue
        for name in pf.schema_arrow.names:  # which columns: one by one
            if (err := _decode_error(pf, g, [name])) is not None:
                bad[name].append(g)
                why.setdefault(name, err)
    for name, groups in bad.items():
        out.append(Problem("data.pages", rel, f"column {name!r}: row groups {groups} do not decode ({why[name]}); "
                           "the file is damaged: restore it from the dataset's source, or rewrite the dataset"))
    return set(bad)


def _decode_error(pf: pq.ParquetFile, group: int, columns: list[str] | None = None) -> str | None:
    try:
        pf.read_row_group(group, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        return str(exc).strip()
    return None


def _check_episode_rows(rel, e, ep, cols, fps, tasks, out) -> None:
    t = len(cols["index"])
    if t != ep["length"]:
        out.append(Problem("data.rows", rel, f"episode {e}: {t} rows but length is {ep['length']}"))
        return
    if not np.array_equal(cols["index"], ep["dataset_from_index"] + np.arange(t)):
        out.append(Problem("data.index", rel, f"episode {e}: index runs {cols['index'][0]}..{cols['index'][-1]} "
                           f"but dataset_from_index is {ep['dataset_from_index']} (length {t})"))
    frame = cols["frame_index"]
    if not np.array_equal(frame, np.arange(t)):
        bad = int(np.flatnonzero(frame != np.arange(t))[0])
        out.append(Problem("data.frame_index", rel, f"episode {e}: frame_index at row {bad} is {frame[bad]}, "
                           f"expected {bad} (0..{t - 1})"))
    # Against the row's position, so a broken frame_index is not reported twice.
    err = np.abs(cols["timestamp"].astype(np.float64) - np.arange(t) / fps)
    if err.size and err.max() > TIMESTAMP_TOLERANCE_S:
        bad = int(np.argmax(err))
        out.append(Problem("data.timestamp", rel, f"episode {e}: timestamp at frame {bad} is "
                           f"{cols['timestamp'][bad]:.6f} s, expected frame_index / fps = {bad / fps:.6f} s"))
    ti = cols["task_index"]
    if tasks is not None:
        invalid = sorted(set(ti[(ti < 0) | (ti >= len(tasks))].tolist()))
        if invalid:
            out.append(Problem("data.task_index", rel, f"episode {e}: task_index {invalid} not in 0..{len(tasks) - 1}"))
        else:
            used = sorted({tasks[i] for i in set(ti.tolist())})
            if ep["tasks"] is not None and not set(used) <= set(ep["tasks"]):
                out.append(Problem("data.task_index", rel, f"episode {e}: rows use tasks {used} but meta/episodes "
                                   f"lists {ep['tasks']}"))


def _type_mismatch(arrow_type: pa.DataType, feature) -> str | None:
    """Why a data column's arrow type cannot hold `feature`, or None when it can."""
    shape = tuple(feature.shape)
    if feature.dtype == "string":
        ok = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
        return None if ok else f"type {arrow_type} does not hold strings"
    if feature.dtype in ("image", "video"):
        return None
    want = pa.from_numpy_dtype(np.dtype(feature.dtype))
    sizes = []
    while pa.types.is_fixed_size_list(arrow_type) or pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        sizes.append(arrow_type.list_size if pa.types.is_fixed_size_list(arrow_type) else None)
        arrow_type = arrow_type.value_type
    expected = "scalar" if shape == (1,) else f"list of {list(shape)}"
    got = "scalar" if not sizes else f"list of {sizes}"
    if arrow_type != want:
        return f"elements are {arrow_type} but info.json says {feature.dtype}"
    if shape == (1,) and sizes in ([], [1]):
        return None
    if len(sizes) != len(shape) or any(s is not None and s != n for s, n in zip(sizes, shape)):
        return f"stored as {got} but info.json gives shape {list(shape)} ({expected})"
    return None


def column_values(table: pa.Table, name: str, dtype=np.int64) -> np.ndarray:
    """Column `name` of `table` as a NumPy array of `dtype`."""
    return np.asarray(table.column(name).to_numpy(), dtype=dtype)


def rows_by_file(episodes: pa.Table, chunk_col: str, file_col: str) -> dict[tuple[int, int], list[int]]:
    """(chunk_index, file_index) -> rows of meta/episodes that point to that file."""
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    chunks, files = column_values(episodes, chunk_col).tolist(), column_values(episodes, file_col).tolist()
    for r, (c, f) in enumerate(zip(chunks, files)):
        groups[(c, f)].append(r)
    return groups
