"""Verify the structure of a v3 dataset root and report every problem found.

Checks what lerobot relies on but never verifies itself: that every referenced file
exists, that every page of the data files decodes (a file overwritten mid-way keeps its
footer, so opening it proves nothing; `quick` skips this), that counts and indices agree
across info.json, meta/episodes and the data files, that timestamps are frame_index / fps,
and that each episode's span of its mp4 holds exactly its frames (packet timestamps only;
no video is decoded).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.dataset.check_data import TIMESTAMP_TOLERANCE_S, check_data, column_values, rows_by_file
from demoforge.dataset.depth import is_depth
from demoforge.dataset import decode
from demoforge.dataset.hdf5 import check_hdf5, is_hdf5
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, INFO_PATH, STATS_PATH, TASKS_PATH, DatasetInfo
from demoforge.dataset.problem import Problem
from demoforge.dataset.reader import read_episodes_table, read_tasks
from demoforge.errors import DemoforgeError

REQUIRED_INFO_KEYS = ("codebase_version", "fps", "features", "total_episodes", "total_frames",
                      "total_tasks", "chunks_size", "data_path")
REQUIRED_STATS_KEYS = ("min", "max", "mean", "std", "count")
EPISODE_COLUMNS = ("episode_index", "tasks", "length", "data/chunk_index", "data/file_index",
                   "dataset_from_index", "dataset_to_index")


def check_dataset(root: str | Path, *, quick: bool = False) -> list[Problem]:
    """Every structural problem of the dataset at `root` (a v3.0 or v2.1 root, or a robomimic-layout
    HDF5 file: `dataset.hdf5`); an empty list means it is sound.
    `quick`: leave the data pages undecoded (only the index columns are read)."""
    root = Path(root)
    if root.is_file():
        if is_hdf5(root):
            return check_hdf5(root)
    raw = v21_info(root)
    if raw is not None:
        # lazy: it builds on this module's check_info_fields (a cycle)
        from demoforge.dataset.check_v21 import check_v21

        return check_v21(root, raw)
    out: list[Problem] = []
    info = check_info(root, out)
    if info is None:
        return out
    tasks = _guard(out, "tasks", TASKS_PATH, lambda: read_tasks(root))
    if tasks is not None:
        check_tasks_index(root, out)
    if tasks is not None and len(tasks) != info.total_tasks:
        out.append(Problem("count.tasks", INFO_PATH,
                           f"total_tasks is {info.total_tasks} but {TASKS_PATH} has {len(tasks)} tasks"))
    episodes = _guard(out, "episodes", "meta/episodes", lambda: read_episodes_table(root))
    if episodes is not None and check_episodes(info, episodes, tasks, out):
        check_data(root, info, episodes, tasks, out, quick=quick)
        check_videos(root, info, episodes, out)
        check_unreferenced(root, info, episodes, out)
    check_stats(root, info, out)
    return out


def v21_info(root: Path) -> dict | None:
    """The parsed info.json of a v2.1 dataset (`bake --lerobot-format v2.1`), else None."""
    try:
        raw = json.loads((root / INFO_PATH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # check_info says why
    return raw if isinstance(raw, dict) and raw.get("codebase_version") == "v2.1" else None


def info_problem(exc: Exception) -> Problem:
    """An info.json that DatasetInfo refuses, its message without the path the Problem already names."""
    message, prefix = str(exc), f"{INFO_PATH}: "
    return Problem("info", INFO_PATH, message.removeprefix(prefix))


def _guard(out: list[Problem], code: str, file: str, fn):
    try:
        return fn()
    except (DemoforgeError, OSError, pa.ArrowException, ValueError) as exc:
        out.append(Problem(code, file, str(exc)))
        return None


def check_info(root: Path, out: list[Problem]) -> DatasetInfo | None:
    """meta/info.json parses, has the required keys and the five index features."""
    path = root / INFO_PATH
    if not path.is_file():
        out.append(Problem("info", INFO_PATH, f"not found; is {root} a LeRobot v3 dataset root?"))
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        out.append(Problem("info", INFO_PATH, f"not valid UTF-8 JSON ({exc})"))
        return None
    if not isinstance(raw, dict):
        out.append(Problem("info", INFO_PATH, f"holds {type(raw).__name__}, not a JSON object"))
        return None
    return check_info_fields(raw, out)


def check_info_fields(raw: dict, out: list[Problem]) -> DatasetInfo | None:
    """The parsed info.json `raw` has the required keys, valid features and the five index features."""
    missing = [k for k in REQUIRED_INFO_KEYS if k not in raw]
    if missing:
        out.append(Problem("info", INFO_PATH, f"missing keys {missing}"))
    try:
        info = DatasetInfo.from_json(raw, source=INFO_PATH)
    except DemoforgeError as exc:
        out.append(info_problem(exc))
        return None
    if info.fps <= 0:
        out.append(Problem("info", INFO_PATH, f"fps must be positive, got {info.fps}"))
        return None
    for name in INDEX_FEATURE_NAMES:
        f = info.features.get(name)
        want = "float32" if name == "timestamp" else "int64"
        if f is None or f.dtype != want or tuple(f.shape) != (1,):
            got = "absent" if f is None else f"{f.dtype} {list(f.shape)}"
            out.append(Problem("info", INFO_PATH, f"index feature {name!r} must be {want} [1], is {got}"))
    for key in info.video_keys:
        f = info.features[key]
        channels = 1 if is_depth(f.info) else 3
        if len(f.shape) != 3 or f.shape[2] != channels:
            out.append(Problem("info", INFO_PATH,
                               f"video feature {key!r} shape {list(f.shape)} is not [H, W, {channels}]"))
        block = f.info or {}
        for axis, size in (("video.height", f.shape[0]), ("video.width", f.shape[1] if len(f.shape) > 1 else None)):
            if axis in block and block[axis] != size:
                out.append(Problem("info", INFO_PATH,
                                   f"video feature {key!r}: info {axis} is {block[axis]} but shape gives {size}"))
    if info.video_keys and not info.video_path:
        out.append(Problem("info", INFO_PATH, f"video_path is null but video features {info.video_keys} exist"))
        return None
    return info


def check_tasks_index(root: Path, out: list[Problem]) -> None:
    """The task column is recorded as the pandas index; without it lerobot reads every task as 0."""
    meta = pq.read_schema(root / TASKS_PATH).metadata or {}
    try:
        index_columns = json.loads(meta.get(b"pandas", b"{}")).get("index_columns", [])
    except json.JSONDecodeError:
        index_columns = []
    if not any(isinstance(c, str) and c in ("task", "__index_level_0__") for c in index_columns):
        out.append(Problem("tasks", TASKS_PATH, f"pandas metadata does not record the task column as the index "
                           f"(index_columns={index_columns}); lerobot would read task strings as integers"))


def check_episodes(info: DatasetInfo, episodes: pa.Table, tasks: list[str] | None, out: list[Problem]) -> bool:
    """meta/episodes: columns, episode numbering, contiguous frame ranges, totals. False stops later checks."""
    f = "meta/episodes"
    needed = list(EPISODE_COLUMNS)
    for key in info.video_keys:
        needed += [f"videos/{key}/{c}" for c in ("chunk_index", "file_index", "from_timestamp", "to_timestamp")]
    missing = [c for c in needed if c not in episodes.column_names]
    if missing:
        out.append(Problem("episodes", f, f"missing columns {missing}"))
        return False
    ids = column_values(episodes, "episode_index")
    n = len(ids)
    if not np.array_equal(ids, np.arange(n)):
        out.append(Problem("episodes", f, f"episode_index must be 0..{n - 1} once each, got {ids.tolist()[:20]}"))
    if n != info.total_episodes:
        out.append(Problem("count.episodes", INFO_PATH, f"total_episodes is {info.total_episodes} but {f} has {n} episodes"))
    length, start, stop = (column_values(episodes, c) for c in ("length", "dataset_from_index", "dataset_to_index"))
    if int(length.sum()) != info.total_frames:
        out.append(Problem("count.frames", INFO_PATH,
                           f"total_frames is {info.total_frames} but episode lengths sum to {int(length.sum())}"))
    expected_start = np.concatenate([[0], stop[:-1]])
    for r in range(n):
        e = int(ids[r])
        if length[r] <= 0:
            out.append(Problem("episodes", f, f"episode {e}: length {length[r]} must be positive"))
        if stop[r] - start[r] != length[r]:
            out.append(Problem("episodes.range", f, f"episode {e}: dataset_to_index - dataset_from_index = "
                               f"{stop[r]} - {start[r]} = {stop[r] - start[r]} but length is {length[r]}"))
        if start[r] != expected_start[r]:
            out.append(Problem("episodes.range", f, f"episode {e}: dataset_from_index is {start[r]}, expected "
                               f"{expected_start[r]} (contiguous after the previous episode)"))
    if tasks is not None:
        known = set(tasks)
        for e, names in zip(ids.tolist(), episodes.column("tasks").to_pylist()):
            unknown = [t for t in (names or []) if t not in known]
            if unknown:
                out.append(Problem("episodes.tasks", f, f"episode {e}: tasks {unknown} are not in {TASKS_PATH}"))
    return True


def check_videos(root: Path, info: DatasetInfo, episodes: pa.Table, out: list[Problem]) -> None:
    """Each mp4 exists, has the feature's resolution, and each episode's span holds exactly its frames."""
    tol = TIMESTAMP_TOLERANCE_S
    ids, length = column_values(episodes, "episode_index"), column_values(episodes, "length")
    for key in info.video_keys:
        if len(info.features[key].shape) != 3:
            continue  # reported by check_info
        h, w = info.features[key].shape[:2]
        start = column_values(episodes, f"videos/{key}/from_timestamp", np.float64)
        stop = column_values(episodes, f"videos/{key}/to_timestamp", np.float64)
        by_file = rows_by_file(episodes, f"videos/{key}/chunk_index", f"videos/{key}/file_index")
        for (chunk, file), rows in sorted(by_file.items()):
            rel = info.video_path.format(video_key=key, chunk_index=chunk, file_index=file)
            if not (root / rel).is_file():
                out.append(Problem("file.missing", rel, f"video {key!r} of episodes {ids[rows].tolist()} not found"))
                continue
            probe = _guard(out, "video", rel, lambda: decode.probe_video(root / rel))
            if probe is None:
                continue
            if (probe.height, probe.width) != (h, w):
                out.append(Problem("video.size", rel, f"frames are {probe.height}x{probe.width} (HxW) but feature "
                                   f"{key!r} has shape {list(info.features[key].shape)}"))
            block = info.features[key].info or {}
            seen = {"video.codec": probe.codec, "video.pix_fmt": probe.pix_fmt}
            wrong = [f"{k} is {block[k]!r} but the file has {v!r}" for k, v in seen.items() if k in block and block[k] != v]
            if wrong:
                out.append(Problem("video.settings", rel, f"feature {key!r}: info.json " + "; ".join(wrong)))
            pts = probe.pts_s
            prev_stop = None
            for r in sorted(rows, key=lambda r: start[r]):
                e, t, a, b = int(ids[r]), int(length[r]), start[r], stop[r]
                if prev_stop is not None and a < prev_stop - tol:
                    out.append(Problem("video.span", rel, f"episode {e}: span starts at {a:.6f} s, inside the "
                                       f"previous episode's span (ends {prev_stop:.6f} s)"))
                prev_stop = b
                if abs((b - a) - t / info.fps) > tol:
                    out.append(Problem("video.span", rel, f"episode {e}: span {a:.6f}..{b:.6f} s is {b - a:.6f} s "
                                       f"long but {t} frames at {info.fps} fps take {t / info.fps:.6f} s"))
                inside = pts[(pts >= a - tol) & (pts < b - tol)]
                if inside.size != t:
                    out.append(Problem("video.frames", rel, f"episode {e}: {inside.size} frames in span "
                                       f"[{a:.6f}, {b:.6f}) s but the episode has {t} frames"))
                    continue
                err = np.abs(inside - (a + np.arange(t) / info.fps))
                if err.size and err.max() > tol:
                    k = int(np.argmax(err))
                    out.append(Problem("video.timestamps", rel, f"episode {e}: frame {k} is at {inside[k]:.6f} s, "
                                       f"expected {a + k / info.fps:.6f} s"))


def check_stats(root: Path, info: DatasetInfo, out: list[Problem]) -> None:
    """meta/stats.json has every feature with min/max/mean/std/count of the right shape."""
    path = root / STATS_PATH
    if not path.is_file():
        out.append(Problem("file.missing", STATS_PATH, "not found"))
        return
    try:
        stats = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        out.append(Problem("stats", STATS_PATH, f"invalid JSON ({exc})"))
        return
    absent = [k for k, f in info.features.items() if k not in stats and f.dtype != "string"]  # texts have none
    if absent:
        out.append(Problem("stats", STATS_PATH, f"features {absent} have no statistics"))
    for key, feat in info.features.items():
        entry = stats.get(key)
        if not isinstance(entry, dict):
            continue
        missing = [s for s in REQUIRED_STATS_KEYS if s not in entry]
        if missing:
            out.append(Problem("stats", STATS_PATH, f"feature {key!r} lacks {missing}"))
        want = ((1 if is_depth(feat.info) else 3), 1, 1) if feat.is_visual else tuple(feat.shape)
        wrong = {s: list(np.shape(entry[s])) for s in ("min", "max", "mean", "std")
                 if s in entry and np.shape(entry[s]) != want}
        if wrong:
            shapes = ", ".join(f"{s} has shape {shape}" for s, shape in wrong.items())
            out.append(Problem("stats", STATS_PATH, f"feature {key!r}: {shapes}, expected {list(want)}"))


def check_unreferenced(root: Path, info: DatasetInfo, episodes: pa.Table, out: list[Problem]) -> None:
    """Data and video files that no episode points to (left over from a crash or a bad merge)."""
    used = {info.data_path.format(chunk_index=c, file_index=f)
            for c, f in rows_by_file(episodes, "data/chunk_index", "data/file_index")}
    for key in info.video_keys:
        used |= {info.video_path.format(video_key=key, chunk_index=c, file_index=f)
                 for c, f in rows_by_file(episodes, f"videos/{key}/chunk_index", f"videos/{key}/file_index")}
    found = [p for p in (*root.glob("data/**/*.parquet"), *root.glob("videos/**/*.mp4"))]
    for p in sorted(found):
        rel = p.relative_to(root).as_posix()
        if rel not in used:
            out.append(Problem("file.unreferenced", rel, "no episode in meta/episodes refers to this file"))
