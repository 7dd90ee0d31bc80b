"""Annotate: per-frame goal labels for training, from the recorded plan and physics states.

    annotate_dataset("RUN/dataset/train", "RUN/annotated")
    annotate_dataset("RUN/render/success", "RUN/annotated", native="RUN/execute/success")

Three features are added:

- `goal.action`: the operator in force, in words ("pick pink", "stack pink on white"): a string
  feature (dtype "string", shape [1], as lerobot declares texts; no statistics). It comes from
  the episode's recorded plan (`demoforge/plan`: each step's operator, arguments and native tick
  range); frames before the first step take the first step, frames after the last keep the last;
  an episode whose plan is empty is "idle".
- `goal.position`: float32 (2 x cameras,), names `<camera>.u`, `<camera>.v`: the centre of the
  operator's target block (its first argument) in each rendered camera [px; u right, v down from
  the image's top-left corner, pixel (i, j) covering u in [i, i + 1)].
- `goal.visible`: bool (cameras,), names `<camera>`: the centre lies in front of the camera
  (beyond its near clip plane) and inside the image. Occlusion does not count: a held block is
  hidden by the fingers through most of a grasp and a carry, and where it is is what the label
  is for; deciding occlusion would also need a depth render the render stage may not have made.
  In front of the camera but outside the image, the position is the projected pixel (off the
  image); behind the camera, or with no target, it is (-1, -1) (a pixel there is meaningless).

The cameras are the RGB streams the source has (`observation.images.<camera>`, not the depth or
segmentation ones), each at its own image size. A source without any is annotated with
goal.action alone, with a warning.

Each position is computed at the source's own rows from the row's recorded physics state
through the episode's own camera: the scene is rebuilt from the episode's inputs, the episode's
recorded look draw applied (it carries that copy's camera jitter or random pose, and field of
view), the state restored, and the block's centre projected with each camera's intrinsics at its
image size. The frame of a row was drawn from that state through that camera, so the label
matches the frame by construction, whatever the rate. A source rendered at every native tick is
annotated at every tick and the bake samples the labels like any column. A source whose rows are
the ticks a bake keeps (the pipeline's render of only the baked ticks, `pipeline.baked_render`)
is annotated at those rows: its states are the native ticks' own, copied by the bake, so the
labels equal those of annotating every tick and sampling, without projecting ticks the bake
drops; `native` names the raw dataset it was baked from, whose states place each row at its
native tick for the plan's tick ranges (and an episode record `bake_source` without `native` is
refused: the plan's ticks would be read as rows).

Videos are copied (remuxed), never re-encoded; the source's records under meta/demoforge come
along, so the annotated dataset bakes as its source does (`bake ANNOTATED` keeps the labels with
`--keep goal.action,goal.position,goal.visible`). Annotate is a stage run by
`demoforge.stage.run_stage` (contiguous runs of episodes as work items, shards merged in order),
so a killed run resumes and the bytes do not depend on the worker count.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from demoforge.dataset import DatasetReader, DatasetWriter, EncodedVideo, Feature, open_dataset
from demoforge.dataset.keys import HISTOGRAM_PREFIX, IMAGES_PREFIX, camera_of, episode_extras, image_key, row_extra
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, INFO_PATH
from demoforge.pipeline.config import PipelineError
from demoforge.pipeline.run_files import copy_source_meta
from demoforge.raw.schema import SIM_STATE
from demoforge.stage import (
    LocalExecutor, MergeAtEnd, Progress, ProgressEvent, chunks, merge_shards, publish_dataset, run_stage,
)

ACTION_KEY = "goal.action"
POSITION_KEY = "goal.position"
VISIBLE_KEY = "goal.visible"
LABEL_KEYS = (ACTION_KEY, POSITION_KEY, VISIBLE_KEY)
NO_PIXEL = (-1.0, -1.0)  # goal.position behind the camera or without a target (goal.visible is False)
IDLE = "idle"  # goal.action of an episode with an empty plan
BAKE_SOURCE = "bake_source"  # episode record a bake writes: where the rows were sampled from
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
    """The plan step in force at each of `length` native ticks (None only for an empty plan)."""
    steps = sorted(plan, key=lambda s: s["ticks"][0])
    out: list[dict | None] = [None] * length
    for k, step in enumerate(steps):
        start = step["ticks"][0]
        end = steps[k + 1]["ticks"][0] if k + 1 < len(steps) else length
        for t in range(max(start, 0), min(end, length)):
            out[t] = step
    first = steps[0] if steps else None
    return [s if s is not None else first for s in out]


def label_cameras(info) -> tuple[str, ...]:
    """The RGB cameras of a dataset's `info`, in video-key order (depth and segmentation streams left out)."""
    from demoforge.render.recorder import DEPTH_SUFFIX, SEGMENTATION_SUFFIX

    return tuple(camera_of(k) for k in info.video_keys
                 if k.startswith(IMAGES_PREFIX) and not k.endswith((DEPTH_SUFFIX, SEGMENTATION_SUFFIX)))


def label_features(cameras: tuple[str, ...]) -> dict[str, Feature]:
    """The features annotate adds for `cameras` (goal.action alone when there are none)."""
    out = {ACTION_KEY: Feature("string", (1,))}
    if cameras:
        out[POSITION_KEY] = Feature("float32", (2 * len(cameras),), names=[f"{c}.{a}" for c in cameras for a in "uv"])
        out[VISIBLE_KEY] = Feature("bool", (len(cameras),), names=list(cameras))
    return out


def native_ticks(native_states: np.ndarray, states: np.ndarray, where: str) -> np.ndarray:
    """The native tick of each row of `states`: the row of `native_states` holding the same physics
    state (a bake copies the states it keeps verbatim; the time in each makes every row unique)."""
    at = {row.tobytes(): t for t, row in enumerate(np.ascontiguousarray(native_states))}
    ticks = np.array([at.get(row.tobytes(), -1) for row in np.ascontiguousarray(states)], np.int64)
    missing = np.flatnonzero(ticks < 0)
    if missing.size:
        raise PipelineError(f"{where}: rows {missing[:5].tolist()} ({missing.size} in all) hold sim.state values the "
                            "native episode never recorded; pass as native the dataset these rows were baked from")
    if (np.diff(ticks) <= 0).any():
        raise PipelineError(f"{where}: the rows' native ticks {ticks.tolist()[:10]}... do not increase; the rows are "
                            "not a bake of the native episode")
    return ticks


def in_view(uv: np.ndarray, depth: np.ndarray, width: int, height: int, near: float) -> np.ndarray:
    """(N,) bool: pixels `uv` (N, 2) [px] at `depth` (N,) [m along the view axis] lie in front of the
    camera (beyond its near clip plane `near` [m]) and inside a `width` x `height` image."""
    u, v = uv[:, 0], uv[:, 1]
    with np.errstate(invalid="ignore"):
        return (depth > near) & (u >= 0) & (u < width) & (v >= 0) & (v < height)


def episode_actions(row: dict, ticks: np.ndarray, native_length: int, where: str) -> list[str]:
    """goal.action at the native `ticks` of an episode of `native_length` ticks."""
    plan = row_extra(row, "plan")
    if plan is None:
        raise PipelineError(f"{where}: no demoforge/plan record; annotate reads each episode's executed plan, so "
                            "annotate a demoforge raw (or rendered) dataset")
    steps = frame_steps(plan, native_length)
    return [IDLE if steps[t] is None else operator_text(steps[t]["operator"], steps[t]["args"]) for t in ticks]


def episode_positions(root: Path, episode: int, row: dict, cameras: tuple[str, ...],
                      sizes: dict[str, tuple[int, int]], targets: list[str | None],
                      reader: DatasetReader) -> tuple[np.ndarray, np.ndarray]:
    """goal.position (T, 2 x cameras) float32 and goal.visible (T, cameras) bool of one episode, from
    each row's recorded state through the episode's own cameras (`sizes`: camera -> (width, height)
    [px]; `targets`: the target block of each row, None for none)."""
    # lazy: the simulator, only for goal.position and goal.visible; annotate's other labels and names need none
    from demoforge.render import look_scene
    from demoforge.replay import episode_scene, replay_states
    from demoforge.sim.cameras import intrinsics, project, world_T_camera

    where = f"{root} episode {episode}"
    scene = episode_scene(root, episode)
    look = row_extra(row, "look")
    if look is not None:
        scene = look_scene(scene, look)
    missing = [c for c in cameras if c not in scene.cameras]
    if missing:
        raise PipelineError(f"{where}: the scene has no cameras {missing} for its videos; cameras: "
                            f"{sorted(scene.cameras)}; annotate a dataset rendered from this scene")
    unknown = sorted({t for t in targets if t is not None and t not in scene.props})
    if unknown:
        raise PipelineError(f"{where}: plan targets {unknown} are not objects of the scene ({sorted(scene.props)})")
    model = scene.model
    near = float(model.vis.map.znear * model.stat.extent)  # [m]: nothing closer is drawn
    ids = {c: scene.cameras[c] for c in cameras}
    intr = {c: intrinsics(model, ids[c], *sizes[c]) for c in cameras}
    length = len(targets)
    uv = np.full((length, len(cameras), 2), NO_PIXEL, np.float64)
    visible = np.zeros((length, len(cameras)), bool)
    for t, sc in enumerate(replay_states(root, episode, scene, reader)):
        if targets[t] is None:
            continue
        centre = sc.data.xpos[sc.props[targets[t]]][None]
        for k, c in enumerate(cameras):
            px, depth = project(centre, intr[c], world_T_camera(sc.data, ids[c]))
            if depth[0] > near:
                uv[t, k] = px[0]
                visible[t, k] = in_view(px, depth, intr[c].width, intr[c].height, near)[0]
    return uv.reshape(length, -1).astype(np.float32), visible


def episode_labels(root: Path, episode: int, reader: DatasetReader, cameras: tuple[str, ...],
                   native: DatasetReader | None = None) -> dict[str, np.ndarray]:
    """The label columns (`label_features(cameras)`) of episode `episode` of `root` (see the module
    docstring; `native`: the raw dataset the rows were baked from)."""
    row = reader.episode(episode)
    where = f"{root} episode {episode}"
    length = int(row["length"])
    baked_from = row_extra(row, BAKE_SOURCE)
    if native is None:
        if baked_from is not None:
            raise PipelineError(f"{where}: its rows were sampled by a bake ({BAKE_SOURCE} {baked_from}), so the "
                                "plan's tick ranges are not its rows; pass native= the dataset it was baked from")
        ticks, native_length = np.arange(length), length
    else:
        if baked_from is None or baked_from.get("source", 0) != 0:
            raise PipelineError(f"{where}: {BAKE_SOURCE} is {baked_from}; with native={native.root} every episode "
                                "must be baked from that one dataset (a bake's first source)")
        n = int(baked_from["episode_index"])
        if n not in native.episode_indices:
            raise PipelineError(f"{where}: {BAKE_SOURCE} names episode {n}, which {native.root} does not have")
        native_length = int(native.episode(n)["length"])
        ticks = native_ticks(native.read_episode(n, [SIM_STATE])[SIM_STATE],
                             reader.read_episode(episode, [SIM_STATE])[SIM_STATE], where)
    cols: dict[str, np.ndarray] = {ACTION_KEY: np.asarray(episode_actions(row, ticks, native_length, where),
                                                          dtype=object)}
    if cameras:
        steps = frame_steps(row_extra(row, "plan"), native_length)
        targets = [None if steps[t] is None or not steps[t]["args"] else steps[t]["args"][0] for t in ticks]
        sizes = {c: reader.info.features[image_key(c)].shape[1::-1] for c in cameras}  # (h, w, 3) -> (w, h)
        cols[POSITION_KEY], cols[VISIBLE_KEY] = episode_positions(root, episode, row, cameras, sizes, targets, reader)
    return cols


@dataclass(frozen=True)
class AnnotateStage:
    """Annotate as a stage (`demoforge.stage`): the source's episodes in contiguous work items,
    each annotated into its own shard; the shards are merged in order and moved to OUT."""

    source: Path
    cameras: tuple[str, ...]  # the RGB cameras labelled (none: goal.action alone; the caller has warned)
    native: Path | None = None  # the raw dataset the source's rows were baked from (None: they are its ticks)
    name: ClassVar[str] = "annotate"
    error: ClassVar[type] = PipelineError

    def episodes(self) -> list[int]:
        return open_dataset(self.source).episode_indices

    def parts(self) -> list[range]:
        return chunks(len(self.episodes()))

    def fingerprint(self) -> dict:
        def info(root: Path) -> str:
            return hashlib.sha256((root / INFO_PATH).read_bytes()).hexdigest()

        return {"stage": "annotate", "source": str(self.source.resolve()), "info_sha256": info(self.source),
                "cameras": list(self.cameras), "labels": list(label_features(self.cameras)),
                "native": None if self.native is None else {"root": str(self.native.resolve()),
                                                            "info_sha256": info(self.native)}}

    def inputs(self) -> tuple[Path, ...]:
        return (self.source,) if self.native is None else (self.source, self.native)

    def items(self) -> list[str]:
        return [f"episodes-{r.start}-{r.stop - 1}" for r in self.parts()]

    def total(self) -> int:
        return len(self.episodes())

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        part, label = self.parts()[k], self.items()[k]
        root = shard / "data"
        shutil.rmtree(root, ignore_errors=True)  # an item is annotated whole: a killed one starts over
        episodes = self.episodes()[part.start:part.stop]
        _annotate(self.source, root, episodes, self.cameras, self.native,
                  None if progress is None else (lambda: progress(ProgressEvent("annotate", "episode", label))))
        return {"episodes": len(episodes)}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        def merge(shards: list[Path], results: list[dict]) -> Path:
            merged = shards[0].parent.parent / "merged"  # in the work folder: OUT appears whole or not at all
            merge_shards(shards, merged)
            copy_source_meta(self.source, merged, keep=True)
            return publish_dataset(merged, out, self.name, self.fingerprint())

        return MergeAtEnd(merge)


def _annotate(source: Path, out: Path, episodes: list[int], cameras: tuple[str, ...], native: Path | None,
              on_episode) -> None:
    """Write `episodes` of `source` with the label columns into the new root `out`."""
    reader = open_dataset(source)
    native_reader = None if native is None else open_dataset(native)
    user = {k: f for k, f in reader.info.features.items() if k not in INDEX_FEATURE_NAMES}
    features = {**user, **label_features(cameras)}
    data_keys = [k for k, f in user.items() if f.dtype != "video"]
    with DatasetWriter.create(out, fps=reader.info.fps, features=features, robot_type=reader.info.robot_type) as wr:
        for i in episodes:
            row = reader.episode(i)
            cols = reader.read_episode(i, data_keys) if data_keys else {}
            cols.update(episode_labels(source, i, reader, cameras, native_reader))
            encoded = {k: EncodedVideo(path=reader.video_path(i, k), from_timestamp=row[f"videos/{k}/from_timestamp"],
                                       to_timestamp=row[f"videos/{k}/to_timestamp"],
                                       histogram=None if row.get(HISTOGRAM_PREFIX + k) is None
                                       else np.asarray(row[HISTOGRAM_PREFIX + k]))
                       for k in reader.info.video_keys}
            wr.add_episode(cols, task=row["tasks"][0], extra=episode_extras(row), encoded=encoded)
            if on_episode is not None:
                on_episode()


def annotate_dataset(source: str | Path, out: str | Path, *, native: str | Path | None = None,
                     warn: Callable[[str], None] = print, workers: int = 1, progress: Progress | None = None,
                     executor=None) -> dict:
    """Write `source` with the goal labels added into the new root `out`, with `run_stage` on
    `workers` local slots (or on `executor`); a killed run resumes from its finished shards in
    `.OUT.annotate-shards`. `native`: the raw dataset `source`'s rows were baked from (see the
    module docstring)."""
    source, out = Path(source), Path(out)
    native = None if native is None else Path(native)
    reader = open_dataset(source)
    clash = sorted(set(LABEL_KEYS) & set(reader.info.features))
    if clash:
        raise PipelineError(f"{source}: already has {clash}; annotate the dataset they were not added to")
    cameras = label_cameras(reader.info)
    if not cameras:
        warn(f"annotate: {source} has no camera video ({IMAGES_PREFIX}<camera>); {ACTION_KEY} only, no "
             f"{POSITION_KEY}/{VISIBLE_KEY} (render the dataset to have them)")
    stage = AnnotateStage(source, cameras, native)
    if executor is not None:
        run_stage(stage, out, executor=executor, progress=progress)
    else:
        with LocalExecutor(max(1, min(workers, len(stage.parts())))) as local:
            run_stage(stage, out, executor=local, progress=progress)
    return {"annotated": True, "episodes": reader.num_episodes, "cameras": list(cameras),
            "rows": "baked ticks" if native is not None else "every tick"}
