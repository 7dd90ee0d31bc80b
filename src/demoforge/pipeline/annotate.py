"""Annotate: per-frame `goal.action` (the current operator in words, e.g. "pick pink") and
`goal.position` (the operator's target block in the front camera [px, (u, v)]).

    annotate_dataset("RUN/dataset/train", "RUN/annotated")

The position is projected from each frame's recorded physics state through the episode's
own camera: the scene is rebuilt from the episode's inputs, the episode's recorded look draw
is applied (it carries that copy's camera offsets), the state restored, and the block's
centre projected with the camera's intrinsics at the stored image size, so it is exact for
every look. The operator comes from the episode's recorded plan (`demoforge/plan`: each
step's operator, arguments and tick range); frames after the last step keep the last one.
Videos are copied (remuxed), never re-encoded. A dataset without the camera is copied with
a warning and no goal features.

`goal.action` is a string feature (dtype "string", shape [1]: one text per frame, as
lerobot declares texts; it has no statistics). Frames before the first plan step are
"idle" with a NaN position.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from demoforge.dataset import DatasetWriter, EncodedVideo, Feature, open_dataset
from demoforge.dataset.keys import HISTOGRAM_PREFIX, episode_extras, image_key, row_extra
from demoforge.dataset.layout import INDEX_FEATURE_NAMES
from demoforge.pipeline.config import PipelineError

ACTION_KEY = "goal.action"
POSITION_KEY = "goal.position"
CAMERA = "front"
# Operator words: the first argument is the block the operator moves (the target).
_WORDS: dict[str, Callable[..., str]] = {
    "pick-up": lambda b, *r: f"pick {b}",
    "unstack": lambda b, *r: f"unstack {b}" + (f" from {r[0]}" if r else ""),
    "stack": lambda b, *r: f"stack {b}" + (f" on {r[0]}" if r else ""),
    "put-down": lambda b, *r: f"put down {b}",
    "place-in-region": lambda b, *r: f"place {b}" + (f" in {r[0]}" if r else ""),
    "flip": lambda b, *r: f"flip {b}",
    "rotate": lambda b, *r: f"rotate {b}",
}


def operator_text(operator: str, args: list[str]) -> str:
    words = _WORDS.get(operator)
    return words(*args) if words and args else " ".join([operator, *args])


def frame_steps(plan: list[dict], length: int) -> list[dict | None]:
    """The plan step in force at each of `length` frames (None before any step starts)."""
    steps = sorted(plan, key=lambda s: s["ticks"][0])
    out: list[dict | None] = [None] * length
    for k, step in enumerate(steps):
        start = step["ticks"][0]
        end = steps[k + 1]["ticks"][0] if k + 1 < len(steps) else length
        for t in range(max(start, 0), min(end, length)):
            out[t] = step
    first = steps[0] if steps else None
    return [s if s is not None else first for s in out]


def episode_goals(root: Path, episode: int, row: dict, width: int, height: int) -> tuple[list[str], np.ndarray]:
    """goal.action texts and goal.position pixels (T, 2) float32 of one episode."""
    from demoforge.raw.replay import episode_scene, replay_states
    from demoforge.render import look_scene
    from demoforge.sim.cameras import intrinsics, project, world_T_camera

    scene = episode_scene(root, episode)
    look = row_extra(row, "look")
    if look is not None:
        scene = look_scene(scene, look)
    if CAMERA not in scene.cameras:
        raise PipelineError(f"{root} episode {episode}: the scene has no {CAMERA!r} camera")
    cam = scene.cameras[CAMERA]
    intr = intrinsics(scene.model, cam, width, height)
    plan = row_extra(row, "plan") or []
    steps = frame_steps(plan, int(row["length"]))
    actions, positions = [], []
    for t, sc in enumerate(replay_states(root, episode, scene)):
        step = steps[t]
        if step is None or not step["args"]:
            actions.append("idle")
            positions.append((np.nan, np.nan))
            continue
        actions.append(operator_text(step["operator"], step["args"]))
        body = sc.props[step["args"][0]]
        uv, _ = project(sc.data.xpos[body][None], intr, world_T_camera(sc.data, cam))
        positions.append(tuple(uv[0]))
    return actions, np.asarray(positions, np.float32)


def annotate_dataset(source: str | Path, out: str | Path, *, warn: Callable[[str], None] = print) -> dict:
    """Write `source` with goal.action and goal.position added into the new root `out`."""
    source, out = Path(source), Path(out)
    reader = open_dataset(source)
    user = {k: f for k, f in reader.info.features.items() if k not in INDEX_FEATURE_NAMES}
    camera_key = image_key(CAMERA)
    has_camera = camera_key in reader.info.video_keys
    features = dict(user)
    if has_camera:
        h, w = user[camera_key].shape[:2]
        features[ACTION_KEY] = Feature("string", (1,))
        features[POSITION_KEY] = Feature("float32", (2,), names=["u", "v"])
    else:
        warn(f"annotate: {source} has no {camera_key} video; copied without goal.action/goal.position")
    data_keys = [k for k, f in user.items() if f.dtype != "video"]
    goals = {i: episode_goals(source, i, reader.episode(i), w, h) for i in reader.episode_indices} if has_camera else {}
    with DatasetWriter.create(out, fps=reader.info.fps, features=features, robot_type=reader.info.robot_type) as wr:
        for i in reader.episode_indices:
            row = reader.episode(i)
            cols = reader.read_episode(i, data_keys) if data_keys else {}
            if has_camera:
                actions, positions = goals[i]
                cols[ACTION_KEY] = np.asarray(actions, dtype=object)
                cols[POSITION_KEY] = positions
            encoded = {k: EncodedVideo(path=reader.video_path(i, k), from_timestamp=row[f"videos/{k}/from_timestamp"],
                                       to_timestamp=row[f"videos/{k}/to_timestamp"],
                                       histogram=None if row.get(HISTOGRAM_PREFIX + k) is None
                                       else np.asarray(row[HISTOGRAM_PREFIX + k]))
                       for k in reader.info.video_keys}
            extra = episode_extras(row)
            wr.add_episode(cols, task=row["tasks"][0], extra=extra, encoded=encoded)
    return {"annotated": has_camera, "episodes": reader.num_episodes}
