"""Episodes of a LeRobot v2.1 dataset (one parquet and one mp4 per episode; `demoforge.dataset.check_v21`).

Read as the v3 `lerobot` reader reads (`convert.episode.read_lerobot`): `observation.state`'s last
component is the gripper and the others the arm joints; `action` is kept as recorded; cameras are
referenced in their per-episode mp4s (their packets are copied, never decoded here); the other
per-tick columns are carried as `Episode.columns`. The dataset is checked first (`check_v21`):
a broken one is refused with every problem named.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from demoforge.convert.episode import BakeError, CameraRef, Episode, content_sha256
from demoforge.dataset.check import v21_info
from demoforge.dataset.check_v21 import EPISODES_JSONL, check_v21
from demoforge.dataset.keys import ACTION, STATE, decode_extra, EXTRA_PREFIX
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, INFO_PATH, CODEBASE_VERSION, DatasetInfo
from demoforge.dataset.reader import _to_numpy, read_parquet
from demoforge.errors import listing


def is_v21(path: str | Path) -> bool:
    """True for a folder whose info.json says codebase_version v2.1."""
    return Path(path).is_dir() and v21_info(Path(path)) is not None


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_lerobot_v21(path: str | Path) -> Iterator[Episode]:
    """The dataset's episodes in episodes.jsonl order, one at a time."""
    # One function: a generator whose refusals run before the first episode and whose loop turns one
    # episodes.jsonl row into one Episode; the loop is that one record's construction.
    root = Path(path)
    raw = v21_info(root)
    if raw is None:
        raise BakeError(f"{root / INFO_PATH}: not a LeRobot v2.1 info.json (codebase_version must be 'v2.1')")
    problems = check_v21(root, raw)
    if problems:
        raise BakeError(f"{root}: a LeRobot v2.1 dataset with {len(problems)} problem(s) (`demoforge dataset "
                        "check` lists them):" + listing(problems))
    info = DatasetInfo.from_json({**raw, "codebase_version": CODEBASE_VERSION}, source=str(root / INFO_PATH))
    packed = [k for k in info.video_keys if (info.features[k].info or {}).get("depth_packing")]
    if packed:  # RGB frames that are codes: baked as a camera they would be re-encoded lossily, the codes lost
        raise BakeError(f"{root / INFO_PATH}: {packed} hold depth codes packed into RGB "
                        f"({(info.features[packed[0]].info or {}).get('depth_packing')}, as `demoforge export` and "
                        "`bake --lerobot-format v2.1` write them), which bake cannot carry back as depth; bake the "
                        "LeRobot v3.0 dataset they were made from instead")
    if STATE not in info.features:
        raise BakeError(f"{root / INFO_PATH}: features has no {STATE!r}; bake needs [arm q..., gripper] there "
                        f"(it has {sorted(info.features)})")
    chunks = max(1, int(raw["chunks_size"]))
    for index, row in enumerate(_jsonl(root / EPISODES_JSONL)):
        i = int(row["episode_index"])
        tasks = row.get("tasks") or []
        if len(tasks) != 1:
            raise BakeError(f"{root / EPISODES_JSONL}: episode {i} has tasks {tasks}; bake needs exactly one")
        data = root / raw["data_path"].format(episode_chunk=i // chunks, episode_index=i)
        table = read_parquet(data)
        cols = {k: _to_numpy(table.column(k), info.features[k], data, k) for k in table.column_names
                if k in info.features and not info.features[k].is_visual}
        # images stored in the parquet (dtype "image") are not read: name them in the bake's notes
        images = [k for k in table.column_names if k in info.features and info.features[k].dtype == "image"]
        state = np.asarray(cols[STATE], dtype=np.float64)
        if state.ndim != 2 or state.shape[1] < 2:
            raise BakeError(f"{data}: {STATE!r} has shape {state.shape[1:]}; bake needs [arm q..., gripper]")
        n = state.shape[1] - 1
        names = info.features[STATE].names
        arm = tuple(names[:n]) if isinstance(names, list) and len(names) == n + 1 else \
            tuple(f"joint_{k}" for k in range(n))
        cameras = {}
        for key in info.video_keys:
            video = root / raw["video_path"].format(episode_chunk=i // chunks, video_key=key, episode_index=i)
            cameras[key] = CameraRef(key=key, path=video, from_timestamp=0.0, to_timestamp=len(state) / info.fps,
                                     feature=info.features[key])
        action, action_names = None, ()
        if ACTION in cols:
            action = np.asarray(cols[ACTION], dtype=np.float64).reshape(len(state), -1)
            an = info.features[ACTION].names
            action_names = tuple(map(str, an)) if isinstance(an, list) and len(an) == action.shape[1] else \
                tuple(f"action_{k}" for k in range(action.shape[1]))
        extra = {k[len(EXTRA_PREFIX):]: decode_extra(v) for k, v in sorted(row.items())
                 if k.startswith(EXTRA_PREFIX) and v is not None}
        if images:
            extra["not_read"] = images
        columns = {k: np.asarray(v) for k, v in cols.items()
                   if k not in (STATE, ACTION) and k not in INDEX_FEATURE_NAMES}
        yield Episode(
            source=root, index=index, reader="lerobot_v21", fps=info.fps, task=tasks[0],
            time=np.arange(len(state)) / info.fps, q=state[:, :n], gripper=state[:, n], joint_names=arm,
            target=None, target_gripper=None, raw_command=None, sim_state=None, law=None, cameras=cameras,
            outcome=extra.get("outcome"), extra=extra, sha256=content_sha256(cols, cameras), action=action,
            action_names=action_names, columns=columns,
        )
