"""What an export reads from a baked dataset: its parts, its convention, and which action parts
are absolute joint positions a trainer may turn into deltas from the state.

A trainer's "delta" (openpi's DeltaActions mask, GR00T's RELATIVE action representation) is
action[t + k, part] - state[t, part]: it only means something when the action part holds the
same joints as the state part, as positions. That is the case under joint_pos and
joint_target, and under raw_cmd when the law commands joint positions; never for velocities
(joint_vel), TCP displacements (raw_cmd under cartesian_delta) or an action kept as recorded,
whose meaning demoforge does not know. The gripper is absolute everywhere (closedness).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.convert.stamp import BAKE_PATH, read_stamp
from demoforge.dataset import segmentation
from demoforge.dataset.depth import PACKING, PACKING_FORMULA, DepthCoding, is_depth, metres_formula
from demoforge.dataset.keys import ACTION, STATE
from demoforge.dataset.layout import CODEBASE_VERSION, INFO_PATH
from demoforge.dataset.reader import DatasetReader, open_dataset
from demoforge.errors import DemoforgeError

# conventions whose arm action is an absolute joint position (raw_cmd: only under these law modes)
POSITION_CONVENTIONS = ("joint_pos", "joint_target")
POSITION_RAW_MODES = ("joint_position",)
ABSOLUTE_PARTS = ("gripper",)  # parts a trainer keeps absolute whatever the convention


class ExportError(DemoforgeError):
    """A dataset cannot be exported for a trainer, or an export option is invalid."""


@dataclass(frozen=True)
class BakedSource:
    """A baked v3.0 dataset as an export sees it."""

    root: Path
    reader: DatasetReader
    convention: str  # bake.json `convention`
    law_mode: str | None  # bake.json `control_law.mode`
    state_names: tuple[str, ...]
    action_names: tuple[str, ...]
    state_parts: dict[str, tuple[int, int]]  # part -> [start, end) of observation.state
    action_parts: dict[str, tuple[int, int]]  # part -> [start, end) of action
    relative_parts: tuple[str, ...]  # action parts that are positions of the same-named state part
    camera_keys: tuple[str, ...]  # video features, in info.json order
    depth_keys: tuple[str, ...] = ()  # the depth maps among them (12-bit codes; exported packed into RGB)
    segmentation_keys: tuple[str, ...] = ()  # the segmentation maps among them (id colours, dataset.segmentation)

    @property
    def rgb_keys(self) -> tuple[str, ...]:
        """The cameras that are pictures: neither depth nor segmentation maps."""
        return tuple(k for k in self.camera_keys if k not in self.depth_keys and k not in self.segmentation_keys)

    @property
    def delta_mask(self) -> tuple[bool, ...]:
        """Per action dimension: True where a trainer subtracts the state (a relative part)."""
        mask = [False] * len(self.action_names)
        for part in self.relative_parts:
            s, e = self.action_parts[part]
            mask[s:e] = [True] * (e - s)
        return tuple(mask)

    def episodes(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(state, action) of every episode in order, float32 (T, n) each; one episode in memory."""
        for i in self.reader.episode_indices:
            cols = self.reader.read_episode(i, [STATE, ACTION])
            yield cols[STATE].astype(np.float32), cols[ACTION].astype(np.float32)


def read_source(root: str | Path) -> BakedSource:
    """The baked dataset at `root`; ExportError naming the file, field and fix when it is not one."""
    root = Path(root)
    info_path = root / INFO_PATH
    if not info_path.is_file():
        raise ExportError(f"{root}: no {INFO_PATH}; give the root of a dataset written by `demoforge bake`")
    version = _json(info_path).get("codebase_version")
    if version != CODEBASE_VERSION:
        raise ExportError(f"{info_path}: codebase_version {version!r}; export reads the {CODEBASE_VERSION} output "
                          "of bake (it writes the v2.1 layout the trainers read itself): bake again without "
                          "--lerobot-format v2.1")
    stamp_path = root / BAKE_PATH
    if not stamp_path.is_file():
        raise ExportError(f"{root}: no {BAKE_PATH}, so what its actions mean (convention, parts) is unknown; "
                          f"bake it first: demoforge bake {root} --control-space joint_target --out BAKED")
    try:
        baked = read_stamp(root)
    except DemoforgeError as exc:
        raise ExportError(str(exc)) from None
    stamp = baked.raw
    reader = open_dataset(root)
    state_names, state_parts = _names_parts(stamp, "state", stamp_path)
    action_names, action_parts = _names_parts(stamp, "action", stamp_path)
    for key, names in ((STATE, state_names), (ACTION, action_names)):
        ft = reader.info.features.get(key)
        if ft is None or ft.shape != (len(names),):
            raise ExportError(f"{info_path}: feature {key!r} has shape {None if ft is None else list(ft.shape)}, "
                              f"but {BAKE_PATH} names {len(names)} components; the dataset was changed after "
                              "bake: bake it again")
    convention = baked.convention
    law_mode = (baked.control_law or {}).get("mode")
    positions = convention in POSITION_CONVENTIONS or (convention == "raw_cmd" and law_mode in POSITION_RAW_MODES)
    relative = tuple(p for p, (s, e) in action_parts.items()
                     if positions and p not in ABSOLUTE_PARTS and p in state_parts
                     and action_names[s:e] == state_names[slice(*state_parts[p])])
    return BakedSource(root=root, reader=reader, convention=str(convention), law_mode=law_mode,
                       state_names=state_names, action_names=action_names, state_parts=state_parts,
                       action_parts=action_parts, relative_parts=relative,
                       camera_keys=tuple(reader.info.video_keys),
                       depth_keys=tuple(k for k in reader.info.video_keys if is_depth(reader.info.features[k].info)),
                       segmentation_keys=tuple(k for k in reader.info.video_keys
                                               if segmentation.is_segmentation(k, reader.info.features[k].info)))


def maps_note(src: BakedSource, where: str) -> str:
    """A generated config's sentence on the maps the dataset carries but `where` does not feed the model."""
    if not (src.depth_keys or src.segmentation_keys):
        return ""
    parts = [f"segmentation maps {list(src.segmentation_keys)} (RGB id colours)"] if src.segmentation_keys else []
    if src.depth_keys:
        parts.append(f"depth maps {list(src.depth_keys)} (12-bit codes packed into RGB, code = 16 * R + G: "
                     "metres from demoforge.dataset.depth.unpack_rgb12; never colour-jitter or resize them)")
    return f"\nAlso in the dataset, not in {where}: " + " and ".join(parts) + ".\n"


def depth_stamp(src: BakedSource) -> dict[str, dict[str, Any]]:
    """export.json's record of the depth maps: per key, how its RGB frames become codes and metres."""
    out = {}
    for key in src.depth_keys:
        coding = DepthCoding.from_info(src.reader.info.features[key].info)
        out[key] = {"packing": PACKING, "codes": PACKING_FORMULA, "metres": metres_formula(coding),
                    "depth_min": coding.depth_min, "depth_max": coding.depth_max, "shift": coding.shift,
                    "use_log": coding.use_log,
                    "helper": "demoforge.dataset.depth.unpack_rgb12(frames, DepthCoding.from_info(feature info))"}
    return out


def _json(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ExportError(f"{path}: not a JSON file in UTF-8 ({exc}); restore it, or bake the dataset again") from None
    if not isinstance(obj, dict):
        raise ExportError(f"{path}: holds a JSON {type(obj).__name__}, not an object; bake the dataset again")
    return obj


def _names_parts(stamp: dict[str, Any], field: str, path: Path) -> tuple[tuple[str, ...], dict[str, tuple[int, int]]]:
    block = stamp.get(field)
    try:
        names = tuple(str(n) for n in block["names"])
        parts = {str(p): (int(s), int(e)) for p, (s, e) in block["parts"].items()}
    except (TypeError, KeyError, ValueError) as exc:
        raise ExportError(f"{path}: field {field!r} must hold 'names' and 'parts' ({{part: [start, end]}}), got "
                          f"{block!r} ({exc}); bake the dataset again") from None
    covered = sorted(parts.values())
    if not covered or covered[0][0] != 0 or covered[-1][1] != len(names) or \
            any(a[1] != b[0] for a, b in zip(covered, covered[1:])):
        raise ExportError(f"{path}: {field}.parts {parts} do not tile its {len(names)} names {list(names)}; "
                          "bake the dataset again")
    return names, parts
