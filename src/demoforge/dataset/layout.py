"""The LeRobot v3.0 on-disk layout: path templates, feature records and info.json.

Mirrors what the real lerobot 0.6.1 writes (see lerobot/datasets/utils.py there).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demoforge.errors import DatasetError

CODEBASE_VERSION = "v3.0"
DEFAULT_CHUNKS_SIZE = 1000  # files per chunk folder
DEFAULT_DATA_FILE_SIZE_MB = 100
DEFAULT_VIDEO_FILE_SIZE_MB = 200
DEFAULT_VIDEO_FILE_DURATION_S = 800.0  # lerobot's float32 timestamp check fails past ~1024 s

INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
STATS_EXACT_PATH = "meta/stats.exact.json"  # the exact statistics where stats.json is floored (bake --std-floor)
TASKS_PATH = "meta/tasks.parquet"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
DEMOFORGE_META_DIR = "meta/demoforge"

# The five index features every v3 dataset has, in lerobot's order.
INDEX_FEATURE_NAMES = ("timestamp", "frame_index", "episode_index", "index", "task_index")

STATS_KEYS = ("min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99")
QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}

NUMERIC_DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
VISUAL_DTYPES = ("video", "image")
ALL_DTYPES = NUMERIC_DTYPES + VISUAL_DTYPES + ("string",)


@dataclass(frozen=True)
class Feature:
    """One entry of info.json's `features`."""

    dtype: str  # one of ALL_DTYPES
    shape: tuple[int, ...]  # per-frame shape; (H, W, 3) for video
    names: Any = None  # list of names, a dict of axis -> names, or None
    info: dict[str, Any] | None = None  # video settings block, video features only

    @property
    def is_visual(self) -> bool:
        return self.dtype in VISUAL_DTYPES

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dtype": self.dtype, "shape": list(self.shape), "names": self.names}
        if self.info is not None:
            out["info"] = self.info
        return out

    @staticmethod
    def from_json(key: str, raw: dict[str, Any], *, source: str = "features") -> "Feature":
        if not isinstance(raw, dict):
            raise DatasetError(f"{source}: feature {key!r} is {raw!r:.40}; it must be a mapping with dtype and shape")
        problems = []
        dtype = raw.get("dtype")
        if dtype not in ALL_DTYPES:
            problems.append(f"dtype {dtype!r} is not one of {list(ALL_DTYPES)}")
        shape = raw.get("shape")
        if not isinstance(shape, (list, tuple)) or not all(isinstance(s, int) and s > 0 for s in shape):
            problems.append(f"shape {shape!r} must be a list of positive integers")
        if problems:
            raise DatasetError(f"{source}: feature {key!r}: " + "; ".join(problems))
        return Feature(dtype=dtype, shape=tuple(shape), names=raw.get("names"), info=raw.get("info"))


def index_features() -> dict[str, Feature]:
    return {
        "timestamp": Feature("float32", (1,)),
        "frame_index": Feature("int64", (1,)),
        "episode_index": Feature("int64", (1,)),
        "index": Feature("int64", (1,)),
        "task_index": Feature("int64", (1,)),
    }


@dataclass(frozen=True)
class DatasetInfo:
    """meta/info.json as a typed record."""

    fps: int  # frames per second [Hz]
    features: dict[str, Feature]  # user features followed by the index features
    robot_type: str | None = None
    total_episodes: int = 0
    total_frames: int = 0
    total_tasks: int = 0
    chunks_size: int = DEFAULT_CHUNKS_SIZE
    data_files_size_in_mb: int = DEFAULT_DATA_FILE_SIZE_MB
    video_files_size_in_mb: int = DEFAULT_VIDEO_FILE_SIZE_MB
    codebase_version: str = CODEBASE_VERSION
    data_path: str = DATA_PATH
    video_path: str | None = VIDEO_PATH
    splits: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys kept verbatim

    @property
    def video_keys(self) -> list[str]:
        return [k for k, f in self.features.items() if f.dtype == "video"]

    @property
    def data_keys(self) -> list[str]:
        """Features stored in the data parquet files (everything but video)."""
        return [k for k, f in self.features.items() if f.dtype != "video"]

    def to_json(self) -> dict[str, Any]:
        out = {
            "codebase_version": self.codebase_version,
            "fps": self.fps,
            "features": {k: f.to_json() for k, f in self.features.items()},
            "total_episodes": self.total_episodes,
            "total_frames": self.total_frames,
            "total_tasks": self.total_tasks,
            "chunks_size": self.chunks_size,
            "data_files_size_in_mb": self.data_files_size_in_mb,
            "video_files_size_in_mb": self.video_files_size_in_mb,
            "data_path": self.data_path,
            "video_path": self.video_path if self.video_keys else None,
            "robot_type": self.robot_type,
            "splits": self.splits,
        }
        out.update(self.extra)
        return out

    @staticmethod
    def from_json(raw: dict[str, Any], *, source: str = INFO_PATH) -> "DatasetInfo":
        known = {
            "codebase_version", "fps", "features", "total_episodes", "total_frames", "total_tasks",
            "chunks_size", "data_files_size_in_mb", "video_files_size_in_mb", "data_path",
            "video_path", "robot_type", "splits",
        }
        missing = [k for k in ("codebase_version", "fps", "features") if k not in raw]
        if missing:
            raise DatasetError(f"{source}: missing required keys {missing}")
        if raw["codebase_version"] != CODEBASE_VERSION:
            raise DatasetError(
                f"{source}: codebase_version {raw['codebase_version']!r} is not {CODEBASE_VERSION!r}; "
                "convert older datasets with lerobot's convert_dataset_v21_to_v30 first"
            )
        if not isinstance(raw["features"], dict) or not raw["features"]:
            raise DatasetError(f"{source}: field 'features' is {_short(raw['features'])}; it must be a non-empty "
                               "mapping of feature name to {dtype, shape, names}")
        return DatasetInfo(
            fps=_count(raw, "fps", None, source, low=1),
            features={k: Feature.from_json(k, v, source=source) for k, v in raw["features"].items()},
            robot_type=raw.get("robot_type"),
            total_episodes=_count(raw, "total_episodes", 0, source),
            total_frames=_count(raw, "total_frames", 0, source),
            total_tasks=_count(raw, "total_tasks", 0, source),
            chunks_size=_count(raw, "chunks_size", DEFAULT_CHUNKS_SIZE, source, low=1),
            data_files_size_in_mb=raw.get("data_files_size_in_mb", DEFAULT_DATA_FILE_SIZE_MB),
            video_files_size_in_mb=raw.get("video_files_size_in_mb", DEFAULT_VIDEO_FILE_SIZE_MB),
            codebase_version=raw["codebase_version"],
            data_path=raw.get("data_path", DATA_PATH),
            video_path=raw.get("video_path"),
            splits=dict(raw.get("splits") or {}),
            extra={k: v for k, v in raw.items() if k not in known},
        )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(raw: dict, key: str, default: int | None, source: str, *, low: int = 0) -> int:
    """`raw[key]` as an integer >= `low` (JSON numbers like 30.0 too); else a DatasetError naming it."""
    value = raw.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise DatasetError(f"{source}: field {key!r} is {_short(value)}; it must be an integer >= {low} (restore the "
                           "file from the dataset's source, or rewrite the dataset)")
    return value


def read_info(root: str | Path) -> DatasetInfo:
    path = Path(root) / INFO_PATH
    if not path.is_file():
        raise DatasetError(f"{path}: not found; is {root} a LeRobot v3 dataset root?")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not valid UTF-8 JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise DatasetError(f"{path}: holds {_short(raw)}, not a JSON object")
    return DatasetInfo.from_json(raw, source=str(path))


def write_json_atomic(path: Path, obj: Any, *, indent: int | None = 4) -> None:
    """Write JSON to a temporary name, fsync, and rename into place (`indent=None`: compact,
    several times faster to encode; for internal records nobody reads by eye)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(obj, indent=indent))
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except BaseException:  # a full disk or a kill signal's exception: no half-written record is left
        tmp.unlink(missing_ok=True)
        raise


def chunk_file(index: int, chunks_size: int) -> tuple[int, int]:
    """File number `index` (0-based, in write order) -> (chunk_index, file_index)."""
    return index // chunks_size, index % chunks_size
