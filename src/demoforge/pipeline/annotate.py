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
a warning and no goal features. Annotate is a stage run by `demoforge.stage.run_stage`
(contiguous runs of episodes as work items, shards merged in order), so a killed run resumes.

`goal.action` is a string feature (dtype "string", shape [1]: one text per frame, as
lerobot declares texts; it has no statistics). Frames before the first plan step are
"idle" with a NaN position.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from demoforge.dataset import DatasetWriter, EncodedVideo, Feature, open_dataset
from demoforge.dataset.keys import HISTOGRAM_PREFIX, episode_extras, image_key, row_extra
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INDEX_FEATURE_NAMES, INFO_PATH
from demoforge.dataset.tables import fsync_file
from demoforge.guard import guard_output_dir
from demoforge.pipeline.config import PipelineError
from demoforge.stage import (
    LocalExecutor, MergeAtEnd, Progress, ProgressEvent, chunks, merge_shards, publish_dataset, run_stage,
)

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


@dataclass(frozen=True)
class AnnotateStage:
    """Annotate as a stage (`demoforge.stage`): the source's episodes in contiguous work items,
    each annotated into its own shard; the shards are merged in order and moved to OUT."""

    source: Path
    has_camera: bool  # False: copied without goal features (the caller has warned)
    name: ClassVar[str] = "annotate"
    error: ClassVar[type] = PipelineError

    def episodes(self) -> list[int]:
        return open_dataset(self.source).episode_indices

    def parts(self) -> list[range]:
        return chunks(len(self.episodes()))

    def fingerprint(self) -> dict:
        info = hashlib.sha256((self.source / INFO_PATH).read_bytes()).hexdigest()
        return {"stage": "annotate", "source": str(self.source.resolve()), "info_sha256": info,
                "camera": CAMERA if self.has_camera else None}

    def items(self) -> list[str]:
        return [f"episodes-{r.start}-{r.stop - 1}" for r in self.parts()]

    def total(self) -> int:
        return len(self.episodes())

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        part, label = self.parts()[k], self.items()[k]
        root = shard / "data"
        shutil.rmtree(root, ignore_errors=True)  # an item is annotated whole: a killed one starts over
        episodes = self.episodes()[part.start:part.stop]
        _annotate(self.source, root, episodes, self.has_camera,
                  None if progress is None else (lambda: progress(ProgressEvent("annotate", "episode", label))))
        return {"episodes": len(episodes)}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        def merge(shards: list[Path], results: list[dict]) -> Path:
            merged = shards[0].parent.parent / "merged"  # in the work folder: OUT appears whole or not at all
            merge_shards(shards, merged)
            return publish_dataset(merged, out, self.name, self.fingerprint())

        return MergeAtEnd(merge)


def _annotate(source: Path, out: Path, episodes: list[int], has_camera: bool, on_episode) -> None:
    """Write `episodes` of `source` with goal.action and goal.position into the new root `out`."""
    reader = open_dataset(source)
    user = {k: f for k, f in reader.info.features.items() if k not in INDEX_FEATURE_NAMES}
    features = dict(user)
    if has_camera:
        h, w = user[image_key(CAMERA)].shape[:2]
        features[ACTION_KEY] = Feature("string", (1,))
        features[POSITION_KEY] = Feature("float32", (2,), names=["u", "v"])
    data_keys = [k for k, f in user.items() if f.dtype != "video"]
    with DatasetWriter.create(out, fps=reader.info.fps, features=features, robot_type=reader.info.robot_type) as wr:
        for i in episodes:
            row = reader.episode(i)
            cols = reader.read_episode(i, data_keys) if data_keys else {}
            if has_camera:
                actions, positions = episode_goals(source, i, row, w, h)
                cols[ACTION_KEY] = np.asarray(actions, dtype=object)
                cols[POSITION_KEY] = positions
            encoded = {k: EncodedVideo(path=reader.video_path(i, k), from_timestamp=row[f"videos/{k}/from_timestamp"],
                                       to_timestamp=row[f"videos/{k}/to_timestamp"],
                                       histogram=None if row.get(HISTOGRAM_PREFIX + k) is None
                                       else np.asarray(row[HISTOGRAM_PREFIX + k]))
                       for k in reader.info.video_keys}
            wr.add_episode(cols, task=row["tasks"][0], extra=episode_extras(row), encoded=encoded)
            if on_episode is not None:
                on_episode()


def _copy(source: Path, out: Path, fingerprint: dict) -> None:
    """A source without the camera has nothing to annotate: its dataset files are copied as they
    are (written and synced beside OUT, then moved into place), without the stages' records under
    meta/demoforge, as the stage's own writer would leave them. Rewriting every episode through
    shards cost ~1.5 s for 20 short episodes, against ~0.1 s."""
    tmp = out.with_name(f".{out.name}.annotate-copy")  # a fixed name: a rerun removes a killed copy
    shutil.rmtree(tmp, ignore_errors=True)
    records = source / DEMOFORGE_META_DIR
    shutil.copytree(source, tmp, ignore=lambda folder, names: [records.name] if Path(folder) == records.parent else [],
                    copy_function=_copy_synced)
    publish_dataset(tmp, out, "annotate", fingerprint)


def _copy_synced(src: str, dst: str) -> str:
    shutil.copyfile(src, dst)
    fsync_file(Path(dst))
    return dst


def annotate_dataset(source: str | Path, out: str | Path, *, warn: Callable[[str], None] = print,
                     workers: int = 1, progress: Progress | None = None, executor=None) -> dict:
    """Write `source` with goal.action and goal.position added into the new root `out`, with
    `run_stage` on `workers` local slots (or on `executor`); a killed run resumes from its
    finished shards in `.OUT.annotate-shards`."""
    source, out = Path(source), Path(out)
    guard_output_dir(out, [source], error=PipelineError)
    reader = open_dataset(source)
    camera_key = image_key(CAMERA)
    has_camera = camera_key in reader.info.video_keys
    stage = AnnotateStage(source, has_camera)
    if not has_camera:
        warn(f"annotate: {source} has no {camera_key} video; copied without goal.action/goal.position")
        _copy(source, out, stage.fingerprint())
        return {"annotated": False, "episodes": reader.num_episodes}
    if executor is not None:
        run_stage(stage, out, executor=executor, progress=progress)
    else:
        with LocalExecutor(max(1, min(workers, len(stage.parts())))) as local:
            run_stage(stage, out, executor=local, progress=progress)
    return {"annotated": has_camera, "episodes": reader.num_episodes}
