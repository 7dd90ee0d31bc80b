"""A faithful reading of GR00T N1.6's dataset side, to check an export without GR00T.

GR00T is not installable here (not on PyPI). What is read, from NVIDIA/Isaac-GR00T at
15ce93d (2026-02-24):

- `gr00t/data/types.py`: ModalityConfig (with its action_configs check), ActionConfig and
  the enums, and `register_modality_config` (gr00t/configs/data/embodiment_configs.py), so
  the exported meta/demoforge_modality_config.py can be executed (`load_modality_config`);
- `gr00t/data/dataset/lerobot_episode_loader.py`: `LeRobotEpisodeLoader` metadata loading,
  `_load_parquet_data` (pandas; state/action parts sliced by modality.json, the task via
  `annotation.*` -> task_index -> tasks.jsonl), `_load_video_data` (the mp4 from info.json's
  video_path and the camera's original_key, frames by index) and `get_dataset_statistics`
  (`Episode`, `episode`, `dataset_statistics`);
- `gr00t/data/stats.py`: `check_stats_validity` and the relative action statistics of
  `RelativeActionLoader.load_relative_actions` + `calculate_stats_for_key`
  (`stats_valid`, `relative_action_stats`).

`episode` needs pandas (GR00T's own reader; the lerobot v2.1 venv has it); the rest needs
numpy only. Frames are decoded with torchcodec when it loads (GR00T's default backend), else
with PyAV, and `Episode.video_backend` says which.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

REGISTERED: dict[str, dict] = {}


class EmbodimentTag(enum.Enum):
    NEW_EMBODIMENT = "new_embodiment"


class ActionRepresentation(enum.Enum):
    RELATIVE = "relative"
    DELTA = "delta"
    ABSOLUTE = "absolute"


class ActionType(enum.Enum):
    EEF = "eef"
    NON_EEF = "non_eef"


class ActionFormat(enum.Enum):
    DEFAULT = "default"
    XYZ_ROT6D = "xyz+rot6d"
    XYZ_ROTVEC = "xyz+rotvec"


@dataclasses.dataclass
class ActionConfig:
    rep: ActionRepresentation
    type: ActionType
    format: ActionFormat
    state_key: str | None = None


@dataclasses.dataclass
class ModalityConfig:
    delta_indices: list[int]
    modality_keys: list[str]
    sin_cos_embedding_keys: list[str] | None = None
    mean_std_embedding_keys: list[str] | None = None
    action_configs: list[ActionConfig] | None = None

    def __post_init__(self):
        if self.action_configs is not None:
            assert len(self.action_configs) == len(self.modality_keys), (
                f"Number of action configs ({len(self.action_configs)}) must match number of modality keys "
                f"({len(self.modality_keys)})")


def register_modality_config(config: dict, embodiment_tag: EmbodimentTag = EmbodimentTag.NEW_EMBODIMENT):
    assert embodiment_tag.value not in REGISTERED, f"Embodiment tag {embodiment_tag} already registered"
    REGISTERED[embodiment_tag.value] = config


def load_modality_config(path: str | Path) -> dict[str, ModalityConfig]:
    """Execute the exported modality config file as GR00T's --modality_config_path does; returns what it registered."""
    mods = {
        "gr00t": {}, "gr00t.configs": {}, "gr00t.configs.data": {}, "gr00t.data": {},
        "gr00t.configs.data.embodiment_configs": {"register_modality_config": register_modality_config},
        "gr00t.data.embodiment_tags": {"EmbodimentTag": EmbodimentTag},
        "gr00t.data.types": {"ActionConfig": ActionConfig, "ActionFormat": ActionFormat,
                             "ActionRepresentation": ActionRepresentation, "ActionType": ActionType,
                             "ModalityConfig": ModalityConfig},
    }
    added = [name for name in mods if name not in sys.modules]
    for name, attrs in mods.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules.setdefault(name, module)
    REGISTERED.clear()
    try:
        spec = importlib.util.spec_from_file_location("modality_config", path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        for name in added:
            sys.modules.pop(name, None)
    return REGISTERED[EmbodimentTag.NEW_EMBODIMENT.value]


def _meta(root: Path, name: str) -> Any:
    path = root / "meta" / name
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in path.read_text().splitlines()]
    return json.loads(path.read_text())


@dataclasses.dataclass
class Episode:
    columns: dict[str, list]  # "state.<part>", "action.<part>", "language.<key>", "video.<camera>" -> per frame
    video_backend: str


def _frames(path: Path, indices: np.ndarray) -> tuple[np.ndarray, str]:
    try:
        import torchcodec.decoders

        decoder = torchcodec.decoders.VideoDecoder(str(path), device="cpu", dimension_order="NHWC",
                                                   num_ffmpeg_threads=0)
        return decoder.get_frames_at(indices=indices.tolist()).data.numpy(), "torchcodec"
    except (ImportError, RuntimeError, OSError):
        import av

        with av.open(str(path)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        return np.stack(frames)[indices], "pyav"


def episode(root: str | Path, config: dict[str, ModalityConfig], idx: int) -> Episode:
    """LeRobotEpisodeLoader(root, config)[idx]."""
    import pandas as pd

    root = Path(root)
    info, modality = _meta(root, "info.json"), _meta(root, "modality.json")
    episodes = _meta(root, "episodes.jsonl")
    tasks = {t["task_index"]: t["task"] for t in _meta(root, "tasks.jsonl")}
    assert (root / "meta" / "stats.json").exists(), "stats.json does not exist"
    meta = episodes[idx]
    ep, nominal = meta["episode_index"], meta["length"]
    chunk = ep // info["chunks_size"]
    df = pd.read_parquet(root / info["data_path"].format(episode_chunk=chunk, episode_index=ep))
    cols: dict[str, list] = {}
    for key in config["language"].modality_keys:
        assert key.startswith("annotation.")
        sub = key.replace("annotation.", "")
        assert sub in modality["annotation"], f"Key {sub} not found in language modality"
        original = modality["annotation"][sub].get("original_key", key)
        cols[f"language.{key}"] = [tasks[x] for x in df[original]]
    for kind, default in (("state", "observation.state"), ("action", "action")):
        for group in config[kind].modality_keys:
            info_g = modality[kind][group]
            original = info_g.get("original_key", default)
            assert isinstance(df[original].iloc[0], np.ndarray), f"{original} is not an array column"
            cols[f"{kind}.{group}"] = [x[info_g["start"]:info_g["end"]] for x in df[original]]
    n = min(len(df), nominal)
    cols = {k: v[:n] for k, v in cols.items()}
    backend = "none"
    for cam in config["video"].modality_keys if "video" in config else []:
        original = modality["video"][cam].get("original_key", f"observation.images.{cam}")
        assert original in info["features"], f"Original key {original} not found in feature config"
        path = root / info["video_path"].format(episode_chunk=chunk, video_key=original, episode_index=ep)
        frames, backend = _frames(path, np.arange(n))
        assert len(frames) == n, f"Video data for {cam} has length {len(frames)} but dataframe has length {n}"
        cols[f"video.{cam}"] = list(frames)
    return Episode(cols, backend)


def dataset_statistics(root: str | Path, config: dict[str, ModalityConfig]) -> dict:
    """LeRobotEpisodeLoader.get_dataset_statistics()."""
    root = Path(root)
    modality, stats = _meta(root, "modality.json"), _meta(root, "stats.json")
    rel = root / "meta" / "relative_stats.json"
    out: dict = {}
    for kind, default in (("state", "observation.state"), ("action", "action")):
        for group in config[kind].modality_keys:
            g = modality[kind][group]
            key = g.get("original_key") or default
            out.setdefault(kind, {})[group] = {t: stats[key][t][g["start"]:g["end"]] for t in stats[key]}
    if rel.exists():
        out["relative_action"] = json.loads(rel.read_text())
    return out


def stats_valid(root: str | Path) -> bool:
    """gr00t/data/stats.py check_stats_validity over the float features (generate_stats keeps a valid file)."""
    root = Path(root)
    features = [k for k, ft in _meta(root, "info.json")["features"].items() if "float" in ft["dtype"]]
    stats = _meta(root, "stats.json")
    needed = ("mean", "std", "min", "max", "q01", "q99")
    return all(isinstance(stats.get(f), dict) and all(s in stats[f] for s in needed) for f in features)


def relative_action_stats(states: list[np.ndarray], actions: list[np.ndarray], horizon: int) -> dict[str, np.ndarray]:
    """calculate_stats_for_key for one RELATIVE part (state delta_indices [0], action range(horizon)): per episode
    (state, action) arrays of that part."""
    trajectories = []
    for state, action in zip(states, actions):
        for i in range(len(action) - (horizon - 1)):
            trajectories.append(np.stack([action[i + k] - state[i] for k in range(horizon)]).astype(np.float32))
    return {"max": np.max(trajectories, axis=0), "min": np.min(trajectories, axis=0),
            "q01": np.quantile(trajectories, 0.01, axis=0), "q99": np.quantile(trajectories, 0.99, axis=0),
            "mean": np.mean(trajectories, axis=0), "std": np.std(trajectories, axis=0)}
