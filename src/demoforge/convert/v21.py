"""Write a finished v3.0 dataset out in the older LeRobot v2.1 layout.

v2.1 keeps one parquet and one mp4 per episode and its metadata in JSON lines
(`meta/episodes.jsonl`, `meta/tasks.jsonl`, `meta/episodes_stats.jsonl`); GR00T's
loader, the lerobot openpi pins and lerobot's v2.1 -> v3.0 converter read it. Rows are
copied from the v3 files and camera packets remuxed, so the two layouts hold the same
data. Every reader of v2.1 runs `datasets` <= 3.6, so the parquet schemas carry its
feature tags (`datasets3_schema`).

Those readers decode every video as 8-bit RGB, and a depth map's 12-bit codes (gray12le) do
not survive that; each depth map is therefore written with its codes packed into RGB
(`dataset.depth.pack_rgb12`), lossless like a segmentation map, under the same key, its info
block saying how to unpack (`depth_packing`, the coding) and its statistics those of the
packed pixels, as the readers see them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from demoforge.dataset.check_v21 import EPISODES_JSONL, EPISODES_STATS_JSONL, TASKS_JSONL, V21
from demoforge.dataset.decode import decode_at
from demoforge.dataset.depth import DepthCoding, is_depth, pack_rgb12, packed_info_block
from demoforge.dataset.keys import HISTOGRAM_PREFIX
from demoforge.dataset.layout import INFO_PATH, STATS_PATH
from demoforge.dataset.reader import DatasetReader, open_dataset, read_parquet
from demoforge.dataset.stats import histogram_stats
from demoforge.dataset.tables import write_parquet_atomic
from demoforge.dataset.remux import EncodedVideo, extract_segment
from demoforge.dataset.video import SegmentEncoder, VideoSettings
from demoforge.stage.protocol import Progress, ProgressEvent

V21_DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
V21_VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
V21_STATS_KEYS = ("min", "max", "mean", "std", "count")


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_v21(v3_root: str | Path, out: str | Path, *, progress: Progress | None = None) -> Path:
    """Write the v3.0 dataset at `v3_root` to the new root `out` in the v2.1 layout; `progress` takes
    a "v21" episode event after each episode's files are written."""
    ds = open_dataset(v3_root)
    rows = write_v21_episodes(ds, out, ds.episode_indices, progress=progress)
    return finish_v21(ds, out, rows)


def write_v21_episodes(ds: DatasetReader, out: str | Path, indices, *,
                       progress: Progress | None = None) -> list[dict]:
    """Write episodes `indices` of the open v3.0 dataset `ds` into `out` in the v2.1 layout (one
    parquet and one mp4 per camera each); returns their rows for `finish_v21` (the episodes.jsonl
    and episodes_stats.jsonl entries), in order, `progress` taking a "v21" episode event after each.
    Episodes written apart (a stage's work items) and finished together give the bytes of one
    `write_v21`."""
    out = Path(out)
    chunks = max(1, ds.info.chunks_size)
    videos = ds.info.video_keys
    rows = []
    cached: tuple[Path, pa.Table] | None = None  # the data file being split (episodes are in file order)
    for i in indices:
        row = ds.episode(i)
        chunk = i // chunks
        path = ds.data_path(i)
        if cached is None or cached[0] != path:
            cached = (path, read_parquet(path))
        table = cached[1].filter(pc.equal(cached[1].column("episode_index"), i))
        table = table.replace_schema_metadata(datasets3_schema(table.schema).metadata)
        write_parquet_atomic(out / V21_DATA_PATH.format(episode_chunk=chunk, episode_index=i), [table])
        packed = {}  # depth key -> (3, 256) counts of the packed pixels
        for key in videos:
            dst = out / V21_VIDEO_PATH.format(episode_chunk=chunk, video_key=key, episode_index=i)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if is_depth(ds.info.features[key].info):
                packed[key] = pack_depth_episode(ds, i, key, dst)
                continue
            hist = row.get(HISTOGRAM_PREFIX + key)
            src = EncodedVideo(ds.video_path(i, key), row[f"videos/{key}/from_timestamp"],
                               row[f"videos/{key}/to_timestamp"], None if hist is None else np.asarray(hist))
            extract_segment(src, dst, fps=ds.info.fps)
        stats = {}
        for key in ds.info.features:
            if key in packed:
                full = histogram_stats(packed[key], int(row["length"]))
                stats[key] = {k: full[k] for k in V21_STATS_KEYS}
            elif f"stats/{key}/min" in row:
                stats[key] = {k: _plain(row[f"stats/{key}/{k}"]) for k in V21_STATS_KEYS}
        rows.append({"episode": {"episode_index": i, "tasks": row["tasks"], "length": row["length"]},
                     "stats": {"episode_index": i, "stats": stats},
                     "packed_depth": {k: h.tolist() for k, h in packed.items()}})
        if progress is not None:
            progress(ProgressEvent("v21", "episode", f"episode {i}", len(rows), len(indices)))
    return rows


def finish_v21(ds: DatasetReader, out: str | Path, rows: list[dict]) -> Path:
    """The v2.1 metadata of `out`, whose episodes `write_v21_episodes` wrote (`rows`: theirs, in
    episode order): episodes, tasks and per-episode statistics as JSON lines, info.json, the
    dataset statistics and the v3.0 source's other meta files. Returns `out`."""
    v3_root, out = ds.root, Path(out)
    info = json.loads((v3_root / INFO_PATH).read_text())
    chunks = max(1, info["chunks_size"])
    videos = ds.info.video_keys
    _jsonl(out / EPISODES_JSONL, [r["episode"] for r in rows])
    _jsonl(out / TASKS_JSONL, [{"task_index": k, "task": t} for k, t in enumerate(ds.tasks)])
    _jsonl(out / EPISODES_STATS_JSONL, [r["stats"] for r in rows])
    for key in ("data_files_size_in_mb", "video_files_size_in_mb"):
        info.pop(key, None)
    n = ds.num_episodes
    info.update({
        "codebase_version": V21, "data_path": V21_DATA_PATH, "video_path": V21_VIDEO_PATH if videos else None,
        "total_chunks": (n - 1) // chunks + 1 if n else 0, "total_videos": n * len(videos),
    })
    depth = [k for k in videos if is_depth(ds.info.features[k].info)]
    for key in depth:
        feature = info["features"][key]
        h, w = ds.info.features[key].shape[:2]
        feature.update({"shape": [h, w, 3], "names": ["height", "width", "channels"],
                        "info": packed_info_block(DepthCoding.from_info(feature.get("info")), fps=ds.info.fps,
                                                  height=h, width=w, g=_gop(ds, key))})
    (out / INFO_PATH).write_text(json.dumps(info, indent=4))
    if depth:  # the packed pixels' statistics, exact from the episodes' packed histograms
        stats = json.loads((v3_root / STATS_PATH).read_text())
        frames = sum(int(r["episode"]["length"]) for r in rows)
        for key in depth:
            hist = sum(np.asarray(r["packed_depth"][key], np.int64) for r in rows)
            stats[key] = histogram_stats(hist, frames)
        (out / STATS_PATH).write_text(json.dumps(stats, indent=4))
    else:
        shutil.copy2(v3_root / STATS_PATH, out / STATS_PATH)
    for extra in sorted((v3_root / "meta").iterdir()):
        if extra.name.endswith(".json") and extra.name not in ("info.json", "stats.json"):
            shutil.copy2(extra, out / "meta" / extra.name)  # bake.json, modality.json
        elif extra.is_dir() and extra.name == "demoforge":
            shutil.copytree(extra, out / "meta" / extra.name)
    return out


def pack_depth_episode(ds: DatasetReader, i: int, key: str, dst: Path) -> np.ndarray:
    """Episode `i` of depth map `key` as RGB-packed codes (`pack_rgb12`) in a lossless gbrp mp4 at `dst`,
    keyframes as far apart as the source's; returns the (3, 256) counts of the packed pixels."""
    row, fps = ds.episode(i), ds.info.fps
    n = int(row["length"])
    codes = decode_at(ds.video_path(i, key), row[f"videos/{key}/from_timestamp"] + np.arange(n) / fps, raw=True)
    h, w = ds.info.features[key].shape[:2]
    enc = SegmentEncoder(dst, settings=VideoSettings(g=_gop(ds, key)), fps=fps, height=h, width=w, segmentation=True)
    try:
        enc.add_frames(pack_rgb12(codes))
        enc.close()
    except BaseException:
        enc.abort()
        raise
    return enc.histogram


def _gop(ds: DatasetReader, key: str) -> int:
    """The keyframe interval [frames] of video `key` (the source's; lerobot's default 2 when unsaid)."""
    return int(ds.info.features[key].info.get("video.g") or 2)


def datasets3_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with its `huggingface` features block as `datasets` 3.x reads it: vectors tagged
    `Sequence`. datasets >= 4 writes `List`, which 3.x rejects ("Feature type 'List' not found")
    and which lerobot <= 0.3 and openpi (datasets 3.6.0) therefore cannot load; 4.x still
    reads `Sequence`."""
    meta = dict(schema.metadata or {})
    if b"huggingface" in meta:
        meta[b"huggingface"] = json.dumps(_sequence_tags(json.loads(meta[b"huggingface"]))).encode()
    return schema.with_metadata(meta)


def _sequence_tags(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _sequence_tags(v) for k, v in node.items()}
        if out.get("_type") == "List":
            out["_type"] = "Sequence"
        return out
    if isinstance(node, list):
        return [_sequence_tags(v) for v in node]
    return node


def _plain(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value
