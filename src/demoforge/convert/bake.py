"""Bake: source episodes -> a training dataset under one convention at one rate.

Bake is a stage run by `demoforge.stage.run_stage`: the plan's episodes are cut into
contiguous work items (independent of the worker count); a slot reads its item's episodes one
at a time, projects them (conventions), filters ticks and writes a shard with DatasetWriter
(cameras copied packet for packet when nothing changes, else decoded, decimated and encoded
as streams); shards are merged in order, so the result does not depend on the number of
workers. The output is stamped (meta/bake.json, meta/modality.json), checked, and renamed
into place only when complete. A killed bake keeps its finished shards in `.OUT.bake-shards`
beside OUT, and the same command resumes from them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import demoforge
from demoforge.convert import frames
from demoforge.convert.conventions import project
from demoforge.convert.envstate import ENV_STATE, episode_environment_state
from demoforge.convert.episode import BakeError, Episode, read_episode
from demoforge.convert.filters import dead_ticks, keep_mask
from demoforge.convert.imports import read_import, imported_sources
from demoforge.convert.modality import MODALITY_PATH, modality_json
from demoforge.convert.plan import BakeConfig, BakePlan, make_plan
from demoforge.convert.seams import EpisodeModels
from demoforge.convert.stamp import BAKE_PATH
from demoforge.convert.v21 import write_v21
from demoforge.dataset.check import check_dataset
from demoforge.dataset.decode import probe_video
from demoforge.dataset.layout import INFO_PATH, STATS_EXACT_PATH, STATS_PATH, Feature, write_json_atomic
from demoforge.dataset.reader import open_dataset
from demoforge.dataset.stats import floor_spread
from demoforge.dataset.writer import DatasetWriter
from demoforge.errors import DemoforgeError, listing
from demoforge.raw import schema
from demoforge.stage import (
    LocalExecutor, MergeAtEnd, Progress, ProgressEvent, chunks, merge_shards, run_stage, stamp_dataset, work_folder,
)

MAX_VIDEO_FILE_S = 1000.0  # lerobot's float32 timestamps stop matching frames past ~1024 s


@dataclass(frozen=True)
class BakeStage:
    """The bake as a stage (`demoforge.stage`): the plan's episodes in contiguous work items (not
    depending on the worker count), each baked into its own shard; the shards are merged in
    order, stamped, verified and moved to OUT. A killed bake keeps its finished shards."""

    plan: BakePlan
    given: tuple[Path, ...] = ()  # the sources as the caller named them: run_stage guards OUT against them
    name: ClassVar[str] = "bake"
    error: ClassVar[type] = BakeError

    def parts(self) -> list[range]:
        return chunks(len(self.plan.items))

    def inputs(self) -> tuple[Path, ...]:
        return self.given

    def finished(self, out: Path) -> Path:
        return out  # this bake, finished: nothing to do

    def fingerprint(self) -> dict:
        sources = [_source_fingerprint(Path(p)) for p in self.plan.sources]
        record = {"stage": "bake", "config": self.plan.config.stamp(self.plan.video), "sources": sources}
        if self.plan.video_request is not None:
            record["video_request"] = self.plan.video_request
        return json.loads(json.dumps(record))

    def items(self) -> list[str]:
        return [f"episodes-{r.start}-{r.stop - 1}" for r in self.parts()]

    def total(self) -> int:
        return len(self.plan.items)

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        part, label = self.parts()[k], self.items()[k]
        root = shard / "data"
        shutil.rmtree(root, ignore_errors=True)  # an item is baked whole: a killed one starts over
        # the runner counts done and total over the whole run; the item's label names the shard
        events = None if progress is None else (lambda event: progress(replace(event, item=label)))
        records = write_shard(self.plan, part.start, part.stop, root, events)
        return {"episodes": len(part), "records": records}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: self._publish(shards, results, out))

    def _publish(self, shards: list[Path], results: list[dict], out: Path) -> Path:
        tmp = shards[0].parent.parent / "publish"  # in the work folder: OUT appears whole or not at all
        shutil.rmtree(tmp, ignore_errors=True)
        v3 = tmp / "v3"
        # merge's own stamp names the temporary shards; bake.json records the real sources
        merge_shards(shards, v3, video_file_duration_s=self.plan.config.max_video_file_seconds)
        records = [rec for result in results for rec in result["records"]]
        for n, rec in enumerate(records):
            rec["baked_episode"] = n
        publish(self.plan, bake_stamp(self.plan, records), tmp, out, stage=(self.name, self.fingerprint()))
        return out


def _source_fingerprint(root: Path) -> dict[str, str]:
    """A source as the fingerprint names it: an imported one by the file or folder it came from and its digest."""
    record = read_import(root)
    if record is not None:
        return {"root": str(Path(record["source"]).resolve()), "reader": record["reader"],
                "source_sha256": record["source_sha256"]}
    return {"root": str(root.resolve()), "info_sha256": hashlib.sha256((root / INFO_PATH).read_bytes()).hexdigest()}


def bake(sources: Sequence[str | Path], out: str | Path, config: BakeConfig = BakeConfig(), *,
         workers: int | None = None, progress: Progress | None = None, executor=None,
         models: EpisodeModels | None = None) -> Path:
    """Bake `sources` into the new root `out` with `run_stage` on `workers` local slots (default
    `config.workers`) or on `executor`; returns `out`. `progress` takes a `ProgressEvent` per
    baked episode. `models` rebuilds raw episodes' models for `config.reads_models`
    (`demoforge.replay.EPISODE_MODELS`; `convert.seams`). A killed bake resumes from its finished
    shards when run again the same way; a finished one (OUT stamped with this same fingerprint) is
    left as it is."""
    out = Path(out)
    if problems := config.refusals():
        raise BakeError("; ".join(problems))
    if config.max_video_file_seconds > MAX_VIDEO_FILE_S:
        raise BakeError(f"--max-video-file-seconds {config.max_video_file_seconds} is over {MAX_VIDEO_FILE_S:.0f} s, "
                        "past which lerobot's float32 timestamps no longer find frames; use 800 (the default) or less")
    workers = config.workers if workers is None else workers
    workers = auto_workers() if workers == "auto" else workers
    if not (isinstance(workers, int) and workers >= 1):
        raise BakeError(f"--workers {workers!r} must be an integer >= 1 or 'auto'")

    # a source in another format than LeRobot v3.0 is read through its reader into an import beside OUT
    imports = import_folder(out)
    fresh = not imports.exists()  # not a killed bake's (to resume from) nor a running one's
    try:
        plan, _ = make_plan(imported_sources(sources, imports, video=config.video), config, models)
        stage = BakeStage(plan, tuple(Path(s) for s in sources))
        if executor is not None:
            result = run_stage(stage, out, executor=executor, progress=progress)
        else:
            with LocalExecutor(min(workers, len(stage.parts()))) as local:
                result = run_stage(stage, out, executor=local, progress=progress)
    except DemoforgeError:  # refused, or failed before any shard to resume from: leave nothing beside OUT
        if fresh and not work_folder(out, BakeStage.name).exists():
            shutil.rmtree(imports, ignore_errors=True)
        raise
    shutil.rmtree(imports, ignore_errors=True)  # kept only while the bake is unfinished, to resume from
    return result


def import_folder(out: Path) -> Path:
    """Where sources in other formats are imported for the bake into `out` (`convert.imports`)."""
    return out.parent / f".{out.name}.bake-imports"


def publish(plan: BakePlan, stamp: dict[str, Any], tmp: Path, out: Path, *,
            stage: tuple[str, dict] | None = None) -> None:
    """Finish the v3.0 dataset written at `tmp/v3`: its bake.json (`stamp`) and modality.json (and
    `stage`'s (name, fingerprint) record, `stamp_dataset`), verified, converted to v2.1 when the
    plan asks, then moved to `out` (empty or absent)."""
    v3 = tmp / "v3"
    if plan.config.std_floor:
        stamp = {**stamp, "stats": floor_stats(v3, plan.config.std_floor, plan.features)}
    write_json_atomic(v3 / BAKE_PATH, stamp)
    if stage is not None:
        stamp_dataset(v3, *stage)
    write_json_atomic(v3 / MODALITY_PATH, modality_json(plan.state_parts, plan.action_parts, list(plan.camera_keys)))
    verify(v3)
    final = v3
    if plan.config.lerobot_format == "v2.1":
        final = tmp / "v21"
        write_v21(v3, final)
    if out.exists():
        out.rmdir()
    final.replace(out)


def floor_stats(root: Path, floor: float, features: dict[str, Feature]) -> dict[str, Any]:
    """Floor the spreads of `root`'s meta/stats.json at `floor` (`dataset.stats.floor_spread`; `features`:
    the bake's output features), the exact statistics moved to meta/stats.exact.json; returns bake.json's
    record of it."""
    exact = json.loads((root / STATS_PATH).read_text())
    floored, changed = floor_spread(exact, {key: ft.dtype for key, ft in features.items()}, floor)
    (root / STATS_PATH).replace(root / STATS_EXACT_PATH)
    write_json_atomic(root / STATS_PATH, floored)
    return {"std_floor": floor, "exact": STATS_EXACT_PATH, "floored": changed}


def write_shard(plan: BakePlan, start: int, stop: int, root: Path,
                progress: Progress | None = None) -> list[dict[str, Any]]:
    """Bake items [start, stop) of the plan into a new dataset at `root`; returns their records.
    `progress` takes a "bake" episode event after each episode."""
    readers = {}
    records = []
    cfg = plan.config
    segments = Path(tempfile.mkdtemp(prefix=".segments-", dir=root.parent))
    try:
        with DatasetWriter.create(root, fps=plan.rate, features=plan.features, robot_type=plan.robot_type,
                                  video=plan.video, video_file_duration_s=cfg.max_video_file_seconds) as writer:
            for s, i in plan.items[start:stop]:
                if s not in readers:
                    readers[s] = open_dataset(plan.sources[s])
                ep = read_episode(readers[s], i, objects=cfg.filter_idle, models=plan.models)
                kept = readers[s].read_episode(i, list(plan.kept)) if plan.kept else {}
                records.append(_bake_episode(plan, writer, ep, s, segments, kept))
                for seg in segments.iterdir():
                    seg.unlink()
                if progress is not None:
                    progress(ProgressEvent("bake", "episode", f"source {s} episode {i}", len(records), stop - start))
    finally:
        shutil.rmtree(segments, ignore_errors=True)
    return records


def _bake_episode(plan: BakePlan, writer: DatasetWriter, ep: Episode, s: int, segments: Path,
                  kept: dict[str, np.ndarray]) -> dict[str, Any]:
    cfg = plan.config
    proj = project(ep, cfg.control_space, plan.rate)
    if (proj.state_parts, proj.action_parts) != (plan.state_parts, plan.action_parts) or \
            list(proj.action_names) != plan.features[schema.ACTION].names:
        raise BakeError(f"{ep.source}: episode {ep.index} projects to parts {proj.action_parts} / names "
                        f"{proj.action_names}, unlike the pool's first episode ({plan.action_parts}); bake apart")
    keep = keep_mask(dead_ticks(ep, proj.ticks, cfg.idle)) if cfg.filter_idle else np.ones(len(proj.ticks), bool)
    rows = proj.ticks[keep]
    cols = {schema.STATE: proj.state[keep], schema.ACTION: proj.action[keep]}
    if schema.RAW_COMMAND in plan.features and schema.RAW_COMMAND not in plan.kept:  # a kept one comes with `kept`
        if ep.raw_command is None:
            raise BakeError(f"{ep.source}: episode {ep.index} has no raw_command, unlike the pool's first episode")
        cols[schema.RAW_COMMAND] = ep.raw_command[rows].astype(np.float32)
    for key, values in kept.items():
        values = np.asarray(values)[rows]
        cols[key] = values[:, list(plan.kept_columns[key])] if key in plan.kept_columns else values
    objects = None
    if cfg.environment_state:
        cols[ENV_STATE], layout = episode_environment_state(ep, rows, cfg.environment_state_kind, plan.models)
        objects = layout.objects
        if layout.names != plan.features[ENV_STATE].names:
            raise BakeError(f"{ep.source}: episode {ep.index}'s environment state is {layout.names}, the pool's first "
                            f"episode's {plan.features[ENV_STATE].names}; bake one task family at a time")
    encoded, how = {}, {}
    for key in plan.camera_keys:
        cam, feature = ep.cameras[key], plan.features[key]
        if plan.stride == 1 and keep.all() and frames.can_copy(cam, feature, plan.video, plan.rate):
            encoded[key], how[key] = frames.copied(cam), "copied"
        elif frames.is_exact(feature):
            seg = segments / f"{len(how)}.mp4"
            encoded[key] = frames.reencode_exact(cam, feature, rows, source_fps=ep.fps, out=seg, settings=plan.video,
                                                 fps=plan.rate)
            how[key] = "encoded losslessly"
        else:
            seg = segments / f"{len(how)}.mp4"
            encoded[key] = frames.reencode(cam, rows, source_fps=ep.fps, out=seg, settings=plan.video, fps=plan.rate)
            how[key] = "encoded"
    extra = dict(ep.extra)
    extra["bake_source"] = {"source": s, "episode_index": ep.index, "sha256": ep.sha256}
    if objects is not None:
        extra["environment_objects"] = list(objects)  # this episode's object names, in environment-state order
    writer.add_episode(cols, task=cfg.task or ep.task, extra=extra, encoded=encoded)
    return {"source": s, "source_episode": ep.index, "sha256": ep.sha256, "outcome": ep.outcome,
            "ticks_in": ep.length, "ticks_out": int(rows.size),
            "idle_dropped": int(len(proj.ticks) - rows.size), "video": how}


def git_commit() -> str | None:
    """The demoforge checkout's commit, or None when it is not run from a git checkout."""
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(demoforge.__file__).parent,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def gripper_convention(reader: str) -> dict[str, Any]:
    """What the last component of state (and of the joint_* actions) means, by source reader."""
    if reader == "demoforge_raw":
        return {"quantity": "closedness", "open": 0.0, "closed": 1.0,
                "from": "mean finger travel between the robot card's open and closed positions; the commanded "
                        "value under joint_target is unclamped (> 1 squeezes)"}
    return {"quantity": "as recorded", "open": None, "closed": None,
            "from": "the last component of the source's observation.state, unconverted (the source has no "
                    "robot card)"}


def _source_stamp(root: Path, episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A source's entry in bake.json: an imported one is named by the file or folder the user gave."""
    record = read_import(root)
    if record is None:
        return {"root": str(root), "episodes": episodes}
    return {"root": record["source"], "reader": record["reader"], "episodes": episodes}


def _imported_gripper(plan: BakePlan) -> dict[str, Any] | None:
    """What the gripper value means, when the pool's first source was imported by a reader that says."""
    record = read_import(plan.sources[0])
    if record is None or record.get("gripper") is None:
        return None
    return {**record["gripper"], "reader": record["reader"]}


def bake_stamp(plan: BakePlan, records: list[dict[str, Any]]) -> dict[str, Any]:
    """meta/bake.json: everything needed to know (and redo) what the labels mean."""
    cfg = plan.config
    return {
        "convention": cfg.control_space,
        "control_freq": plan.rate,
        "native_freq": plan.fps,
        "stride": plan.stride,
        "state": {"names": plan.features[schema.STATE].names, "parts": plan.state_parts},
        "action": {"names": plan.features[schema.ACTION].names, "parts": plan.action_parts},
        "gripper": _imported_gripper(plan) or gripper_convention(plan.reader),
        "control_law": plan.law,
        "filters": {"include_failures": cfg.include_failures, "filter_idle": cfg.filter_idle,
                    "idle": cfg.idle.to_json()},
        "task_override": cfg.task,
        "environment_state": _env_state_stamp(plan, cfg.environment_state_kind),
        "kept": list(plan.kept),
        "notes": list(plan.notes),
        "sources": [_source_stamp(p, [r for r in records if r["source"] == s]) for s, p in enumerate(plan.sources)],
        "demoforge": {"version": demoforge.__version__, "commit": git_commit()},
        "video": {"encoder": plan.video.encoder, "settings": plan.video.to_json(),
                  "max_video_file_s": cfg.max_video_file_seconds, "cameras": list(plan.camera_keys)},
        "lerobot_format": cfg.lerobot_format,
        "config": cfg.stamp(plan.video),
    }


def _env_state_stamp(plan: BakePlan, kind: str) -> dict[str, Any] | None:
    ft = plan.features.get(ENV_STATE)
    if ft is None:
        return None
    if kind == "goal":
        return {"key": ENV_STATE, "names": ft.names, "definition": "demoforge.raw.envstate", "kind": kind,
                "objects": "the regions the goal names, in goal order (no object pose); per region the centre on "
                           "the table top [m] and the identity wxyz quaternion, then region minus TCP position [m]"}
    return {"key": ENV_STATE, "names": ft.names, "definition": "demoforge.raw.envstate", "kind": kind,
            "objects": "goal objects by first appearance in the goal, then the other blocks by name; per object "
                       "position [m] and wxyz quaternion (w >= 0) in the world frame, then object minus TCP "
                       "position [m]; per-episode names in demoforge/environment_objects"}


def verify(root: Path) -> None:
    """Fail the bake if the dataset does not check, or any video file is longer than MAX_VIDEO_FILE_S."""
    problems = [str(p) for p in check_dataset(root)]
    for mp4 in sorted(root.glob("videos/**/*.mp4")):
        pts = probe_video(mp4).pts_s
        if pts.size and pts[-1] > MAX_VIDEO_FILE_S:
            problems.append(f"{mp4}: {pts[-1]:.1f} s long, over {MAX_VIDEO_FILE_S:.0f} s; lower --max-video-file-seconds")
    if problems:
        raise BakeError(f"{root}: baked dataset failed verification:" + listing(problems))


def auto_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
