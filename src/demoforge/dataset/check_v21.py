"""Verify a LeRobot v2.1 dataset root (`bake --lerobot-format v2.1`, GR00T's and openpi's layout).

v2.1 keeps one parquet file and one mp4 per episode (paths from info.json `data_path` and
`video_path` with `episode_chunk`, `episode_index` and `video_key`) and its metadata in JSON
lines: meta/episodes.jsonl (episode_index, tasks, length), meta/tasks.jsonl (task_index,
task) and meta/episodes_stats.jsonl (per-episode stats). The checks mirror the v3.0 ones
(`demoforge.dataset.check`): counts agree across info.json, the JSON lines and the files;
each episode's rows carry its index, frame indices 0..n-1, timestamps frame_index / fps and
a global index continuing the previous episode's; each mp4 holds exactly the episode's frames
at the feature's resolution; every episode has stats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.dataset import decode
from demoforge.dataset.check import check_info_fields
from demoforge.dataset.problem import Problem
from demoforge.dataset.layout import CODEBASE_VERSION, INDEX_FEATURE_NAMES, INFO_PATH, DatasetInfo
from demoforge.errors import DemoforgeError

V21 = "v2.1"
EPISODES_JSONL = "meta/episodes.jsonl"
TASKS_JSONL = "meta/tasks.jsonl"
EPISODES_STATS_JSONL = "meta/episodes_stats.jsonl"


def check_v21(root: str | Path, raw_info: dict[str, Any]) -> list[Problem]:
    """Every structural problem of the v2.1 dataset at `root` (`raw_info`: its parsed info.json)."""
    root = Path(root)
    out: list[Problem] = []
    # The keys, features and index features are those of v3.0.
    info = check_info_fields({**raw_info, "codebase_version": CODEBASE_VERSION}, out)
    if info is None:
        return out
    episodes = _jsonl(root, EPISODES_JSONL, ("episode_index", "tasks", "length"), out)
    tasks = _jsonl(root, TASKS_JSONL, ("task_index", "task"), out)
    stats = _jsonl(root, EPISODES_STATS_JSONL, ("episode_index", "stats"), out)
    if episodes is None or tasks is None:
        return out
    _check_counts(info, raw_info, episodes, tasks, out)
    chunks = int(raw_info["chunks_size"]) or 1
    start = 0
    for row in episodes:
        e, n = int(row["episode_index"]), int(row["length"])
        rel = raw_info["data_path"].format(episode_chunk=e // chunks, episode_index=e)
        _check_rows(root, rel, info, e, n, start, out)
        for key in info.video_keys:
            video = raw_info["video_path"].format(episode_chunk=e // chunks, video_key=key, episode_index=e)
            _check_video(root, video, info, key, e, n, out)
        start += n
    if stats is not None:
        have = {int(r["episode_index"]) for r in stats}
        lost = sorted({int(r["episode_index"]) for r in episodes} - have)
        if lost:
            out.append(Problem("stats", EPISODES_STATS_JSONL, f"no stats for episodes {lost[:10]}"
                                                             f"{' ...' if len(lost) > 10 else ''}"))
    return out


def _jsonl(root: Path, rel: str, keys: tuple[str, ...], out: list[Problem]) -> list[dict] | None:
    """The rows of a JSON-lines file, each an object with `keys`; None (and a problem) when unreadable."""
    path = root / rel
    if not path.is_file():
        out.append(Problem("file.missing", rel, "not found; a v2.1 dataset keeps its metadata in JSON lines"))
        return None
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        out.append(Problem("meta", rel, f"unreadable ({exc})"))
        return None
    for k, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            out.append(Problem("meta", rel, f"line {k} is not JSON ({exc})"))
            return None
        if not isinstance(row, dict) or any(key not in row for key in keys):
            out.append(Problem("meta", rel, f"line {k} must be an object with keys {list(keys)}"))
            return None
        rows.append(row)
    return rows


def _check_counts(info: DatasetInfo, raw: dict, episodes: list[dict], tasks: list[dict], out: list[Problem]) -> None:
    ids = [int(r["episode_index"]) for r in episodes]
    if ids != list(range(len(ids))):
        out.append(Problem("episodes.index", EPISODES_JSONL, f"episode_index must run 0..{len(ids) - 1} in order"))
    if len(ids) != info.total_episodes:
        out.append(Problem("count.episodes", INFO_PATH, f"total_episodes is {info.total_episodes} but "
                                                       f"{EPISODES_JSONL} has {len(ids)} episodes"))
    frames = sum(int(r["length"]) for r in episodes)
    if frames != info.total_frames:
        out.append(Problem("count.frames", INFO_PATH, f"total_frames is {info.total_frames} but the episodes' "
                                                     f"lengths sum to {frames}"))
    if len(tasks) != info.total_tasks:
        out.append(Problem("count.tasks", INFO_PATH, f"total_tasks is {info.total_tasks} but {TASKS_JSONL} "
                                                    f"has {len(tasks)} tasks"))
    known = {t["task"] for t in tasks}
    for r in episodes:
        unknown = [t for t in r["tasks"] if t not in known]
        if unknown:
            out.append(Problem("tasks", EPISODES_JSONL, f"episode {r['episode_index']}: tasks {unknown} are not "
                                                       f"in {TASKS_JSONL}"))
    videos = raw.get("total_videos")
    if videos is not None and videos != len(ids) * len(info.video_keys):
        out.append(Problem("count.videos", INFO_PATH, f"total_videos is {videos} but {len(ids)} episodes x "
                                                     f"{len(info.video_keys)} cameras make {len(ids) * len(info.video_keys)}"))


def _check_rows(root: Path, rel: str, info: DatasetInfo, e: int, n: int, start: int, out: list[Problem]) -> None:
    """Episode `e`'s parquet file: `n` rows of its features, its indices and timestamps."""
    if not (root / rel).is_file():
        out.append(Problem("file.missing", rel, f"data of episode {e} not found"))
        return
    try:
        table = pq.read_table(root / rel)
    except (OSError, pa.ArrowException) as exc:
        out.append(Problem("data", rel, f"unreadable parquet ({exc})"))
        return
    absent = [k for k, f in info.features.items() if f.dtype != "video" and k not in table.column_names]
    if absent:
        out.append(Problem("data.columns", rel, f"columns {absent} of info.json features are missing"))
        return
    if table.num_rows != n:
        out.append(Problem("count.frames", rel, f"{table.num_rows} rows but {EPISODES_JSONL} gives episode {e} "
                                                f"length {n}"))
        return
    col = {k: np.asarray(table.column(k).to_numpy()).reshape(-1) for k in INDEX_FEATURE_NAMES}
    checks = (("episode_index", col["episode_index"], np.full(n, e)), ("frame_index", col["frame_index"], np.arange(n)),
              ("index", col["index"], start + np.arange(n)))
    for name, got, want in checks:
        if not np.array_equal(got, want):
            k = int(np.argmax(got != want))
            out.append(Problem(f"data.{name}", rel, f"row {k}: {name} is {got[k]}, expected {want[k]}"))
    err = np.abs(col["timestamp"].astype(np.float64) - col["frame_index"] / info.fps)
    if err.size and err.max() > decode.TOLERANCE_S:
        k = int(np.argmax(err))
        out.append(Problem("data.timestamp", rel, f"row {k}: timestamp {col['timestamp'][k]:.6f} s, expected "
                                                  f"frame_index / fps = {col['frame_index'][k] / info.fps:.6f} s"))


def _check_video(root: Path, rel: str, info: DatasetInfo, key: str, e: int, n: int, out: list[Problem]) -> None:
    """Episode `e`'s mp4 of camera `key`: present, the feature's size, exactly `n` frames at 1 / fps."""
    if not (root / rel).is_file():
        out.append(Problem("file.missing", rel, f"video {key!r} of episode {e} not found"))
        return
    try:
        probe = decode.probe_video(root / rel)
    except (DemoforgeError, OSError, ValueError) as exc:
        out.append(Problem("video", rel, str(exc)))
        return
    h, w = info.features[key].shape[:2]
    if (probe.height, probe.width) != (h, w):
        out.append(Problem("video.size", rel, f"frames are {probe.height}x{probe.width} (HxW) but feature {key!r} "
                                              f"has shape {list(info.features[key].shape)}"))
    pts = np.sort(probe.pts_s)
    if pts.size != n:
        out.append(Problem("video.frames", rel, f"{pts.size} frames but episode {e} has {n}"))
        return
    err = np.abs(pts - pts[0] - np.arange(n) / info.fps) if n else np.zeros(0)
    if err.size and err.max() > decode.TOLERANCE_S:
        k = int(np.argmax(err))
        out.append(Problem("video.timestamps", rel, f"frame {k} is {pts[k] - pts[0]:.6f} s after the first, "
                                                    f"expected {k / info.fps:.6f} s"))
