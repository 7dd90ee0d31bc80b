"""The render stage: a raw dataset in, a new dataset with camera videos out.

For every source episode, every look and every copy of it, the episode's model is rebuilt
(`demoforge.replay.episode_scene`), a look draw is made (`sample.draw_look`, seeded by run
seed, look name, source episode and copy), the recorded physics states are set tick by tick
(`replay_states`, no stepping) and the cameras are drawn. The output holds the source's
columns and episode records plus `observation.images.<camera>` videos (and `_depth`,
`_segmentation` on request) and the draw in the episode column `demoforge/look`. With a
reference video template (`--reference-video`), each episode also records its reference video
path (`demoforge/reference_video`, see `reference_video_path`).
Output episodes are in canonical order: source episode, then look (command-line order), then
copy. The source is never modified.

Speed: the main thread of a worker only replays and renders; a writer thread takes each
frame from a short queue and encodes and writes it (x264 and numpy release the GIL), so
rendering and encoding overlap. The render is a stage run by `demoforge.stage.run_stage`: the
canonical order is cut into contiguous work items (independent of the worker count), each
rendered into its shard in `.OUT.render-shards/` by one of `workers` slots, and the shards are
merged in order, so the result is the same bytes for any worker count. A killed run continues
where it stopped when run again with the same arguments (finished shards are kept, and the
finished episodes of interrupted ones); another render's shards there are discarded.
`render_part` and `publish_render` make the same bytes from parts rendered elsewhere, each a run of
consecutive source episodes at its offset (the pipeline's pipelined schedule renders each problem's
episodes before the generated split is merged: `demoforge.pipeline.pipelined`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import ClassVar

from demoforge.dataset import DatasetWriter, open_dataset
from demoforge.dataset.keys import episode_extras, extra_column
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INDEX_FEATURE_NAMES, INFO_PATH
from demoforge.dataset.writer import STAGING_DIR
from demoforge.render.apply import look_targets
from demoforge.render.canvas import Canvas, blank_model
from demoforge.render.config import (
    OUTPUT_FIELDS, RenderConfig, check_config, local_workers, reference_video_path, resolve_looks,
)
from demoforge.render.look import LookError
from demoforge.render.recorder import LOOK_EXTRA, CameraRecorder
from demoforge.render.sample import draw_look, look_seed
from demoforge.render.writer_thread import WriterThread
from demoforge.replay import episode_scene, replay_states
from demoforge.stage import (
    LocalExecutor, MergeAtEnd, Progress, ProgressEvent, chunks, merge_shards, publish_dataset, run_stage,
)

RENDER_META = "render.json"
MARKER = ".demoforge-render"  # beside the writer's staging: the fingerprint of the render being written
SOURCE_EXTRA = "render_source"  # per-episode column: {"episode_index": source episode, "look": name, "copy": k}
REFERENCE_EXTRA = "reference_video"  # per-episode column: the episode's reference video path (a JSON string)


@dataclass(frozen=True)
class RenderSummary:
    """What a render stage wrote."""

    root: Path  # the new dataset
    episodes: int  # output episodes
    frames: int  # output frames (per camera stream)
    seconds: float  # wall-clock time [s]


def _items(source: Path, config: RenderConfig) -> list[tuple[int, int, int, int]]:
    """(source episode, look index, copy, length) in canonical order."""
    reader = open_dataset(source)
    lengths = dict(zip(reader.episodes_table.column("episode_index").to_pylist(),
                       reader.episodes_table.column("length").to_pylist(), strict=True))
    chosen = reader.episode_indices
    if config.episodes is not None:
        missing = sorted(set(config.episodes) - set(chosen))
        if missing or not config.episodes:
            raise LookError(f"{source}: --episodes {list(config.episodes)}: "
                            + (f"no episodes {missing} in the dataset; " if missing else "none given; ")
                            + f"it has {len(chosen)} episodes, indices {min(chosen, default=0)}..{max(chosen, default=-1)}")
        chosen = [i for i in chosen if i in set(config.episodes)]
    # Draws are keyed by source episode, so a subset renders exactly as in a full run.
    return [(i, k, c, int(lengths[i])) for i in chosen for k, req in enumerate(config.looks) for c in range(req.copies)]


def _render_shard(source: Path, root: Path, items: list, config: RenderConfig, fingerprint: str,
                  progress: Progress | None = None, first: int = 0, offset: int = 0,
                  extras: Callable[[dict], dict] = episode_extras) -> None:
    """Render `items` into a new dataset at `root`, or continue an interrupted one there;
    `progress` takes a "render" episode event after each episode is written, `done` counting those
    of this shard. `first`: the output episode index of `items[0]` in the merged dataset. `offset`:
    what `source`'s episode 0 is in the dataset whose render this is (its look draws, render_source
    and reference paths name that episode); `extras(row)`: an episode row's records as that dataset
    has them."""
    # One function: the scene prefetch thread, the GL canvas, the writer thread and the dataset writer
    # share one lifetime, opened here and released in one try/finally; split, each piece would need them all.
    if (root / INFO_PATH).is_file():
        return  # finished before the run was interrupted
    reader = open_dataset(source)
    data_keys = [k for k in reader.info.features if k not in INDEX_FEATURE_NAMES]
    recorder: CameraRecorder | None = None
    scene, scene_of = None, None
    writer = None
    total = len(items)
    if (root / STAGING_DIR).is_dir():
        writer = DatasetWriter.resume(root)  # finished episodes are kept; go on after them
        items = items[writer.num_episodes:]
        first += writer.num_episodes
    if not items:
        writer.finalize()
        (root / MARKER).unlink(missing_ok=True)
        return
    # The next episode's model is built (PDDL parse, compile) while this one renders.
    episodes = list(dict.fromkeys(it[0] for it in items))
    prefetch = ThreadPoolExecutor(max_workers=1, thread_name_prefix="episode-scene")
    problems: dict = {}  # each problem's PDDL parsed once (the prefetch thread's alone)
    upcoming = {episodes[0]: prefetch.submit(episode_scene, source, episodes[0], problems)}
    look0 = config.looks[items[0][1]].look
    sizes = [look0.image_size(c) for c in config.cameras]
    width, height = max(w for w, _ in sizes), max(h for _, h in sizes)
    canvas = Canvas(blank_model(width, height), width, height)  # GL starts meanwhile
    lane = WriterThread()

    def report(item: str) -> None:  # on the writer's thread, after the episode is written
        progress(ProgressEvent("render", "episode", item, writer.num_episodes, total))

    try:
        for n, (episode, k, copy, _) in enumerate(items, start=first):
            look = config.looks[k].look
            if scene_of != episode:
                scene, scene_of = upcoming.pop(episode).result(), episode
                after = episodes.index(episode) + 1
                if after < len(episodes):
                    upcoming[episodes[after]] = prefetch.submit(episode_scene, source, episodes[after], problems)
            draw = draw_look(look, look_seed(config.seed, look.name, offset + episode, copy), look_targets(scene))
            if recorder is None:
                recorder = CameraRecorder(scene, draw, config.cameras, depth=config.depth, canvas=canvas,
                                          segmentation=config.segmentation, depth_range_m=config.depth_range_m)
            else:
                recorder.bind(scene, draw)
            if writer is None:
                features = {k2: reader.info.features[k2] for k2 in data_keys}
                writer = DatasetWriter.create(root, fps=reader.info.fps, features={**features, **recorder.features()},
                                              robot_type=reader.info.robot_type, video=config.video)
                (root / MARKER).write_text(fingerprint, encoding="utf-8")
            row = reader.episode(episode)
            columns = reader.read_episode(episode, data_keys)
            task = row["tasks"][0]
            for t, _ in enumerate(replay_states(source, episode, recorder.scene, reader)):
                frame = {**{key: columns[key][t] for key in data_keys}, **recorder.render()}
                lane.put(functools.partial(writer.add_frame, frame, task=task))
            extra = {**extras(row), LOOK_EXTRA: draw,
                     SOURCE_EXTRA: {"episode_index": int(offset + episode), "look": look.name, "copy": int(copy)}}
            if config.reference_video is not None:
                extra[REFERENCE_EXTRA] = reference_video_path(config.reference_video, n, offset + episode)
            lane.put(functools.partial(writer.save_episode, extra=extra))
            if progress is not None:
                lane.put(functools.partial(report, f"episode {episode}"))
        lane.join()
        writer.finalize()
        (root / MARKER).unlink(missing_ok=True)
    except BaseException as exc:
        try:
            lane.join()  # the writer must be idle before it is closed
        except BaseException:  # noqa: BLE001 - the first failure is the one raised
            pass
        if writer is not None:
            writer.__exit__(type(exc), exc, exc.__traceback__)  # keep finished episodes, release the lock
        raise
    finally:
        prefetch.shutdown(wait=True, cancel_futures=True)
        canvas.close()


def _check_source(source: Path) -> None:
    info = open_dataset(source).info
    if info.video_keys:
        raise LookError(f"{source}: already has video features {info.video_keys}; render a state-only raw "
                        "dataset (render its source again to add cameras)")
    names = open_dataset(source).episodes_table.column_names
    for name in (LOOK_EXTRA, SOURCE_EXTRA, REFERENCE_EXTRA):
        if extra_column(name) in names:
            raise LookError(f"{source}: episodes already carry {extra_column(name)}; render the raw source instead")


def _fingerprint(source: Path, config: RenderConfig, shards: int) -> str:
    """What an interrupted run must share with this one to be continued."""
    record = {"source": hashlib.sha256((source / INFO_PATH).read_bytes()).hexdigest(), "shards": shards,
              "config": {k: v for k, v in asdict(config).items() if k in OUTPUT_FIELDS}}
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=list).encode()).hexdigest()


def _finished(out: Path, fingerprint: str) -> bool:
    """`out` is a finished render of the same source with the same config."""
    record = out / DEMOFORGE_META_DIR / RENDER_META
    if not record.is_file() or (out / STAGING_DIR).exists():
        return False
    try:
        return json.loads(record.read_text(encoding="utf-8")).get("fingerprint") == fingerprint
    except (ValueError, UnicodeDecodeError, AttributeError):
        return False


def _copy_meta(source: Path, out: Path, config: RenderConfig, items: list) -> None:
    src, dst = source / DEMOFORGE_META_DIR, out / DEMOFORGE_META_DIR
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "merge.json").unlink(missing_ok=True)  # shard bookkeeping, not part of the result
    if src.is_dir():
        for path in sorted(src.iterdir()):
            if path.name in ("merge.json", RENDER_META):
                continue
            if path.is_dir():
                shutil.copytree(path, dst / path.name, dirs_exist_ok=True)  # a rerun of an interrupted merge
            else:
                shutil.copy2(path, dst / path.name)
    record = {
        "fingerprint": _fingerprint(source, config, 0),  # what a rerun compares to find the render finished
        "source": {"root": str(source.resolve()), "info_sha256": hashlib.sha256((source / INFO_PATH).read_bytes()).hexdigest()},
        "cameras": list(config.cameras), "depth": config.depth, "depth_range_m": list(config.depth_range_m),
        "segmentation": config.segmentation,
        "seed": config.seed, "video": config.video.to_json(), "reference_video": config.reference_video,
        "looks": [{"file": r.file, "copies": r.copies, "look": asdict(r.look)} for r in config.looks],
        "episodes": [{"episode_index": n, "source_episode": e, "look": config.looks[k].look.name, "copy": c}
                     for n, (e, k, c, _) in enumerate(items)],
    }
    tmp = dst / (RENDER_META + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True, default=list) + "\n", encoding="utf-8")
    tmp.replace(dst / RENDER_META)


@dataclass(frozen=True)
class RenderStage:
    """The render as a stage (`demoforge.stage`): work items are contiguous runs of the canonical
    order (`chunks`, not depending on the worker count), each rendered into its own shard;
    the shards are merged in order and stamped with render.json, then moved to OUT."""

    source: Path
    config: RenderConfig
    plan: tuple[tuple[int, int, int, int], ...]  # (source episode, look index, copy, length), canonical order
    name: ClassVar[str] = "render"
    error: ClassVar[type] = LookError

    def parts(self) -> list[range]:
        return chunks(len(self.plan))

    def fingerprint(self) -> dict:
        return {"stage": "render", "fingerprint": _fingerprint(self.source, self.config, 0)}

    def inputs(self) -> tuple[Path, ...]:
        return (self.source,)

    def items(self) -> list[str]:
        return [f"episodes-{r.start}-{r.stop - 1}" for r in self.parts()]

    def total(self) -> int:
        return len(self.plan)

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        part = self.parts()[k]
        label = self.items()[k]
        # the runner counts done and total over the whole run; the item's label names the shard
        events = None if progress is None else (lambda event: progress(replace(event, item=label)))
        _render_shard(self.source, shard / "data", list(self.plan[part.start:part.stop]), self.config,
                      _fingerprint(self.source, self.config, 0), events, first=part.start)
        return {"episodes": len(part)}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: self._merge(shards, out))

    def _merge(self, shards: list[Path], out: Path) -> Path:
        merged = shards[0].parent.parent / "merged"  # in the work folder: OUT appears whole or not at all
        if len(shards) == 1:  # one item (at most 7 episodes) wrote the dataset itself: no copy
            data = shards[0] / "data"
            if data.is_dir():  # else an interrupted merge moved it already
                shutil.rmtree(merged, ignore_errors=True)
                data.replace(merged)
        else:
            merge_shards(shards, merged)
        return publish_render(merged, self.source, out, self.config)


def render_part(source: Path, root: Path, config: RenderConfig, *, offset: int, episodes: range | None = None,
                extras: Callable[[dict], dict] = episode_extras) -> int:
    """Render `episodes` of `source` (a range of its episode indices; None: all) into the dataset `root`
    (or continue an interrupted one) as `render_dataset` renders them when `source`'s episodes are the
    episodes `offset`, `offset + 1`, ... of a larger source: the same look draws, render_source records
    and output order (`extras(row)`: an episode row's records as the larger source has them). The parts
    of consecutive episode runs, merged in order and published by `publish_render`, are that render's
    bytes. Returns the episodes written."""
    config = resolve_looks(config)
    check_config(config)
    items = [it for it in _items(source, config) if episodes is None or it[0] in episodes]
    first = offset + (0 if episodes is None else episodes.start)
    _render_shard(source, root, items, config, _fingerprint(source, config, 0),
                  first=first * sum(r.copies for r in config.looks), offset=offset, extras=extras)
    return len(items)


def publish_render(merged: Path, source: Path, out: Path, config: RenderConfig) -> Path:
    """Stamp `merged` (every episode of the render of `source` under `config`, in canonical order)
    with render.json and the stage's record and move it to `out`, as `render_dataset` does."""
    config = resolve_looks(config)
    _copy_meta(source, merged, config, _items(source, config))
    return publish_dataset(merged, out, RenderStage.name, RenderStage(source, config, ()).fingerprint())


def render_dataset(source: str | Path, out: str | Path, config: RenderConfig, *, workers: int | None = None,
                   progress: Progress | None = None, executor=None) -> RenderSummary:
    """Render `source` into the new dataset `out` (see the module docstring) with `run_stage` on
    `workers` local slots (default `config.workers`) or on `executor`. `progress` takes a
    `ProgressEvent` per rendered episode and per finished work item."""
    start = time.perf_counter()
    source, out = Path(source), Path(out)
    config = resolve_looks(config)
    check_config(config)
    if not (workers is None or (isinstance(workers, int) and workers >= 1)):
        raise LookError(f"workers {workers!r} must be an integer >= 1")
    _check_source(source)
    items = _items(source, config)
    if not items:
        raise LookError(f"{source}: no episodes to render")
    if _finished(out, _fingerprint(source, config, 0)):  # the same render, rerun: nothing to do
        return RenderSummary(out, len(items), open_dataset(out).num_frames, time.perf_counter() - start)
    stage = RenderStage(source, config, tuple(items))
    workers = local_workers(config, len(items)) if workers is None else workers
    if executor is not None:
        run_stage(stage, out, executor=executor, progress=progress)
    else:
        with LocalExecutor(min(workers, len(stage.parts()))) as local:
            run_stage(stage, out, executor=local, progress=progress)
    return RenderSummary(out, len(items), open_dataset(out).num_frames, time.perf_counter() - start)
