"""What a bake will do, decided once before any episode is written: sources, law, rate,
episodes, features. Workers receive the plan and write their share of it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from demoforge.convert.config import FORMATS, KEEP_ALL, BakeConfig
from demoforge.convert.conventions import (
    AS_RECORDED, REBUILT, Projection, check_convention, command_names, project, stride_for,
)
from demoforge.convert.encoding import auto_video, video_notes
from demoforge.convert.envstate import ENV_STATE, episode_environment_state
from demoforge.convert.episode import BakeError, no_models, read_episode, read_law, source_kind
from demoforge.convert.filters import wanted_outcome
from demoforge.convert.imports import read_import
from demoforge.convert.seams import EpisodeModels
from demoforge.dataset import segmentation
from demoforge.dataset.depth import PIX_FMT as DEPTH_PIX_FMT
from demoforge.dataset.depth import DepthCoding, is_depth
from demoforge.dataset.keys import IMAGES_PREFIX, camera_of, image_key, row_extra
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, INFO_PATH, Feature
from demoforge.dataset.reader import DatasetReader, open_dataset
from demoforge.dataset.video import VideoSettings
from demoforge.errors import listing
from demoforge.raw import schema

@dataclass(frozen=True)
class BakePlan:
    """Everything a worker needs; plain data so it pickles to worker processes."""

    sources: tuple[Path, ...]  # source dataset roots, in order
    items: tuple[tuple[int, int], ...]  # (source number, episode index) to bake, in output order
    config: BakeConfig
    video: VideoSettings  # the encoder of the RGB cameras: `config.video`, or under `--vcodec auto` the sources' own
    fps: int  # native rate of every source [Hz]
    stride: int  # native ticks per output tick
    law: dict[str, Any] | None  # the one control law of the pool
    camera_keys: tuple[str, ...]  # video features written
    features: dict[str, Feature]  # output features
    state_parts: dict[str, tuple[int, int]]
    action_parts: dict[str, tuple[int, int]]
    robot_type: str | None
    reader: str  # source reader (episode.READERS key) of the pool
    kept: tuple[str, ...] = ()  # source columns carried through (--keep, `all` expanded)
    notes: tuple[str, ...] = ()  # what the bake changes or leaves out of the sources, said aloud (bake.json, CLI)
    video_request: dict[str, Any] | None = None  # `--vcodec auto`: the settings asked for (a re-encode's), before
    # `auto_video` resolved them; part of the run's identity, so a rerun asking other settings is another run
    kept_columns: dict[str, tuple[int, ...]] = field(default_factory=dict)  # kept per-camera labels cut to the
    # cameras baked (`camera_columns`): key -> the source columns written
    models: EpisodeModels | None = None  # rebuilds raw episodes' models when `config.reads_models` (not stamped:
    # the same models whoever passes them)

    @property
    def rate(self) -> int:
        return self.fps // self.stride


def _pick_cameras(available: list[str], cams: tuple[str, ...] | None, root: Path) -> tuple[str, ...]:
    if cams is None:
        return tuple(available)
    out, unknown = [], []
    for cam in cams:
        key = cam if cam.startswith(IMAGES_PREFIX) else image_key(cam)
        (out if key in available else unknown).append(key)
    if unknown:
        views = [camera_of(k) for k in available]
        raise BakeError(f"{root}: cameras {unknown} not found; it has {views}")
    return tuple(out)


def camera_feature(key: str, source: Feature, root: Path) -> Feature:
    """The bake's feature for source camera `key`: an RGB camera takes the bake's encoder settings;
    a depth map keeps the source's coding (metres, lossless 12-bit codes) and a segmentation map
    its lossless id colours, so neither is ever re-quantized or blended."""
    info = source.info or {}
    if is_depth(info):
        if info.get("video.pix_fmt", DEPTH_PIX_FMT) != DEPTH_PIX_FMT or len(source.shape) != 3 or source.shape[2] != 1:
            raise BakeError(f"{root / INFO_PATH}: features.{key}: a depth map of shape {list(source.shape)} stored "
                            f"as {info.get('video.pix_fmt')!r}; bake carries lerobot's depth maps ([H, W, 1], "
                            f"{DEPTH_PIX_FMT!r} 12-bit codes); leave it out with --cams")
        coding = DepthCoding.from_info(info)
        return Feature("video", source.shape, info={"is_depth_map": True, **asdict(coding)})
    if segmentation.is_segmentation(key, {}) or info.get(segmentation.FLAG):
        return Feature("video", source.shape, info={segmentation.FLAG: True})
    return Feature("video", source.shape)


def expand_sources(sources: list[str | Path], include_failures: bool) -> list[Path]:
    """Dataset roots; a `demoforge generate` run folder stands for its success split (and failure split)."""
    out = []
    for src in map(Path, sources):
        splits = [src / "success"] + ([src / "failure"] if include_failures else [])
        if not (src / INFO_PATH).is_file() and any((s / INFO_PATH).is_file() for s in splits):
            out += [s for s in splits if (s / INFO_PATH).is_file()]
        else:
            out.append(src)
    return out


def pool_problems(readers: list[DatasetReader], laws: list[dict[str, Any] | None], cams: tuple[str, ...]) -> list[str]:
    """Every way the sources disagree: robot_type, control law (mixed presets), native rate, cameras, kind."""
    first = readers[0]
    problems = []
    named = {r.info.robot_type: r.root for r in readers if r.info.robot_type is not None}
    if len(named) > 1:
        problems.append("robot_type differs: " + ", ".join(f"{root} has {t!r}" for t, root in named.items())
                        + "; one dataset holds one robot's data")
    for r, law in zip(readers[1:], laws[1:]):
        if law != laws[0]:
            problems.append(f"{r.root}: control law {json.dumps(law, sort_keys=True)} differs from {first.root}'s "
                            f"{json.dumps(laws[0], sort_keys=True)} (mixed presets)")
        if r.info.fps != first.info.fps:
            problems.append(f"{r.root}: native rate {r.info.fps} Hz, {first.root} has {first.info.fps} Hz")
        if _gripper_of(r.root) != _gripper_of(first.root):
            problems.append(f"{r.root}'s gripper value is {_gripper_of(r.root)}, {first.root}'s "
                            f"{_gripper_of(first.root)}; one column cannot hold both")
        if source_kind(r) != source_kind(first):
            problems.append(f"{r.root} is a {source_kind(r)!r} source, {first.root} a {source_kind(first)!r} one; "
                            "their columns mean different things")
        for key in cams:
            ft, want = r.info.features.get(key), first.info.features[key]
            if ft is None or ft.dtype != "video" or ft.shape != want.shape:
                problems.append(f"{r.root}: camera {key!r} is {ft and (ft.dtype, list(ft.shape))}, "
                                f"{first.root} has {list(want.shape)}")
            elif is_depth(want.info) and (not is_depth(ft.info) or
                                          DepthCoding.from_info(ft.info) != DepthCoding.from_info(want.info)):
                theirs = DepthCoding.from_info(ft.info) if is_depth(ft.info) else "no depth map"
                problems.append(f"{r.root}: depth map {key!r} is coded {theirs}, {first.root}'s "
                                f"{DepthCoding.from_info(want.info)}; their 12-bit codes mean different metres")
    return problems


def _gripper_of(root: Path) -> dict[str, Any] | None:
    """What an imported source's gripper value means (`convert.imports`); None for LeRobot v3.0 sources."""
    record = read_import(root)
    return None if record is None else record.get("gripper")


def pool_robot_type(readers: list[DatasetReader]) -> str | None:
    """The robot the sources name in info.json robot_type (pool_problems refuses two different ones)."""
    return next((r.info.robot_type for r in readers if r.info.robot_type is not None), None)


def per_tick_columns(r: DatasetReader) -> list[str]:
    """A source's per-tick data columns: every feature but videos and lerobot's index columns."""
    return [k for k, f in r.info.features.items() if f.dtype != "video" and k not in INDEX_FEATURE_NAMES]


def _keep_keys(readers: list[DatasetReader], keep: tuple[str, ...], made: dict[str, Feature]) -> tuple[str, ...]:
    """`--keep` with `all` expanded: every source column (of any source) the bake does not write."""
    if KEEP_ALL not in keep:
        return keep
    if len(keep) > 1:
        raise BakeError(f"--keep {','.join(keep)}: {KEEP_ALL!r} already names every column; pass it alone")
    out: list[str] = []
    for r in readers:
        out += [k for k in per_tick_columns(r) if k not in made and k not in out]
    return tuple(out)


def _kept_features(readers: list[DatasetReader], keep: tuple[str, ...], made: dict[str, Feature]) -> dict[str, Feature]:
    """The source features `--keep` names, checked in every source (all problems reported at once)."""
    out, problems = {}, []
    for key in keep:
        if key in made or key.startswith(IMAGES_PREFIX) or key in INDEX_FEATURE_NAMES:
            problems.append(f"--keep {key!r}: bake writes that column itself; keep names other per-tick columns")
            continue
        for r in readers:
            ft = r.info.features.get(key)
            if ft is None or ft.dtype == "video":
                have = sorted(k for k in per_tick_columns(r) if k not in made)
                problems.append(f"--keep {key!r}: {r.root} has no such per-tick column; it has {have}")
            elif key in out and (out[key].dtype, out[key].shape) != (ft.dtype, ft.shape):
                problems.append(f"--keep {key!r}: {r.root} has {ft.dtype} {list(ft.shape)}, another source "
                                f"{out[key].dtype} {list(out[key].shape)}")
            else:
                out.setdefault(key, Feature(ft.dtype, tuple(ft.shape), ft.names))
    if problems:
        raise BakeError("bake: cannot keep the columns asked for:\n  " + "\n  ".join(problems))
    return out


def camera_columns(feature: Feature, views: list[str], kept_views: list[str]) -> tuple[int, ...] | None:
    """The columns of a per-camera label (every name `<view>` or `<view>.<part>` of a source camera,
    as annotate's goal.position and goal.visible) that belong to the cameras baked, or None when
    the feature is no such label or loses nothing: `--cams front` keeps only the front camera's
    columns, so no label names a camera the baked dataset does not have."""
    names = feature.names
    if not names or len(feature.shape) != 1 or len(names) != feature.shape[0]:
        return None
    owners = [n.split(".", 1)[0] for n in names]
    if not all(o in views for o in owners):
        return None
    picked = tuple(j for j, o in enumerate(owners) if o in kept_views)
    return None if len(picked) == len(names) else picked


def _cut_to_cameras(readers: list[DatasetReader], cams: tuple[str, ...],
                    features: dict[str, Feature], kept: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """Cut each kept per-camera label to the cameras baked (`camera_columns`), in `features` too."""
    views = [camera_of(k) for k in readers[0].info.video_keys]
    kept_views = [camera_of(k) for k in cams]
    out = {}
    for key in kept:
        cols = camera_columns(features[key], views, kept_views)
        if cols is not None:
            ft = features[key]
            features[key] = Feature(ft.dtype, (len(cols),), [ft.names[j] for j in cols])
            out[key] = cols
    return out


def make_plan(sources: list[str | Path], config: BakeConfig,
              models: EpisodeModels | None = None) -> tuple[BakePlan, Projection]:
    """Check the pool and the request; returns the plan and the first episode's projection.
    `models`: what rebuilds raw episodes' models, for `config.reads_models` (`convert.seams`)."""
    if not sources:
        raise BakeError("bake: no source datasets given")
    check_convention(config.control_space)
    if config.lerobot_format not in FORMATS:
        raise BakeError(f"--lerobot-format {config.lerobot_format!r} is not one of {list(FORMATS)}")
    if config.workers != "auto" and not (isinstance(config.workers, int) and config.workers >= 1):
        raise BakeError(f"--workers {config.workers} must be >= 1 or 'auto'")
    readers = [open_dataset(s) for s in expand_sources(sources, config.include_failures)]
    laws = [read_law(r.root) for r in readers]
    fps = readers[0].info.fps
    stride = stride_for(fps, config.control_freq)
    cams = _pick_cameras(readers[0].info.video_keys, config.cams, readers[0].root)
    problems = pool_problems(readers, laws, cams)
    if problems:
        raise BakeError("bake: these sources cannot be baked together (bake each group separately):"
                        + listing(problems))
    items = []
    for s, r in enumerate(readers):
        for i in r.episode_indices:
            if wanted_outcome(row_extra(r.episode(i), "outcome"), config.include_failures, where=f"{r.root}: episode {i}"):
                items.append((s, i))
    if not items:
        raise BakeError("bake: no episodes to bake (all failures? pass --include-failures to bake them)")
    auto = config.video_auto
    request = {"vcodec": "auto", **config.video.to_json()} if auto else None
    video = auto_video(readers, cams, config, stride) if auto else config.video
    first = read_episode(readers[items[0][0]], items[0][1])
    if config.filter_idle and models is None and first.reader == "demoforge_raw":  # refused before any shard
        raise no_models("--filter-idle", str(first.source))
    proj = project(first, config.control_space, fps // stride)
    features = {
        schema.STATE: Feature("float32", (len(proj.state_names),), list(proj.state_names)),
        schema.ACTION: Feature("float32", (len(proj.action_names),), list(proj.action_names)),
    }
    if first.raw_command is not None:
        features[schema.RAW_COMMAND] = Feature("float32", (first.raw_command.shape[1],), list(command_names(first)))
    for key in cams:
        features[key] = camera_feature(key, readers[0].info.features[key], readers[0].root)
    if config.environment_state:
        poses, layout = episode_environment_state(first, proj.ticks[:1], config.environment_state_kind, models)
        features[ENV_STATE] = Feature("float32", (poses.shape[1],), layout.names)
    kept = _keep_keys(readers, config.keep, features)
    features.update(_kept_features(readers, kept, features))
    kept_columns = _cut_to_cameras(readers, cams, features, kept)
    plan = BakePlan(
        sources=tuple(r.root for r in readers), items=tuple(items), config=config, video=video, fps=fps, stride=stride,
        law=laws[0], camera_keys=cams, features=features, state_parts=proj.state_parts,
        action_parts=proj.action_parts, robot_type=pool_robot_type(readers), reader=first.reader,
        kept=kept, notes=tuple(bake_notes(readers, config, video, features, first.reader, stride, auto=auto)),
        video_request=request, kept_columns=kept_columns, models=models,
    )
    return plan, proj


def bake_notes(readers: list[DatasetReader], config: BakeConfig, video: VideoSettings, features: dict[str, Feature],
               reader: str, stride: int, *, auto: bool = False) -> list[str]:
    """What the bake does to the sources' data that a reader of the output would not guess."""
    notes = []
    recorded = reader == "lerobot" and any(schema.ACTION in r.info.features for r in readers)
    if recorded and config.control_space in REBUILT:
        notes.append(f"{config.control_space} {REBUILT[config.control_space]}; the source's recorded `action` is not "
                     f"used; use --control-space {AS_RECORDED} to keep it")
    if recorded and config.control_space == AS_RECORDED and stride > 1:
        fps = readers[0].info.fps
        notes.append(f"{AS_RECORDED} samples the recorded `action` at one tick in {stride} ({fps} -> "
                     f"{fps // stride} Hz) like the other columns; if the source's actions are per-tick deltas or "
                     f"velocities, the motion commanded between samples is lost: bake at {fps} Hz to keep it")
    dropped = []
    for r in readers:
        dropped += [k for k in per_tick_columns(r) if k not in features and k not in dropped]
    if dropped:
        notes.append(f"source columns {dropped} are not carried into the bake; --keep all (or --keep "
                     f"{','.join(dropped)}) carries them")
    notes += video_notes(readers, config, video, features, stride, auto=auto)

    for r in readers:
        record = read_import(r.root)
        if record is not None:
            notes.append(f"{record['source']} was read by the {record['reader']!r} reader (demoforge.convert.readers) "
                         "and imported as LeRobot v3.0 first")
            notes += record.get("notes", [])
    robot_type = pool_robot_type(readers)
    unnamed = [str(r.root) for r in readers if r.info.robot_type is None]
    if robot_type is None:
        notes.append("robot_type: the sources' info.json names no robot, so the bake's robot_type is null too")
    elif unnamed:
        notes.append(f"robot_type {robot_type!r} is taken from the other sources for {unnamed}, whose info.json "
                     "names no robot")
    return notes
