"""Render only the ticks the bake keeps: the pipeline's path when it renders and bakes below the
native rate.

Rendering every native 60 Hz tick and baking at 30 Hz draws and encodes twice the frames the
training data keeps, then decodes them and encodes the kept half again. When a run renders and
bakes at R Hz below the native rate, the pipeline bakes first and renders the result:

1. `bake_ticks`: the successful raw episodes baked state-only at R Hz (the run's convention and
   filters), carrying each kept tick's `sim.state` (`--keep sim.state`) and the raw dataset's
   scene inputs: RUN/render/ticks;
2. the render stage renders that dataset as it renders any: it replays the `sim.state` rows, one
   frame per row, so it draws exactly the ticks the bake kept, each encoded once: RUN/render/success;
3. the annotate stage labels those rendered rows (`pipeline.annotate`, with execute/success as the
   native dataset for the plan's tick ranges): RUN/annotated;
4. `write_baked`: the baked dataset from that annotated render without the carried `sim.state`, with
   the goal labels, videos copied packet for packet, stamped like any bake (meta/bake.json,
   meta/modality.json): RUN/baked.

The state, action and raw-command columns are those baking the rendered 60 Hz split gives: the bake
reads them from the same raw ticks under the same config. The look draws are the same (keyed by the
same episode numbers); the frames are drawn from the same physics states, and so are the labels.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import ClassVar

import numpy as np

from demoforge.convert import BakeConfig, bake
from demoforge.convert.bake import BAKE_PATH, bake_stamp, publish
from demoforge.convert.conventions import stride_for
from demoforge.convert.episode import BakeError
from demoforge.convert.config import KEEP_ALL
from demoforge.convert.plan import make_plan
from demoforge.convert.stamp import read_stamp
from demoforge.dataset import DatasetWriter, EncodedVideo, VideoSettings, open_dataset
from demoforge.dataset.keys import HISTOGRAM_PREFIX, episode_extras
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INDEX_FEATURE_NAMES
from demoforge.pipeline.annotate import LABEL_KEYS
from demoforge.raw.schema import SCENES_DIR, SIM_STATE
from demoforge.render.stage import RENDER_META
from demoforge.replay import EPISODE_MODELS
from demoforge.stage import MergeAtEnd, run_stage

RENDERED_VIDEO = "rendered"  # bake.json records' `video` value: drawn at the baked tick, encoded once


def baked_stride(source: Path, config: BakeConfig) -> int:
    """Native ticks per baked tick of `source` under `config` (1 at the native rate)."""
    return stride_for(open_dataset(source).info.fps, config.control_freq)


def ticks_config(config: BakeConfig) -> BakeConfig:
    """`config` carrying `sim.state` too, so the baked ticks can be replayed and rendered, and
    without the goal labels: annotate adds them to the rendered ticks (`source_config`)."""
    keep = source_config(config).keep
    return dataclasses.replace(config, keep=keep if KEEP_ALL in keep else (*keep, SIM_STATE))


def source_config(config: BakeConfig) -> BakeConfig:
    """`config` as it applies to the raw source: the goal labels it keeps are annotate's, not the raw
    dataset's; `write_baked` carries them from the annotated render."""
    return dataclasses.replace(config, keep=tuple(k for k in config.keep if k not in LABEL_KEYS))


def bake_ticks(source: Path, out: Path, config: BakeConfig) -> Path:
    """Bake `source` state-only under `config` with each kept tick's sim.state and the scene inputs
    into `out` (see the module docstring); `out` is kept when it holds that bake already."""
    want = ticks_config(config)
    stamp = read_stamp(out, required=False) if (out / BAKE_PATH).is_file() else None
    if stamp is not None and stamp.raw.get("config") == _plain(want.stamp()):
        return out
    shutil.rmtree(out, ignore_errors=True)
    tmp = out.with_name(f".{out.name}.ticks-partial")
    shutil.rmtree(tmp, ignore_errors=True)
    bake([source], tmp, want, models=EPISODE_MODELS)
    shutil.copytree(source / SCENES_DIR, tmp / SCENES_DIR)  # render rebuilds each episode's model from them
    tmp.rename(out)
    return out


def write_baked(rendered: Path, ticks: Path, source: Path, out: Path, config: BakeConfig) -> Path:
    """Write the baked dataset `out` from `rendered` (the render of `bake_ticks`'s `ticks` of
    `source`, or that render annotated): every column but the carried sim.state, the goal labels
    `rendered` has, the videos copied without re-encoding, bake.json as baking `source` under `config`
    (keeping the labels) describes it, plus how the cameras were rendered. A stage of one item
    (`BakedRender`): `run_stage` guards `out` (never over the three inputs) before anything is written."""
    return run_stage(BakedRender(Path(rendered), Path(ticks), Path(source), config), Path(out))


@dataclasses.dataclass(frozen=True)
class BakedRender:
    """`write_baked` as a stage (`demoforge.stage`): its one item writes the dataset into its shard,
    the merge stamps it and moves it to OUT."""

    rendered: Path
    ticks: Path
    source: Path
    config: BakeConfig
    name: ClassVar[str] = "bake"
    error: ClassVar[type] = BakeError

    def inputs(self) -> tuple[Path, ...]:
        return (self.rendered, self.ticks, self.source)

    def fingerprint(self) -> dict:
        return {"stage": "bake", "rendered": str(self.rendered.resolve()), "ticks": str(self.ticks.resolve()),
                "source": str(self.source.resolve()), "config": _plain(self.config.stamp())}

    def items(self) -> list[str]:
        return ["baked"]

    def total(self) -> None:
        return None

    def prepare(self) -> None:
        _layout(self.rendered, self.source, self.config)  # a render of other ticks is refused before any work

    def run_item(self, k: int, shard: Path, progress) -> dict:
        """The baked dataset at SHARD/v3, and its episodes' bake.json records."""
        lay = _layout(self.rendered, self.source, self.config)
        reader, render = lay["reader"], lay["render"]
        ticks_records = {r["baked_episode"]: r for r in
                         read_stamp(self.ticks).raw["sources"][0]["episodes"]}
        keys = [*lay["plan"].features, *lay["labels"]]
        records = []
        v3 = shard / "v3"
        shutil.rmtree(v3, ignore_errors=True)  # an item a kill interrupted starts over
        with DatasetWriter.create(v3, fps=lay["plan"].rate, features=lay["features"],
                                  robot_type=lay["plan"].robot_type, video=VideoSettings.from_json(render["video"]),
                                  video_file_duration_s=self.config.max_video_file_seconds) as writer:
            for n, item in zip(reader.episode_indices, render["episodes"], strict=True):
                row = reader.episode(n)
                writer.add_episode(reader.read_episode(n, keys), task=self.config.task or row["tasks"][0],
                                   extra=episode_extras(row), encoded=_videos(reader, n, row))
                records.append({**ticks_records[item["source_episode"]], "baked_episode": n,
                                "video": {k: RENDERED_VIDEO for k in lay["cams"]},
                                "render": {"look": item["look"], "copy": item["copy"]}})
        return {"episodes": len(records), "records": records}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: self._publish(shards[0], results[0]["records"], out))

    def _publish(self, shard: Path, records: list[dict], out: Path) -> Path:
        lay = _layout(self.rendered, self.source, self.config)
        render, labels, plan = lay["render"], lay["labels"], lay["plan"]
        kept = plan.kept + tuple(k for k in labels if k not in plan.kept)
        plan = dataclasses.replace(plan, camera_keys=lay["cams"], features=lay["features"], kept=kept,
                                   config=_with_keep(plan.config, self.config, labels))
        stamp = bake_stamp(plan, records)
        video = VideoSettings.from_json(render["video"])
        stamp["video"].update(encoder=video.encoder, settings=video.to_json())
        stamp["rendered"] = {
            "how": f"the baked ticks rendered from their {SIM_STATE}, one frame per row, encoded once",
            "cameras": render["cameras"], "seed": render["seed"], "depth": render["depth"],
            "segmentation": render["segmentation"],
            "looks": [{"file": r["file"], "copies": r["copies"], "name": r["look"]["name"]} for r in render["looks"]],
        }
        shutil.rmtree(shard / "v21", ignore_errors=True)  # a merge a kill interrupted converts again
        publish(plan, stamp, shard, out)
        return out


def _layout(rendered: Path, source: Path, config: BakeConfig) -> dict:
    """What `BakedRender` reads of its inputs: the bake plan of `source`, the render's reader and
    record, its cameras, columns and goal labels; a render that is not of the ticks `source` bakes
    to, or lacks the labels `config` keeps, is refused."""
    plan, _ = make_plan([source], source_config(config), EPISODE_MODELS)
    reader = open_dataset(rendered)
    render = json.loads((rendered / DEMOFORGE_META_DIR / RENDER_META).read_text(encoding="utf-8"))
    cams = tuple(reader.info.video_keys)
    have = sorted(k for k, f in reader.info.features.items() if f.dtype != "video" and k not in INDEX_FEATURE_NAMES)
    labels = tuple(k for k in LABEL_KEYS if k in reader.info.features)
    asked = [k for k in config.keep if k in LABEL_KEYS and k not in labels]
    if asked:
        raise BakeError(f"--keep {asked}: {rendered} has no such columns ({list(labels) or 'no goal labels'}); the "
                        "annotate stage adds them: run it (do not --skip annotate) or keep other columns")
    if reader.info.fps != plan.rate or set(have) != {*plan.features, SIM_STATE, *labels} or plan.camera_keys:
        raise BakeError(f"{rendered}: {reader.info.fps} Hz with columns {have} is not a render of the ticks "
                        f"{source} bakes to at {plan.rate} Hz (columns {sorted(plan.features)} and {SIM_STATE}); "
                        "render the output of bake_ticks")
    features = {**plan.features, **{k: reader.info.features[k] for k in (*labels, *cams)}}  # videos as rendered
    return {"plan": plan, "reader": reader, "render": render, "cams": cams, "labels": labels, "features": features}


def _with_keep(applied: BakeConfig, asked: BakeConfig, labels: tuple[str, ...]) -> BakeConfig:
    """The config bake.json records: the one applied to the raw source, keeping what was asked and
    the labels carried (as baking the annotated render at the native rate would)."""
    if KEEP_ALL in asked.keep:
        return dataclasses.replace(applied, keep=asked.keep)
    return dataclasses.replace(applied, keep=(*applied.keep, *(k for k in labels if k not in applied.keep)))


def _videos(reader, n: int, row: dict) -> dict[str, EncodedVideo]:
    """Episode `n`'s camera streams as they are in `reader`'s files (copied, never re-encoded)."""
    return {k: EncodedVideo(path=reader.video_path(n, k), from_timestamp=row[f"videos/{k}/from_timestamp"],
                            to_timestamp=row[f"videos/{k}/to_timestamp"],
                            histogram=None if row.get(HISTOGRAM_PREFIX + k) is None
                            else np.asarray(row[HISTOGRAM_PREFIX + k]))
            for k in reader.info.video_keys}


def _plain(value):
    """`value` as it reads back from JSON (tuples as lists)."""
    return json.loads(json.dumps(value))
