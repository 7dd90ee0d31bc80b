"""GR00T's side of an export: modality.json, relative_stats.json and a modality config module.

What GR00T N1.6 does with a LeRobot dataset (read from NVIDIA/Isaac-GR00T at 15ce93d,
2026-02-24, not run: GR00T is not installable from PyPI):

- `gr00t/data/dataset/lerobot_episode_loader.LeRobotEpisodeLoader` reads meta/info.json
  (`data_path`, `video_path`, `chunks_size`), meta/episodes.jsonl, meta/tasks.jsonl,
  meta/modality.json (state/action parts as [start, end) slices of observation.state and
  action, cameras by `original_key`, the task by `annotation.human.task_description` ->
  `task_index`), meta/stats.json (it asserts the file exists) and, if present,
  meta/relative_stats.json; one parquet and one mp4 per episode, frames by index.
- `gr00t/data/stats.py` (run by the training's dataset factory) keeps a stats.json that has
  mean, std, min, max, q01 and q99 for every float feature, and for every action part whose
  ActionConfig is RELATIVE adds to relative_stats.json the statistics (max, min, q01, q99,
  mean, std; each (horizon, n)) of action[i + k] - state[i] over every window i in
  range(length - horizon + 1) of every episode; episodes shorter than the horizon give none.
  Parts already in relative_stats.json are not computed again.
- The modality config is a Python file passed as `--modality_config_path` that calls
  `register_modality_config(config, embodiment_tag=EmbodimentTag.NEW_EMBODIMENT)`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.convert.modality import MODALITY_PATH, modality_json
from demoforge.dataset.keys import camera_of
from demoforge.dataset.layout import write_json_atomic
from demoforge.dataset.quantiles import streaming_stats
from demoforge.export.source import BakedSource, ExportError, depth_stamp, maps_note

# Depth and segmentation maps are carried and listed in modality.json (what the dataset holds: a
# user opts in by adding one to the modality config's "video" keys), but the config feeds the model
# the RGB cameras only. GR00T's loader decodes every video modality as 8-bit RGB, so depth is
# carried packed into RGB (R = code >> 4, G = code & 15; convert.v21): a model that takes it must
# unpack it first, and GR00T's image augmentations (colour jitter, resizing) would change its codes.
DEFAULT_HORIZON = 16  # the action delta_indices of GR00T's examples (SO100, PointNav)
RELATIVE_STATS = "meta/relative_stats.json"
CONFIG_MODULE = "meta/demoforge_modality_config.py"  # imported by name (importlib.import_module(stem)): a unique one
STAT_KEYS = ("max", "min", "q01", "q99", "mean", "std")  # gr00t/data/stats.py calculate_stats_for_key
LANGUAGE_KEY = "annotation.human.task_description"


def relative_windows(state: np.ndarray, action: np.ndarray, part: tuple[int, int], horizon: int) -> np.ndarray:
    """action[i + k, part] - state[i, part] for every full window i of one episode: (W, horizon * n) float32."""
    s, e = part
    windows = len(action) - horizon + 1
    if windows <= 0:
        return np.zeros((0, horizon * (e - s)), np.float32)
    idx = np.arange(windows)[:, None] + np.arange(horizon)[None, :]
    rel = action[idx, s:e] - state[:windows, None, s:e]
    return rel.reshape(windows, -1)


def relative_stats(src: BakedSource, horizon: int) -> dict[str, dict[str, list]]:
    """relative_stats.json: per relative action part, each statistic as a (horizon, n) list."""
    out = {}
    for name in sorted(src.relative_parts):
        part = src.action_parts[name]
        n = part[1] - part[0]
        stats = streaming_stats(lambda part=part: (relative_windows(s, a, part, horizon) for s, a in src.episodes()),
                                horizon * n)
        out[name] = {k: np.asarray(stats[k]).reshape(horizon, n).tolist() for k in STAT_KEYS}
    return out


def modality_config_module(src: BakedSource, *, horizon: int) -> str:
    """Python source of the GR00T modality config for this export."""
    cams = [camera_of(k) for k in src.rgb_keys]
    parts = list(src.action_parts)
    configs = "".join(
        "            ActionConfig(\n"
        f"                rep=ActionRepresentation.{'RELATIVE' if p in src.relative_parts else 'ABSOLUTE'},\n"
        "                type=ActionType.NON_EEF,\n"
        "                format=ActionFormat.DEFAULT,\n"
        "            ),\n" for p in parts)
    video = (f'    "video": ModalityConfig(delta_indices=[0], modality_keys={json.dumps(cams)}),\n' if cams else "")
    return f'''"""GR00T modality config for a demoforge export (written by `demoforge export gr00t`).

Pass it to GR00T's fine-tuning as --modality_config_path with --embodiment_tag NEW_EMBODIMENT
and this export as --dataset_path. Keys are those of meta/modality.json beside it.
Convention {src.convention!r}; action parts {parts}: {"RELATIVE ones are action minus state of the same joints "
"(meta/relative_stats.json holds their statistics for this horizon)" if src.relative_parts else
"all ABSOLUTE (not joint positions of the state's joints)"}.
{maps_note(src, 'the "video" keys (meta/modality.json lists them)')}"""

from gr00t.configs.data.embodiment_configs import register_modality_config
from gr00t.data.embodiment_tags import EmbodimentTag
from gr00t.data.types import ActionConfig, ActionFormat, ActionRepresentation, ActionType, ModalityConfig

ACTION_HORIZON = {horizon}  # relative_stats.json was computed for this horizon: change both together

demoforge_config = {{
{video}    "state": ModalityConfig(delta_indices=[0], modality_keys={json.dumps(list(src.state_parts))}),
    "action": ModalityConfig(
        delta_indices=list(range(ACTION_HORIZON)),
        modality_keys={json.dumps(parts)},
        action_configs=[
{configs}        ],
    ),
    "language": ModalityConfig(delta_indices=[0], modality_keys=["{LANGUAGE_KEY}"]),
}}

register_modality_config(demoforge_config, embodiment_tag=EmbodimentTag.NEW_EMBODIMENT)
'''


def check(src: BakedSource, horizon: int) -> int:
    """Refuse what GR00T cannot train on (only episodes shorter than the horizon)."""
    return short_episodes(src, horizon)


def short_episodes(src: BakedSource, horizon: int) -> int:
    """How many episodes are shorter than `horizon` (GR00T samples none of their frames); ExportError if all are."""
    lengths = [int(n) for n in src.reader.episodes_table.column("length").to_pylist()]
    short = sum(n < horizon for n in lengths)
    if short == len(lengths):
        raise ExportError(f"{src.root}: every episode is shorter than the action horizon {horizon} (longest "
                          f"{max(lengths, default=0)} frames); GR00T trains on none of them: lower "
                          "--action-horizon or bake at a higher --control-freq")
    return short


def write_gr00t(root: Path, src: BakedSource, *, horizon: int) -> dict[str, Any]:
    """Write modality.json, relative_stats.json and the config module under `root`; returns the stamp."""
    short = short_episodes(src, horizon)
    write_json_atomic(root / MODALITY_PATH, modality_json(src.state_parts, src.action_parts, list(src.camera_keys)))
    if src.relative_parts:
        write_json_atomic(root / RELATIVE_STATS, relative_stats(src, horizon))
    (root / CONFIG_MODULE).write_text(modality_config_module(src, horizon=horizon), encoding="utf-8")
    return {
        "modality": MODALITY_PATH,
        "relative_stats": RELATIVE_STATS if src.relative_parts else None,
        "config_module": CONFIG_MODULE,
        "relative_parts": list(src.relative_parts),
        "episodes_shorter_than_horizon": short,
        "segmentation_maps": list(src.segmentation_keys),  # in modality.json, not in the config's video keys
        "depth_maps": depth_stamp(src),  # packed into RGB; in modality.json, not in the config's video keys
    }
