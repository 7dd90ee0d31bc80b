"""The pipelined render schedule (`render_schedule: pipelined`): a problem's successful episodes are
rendered as soon as they are generated, by the execute stage's own executor (local pool or Ray).

Under the coupled schedule the render stage starts once every problem is generated and merged, so
at that boundary the slots that finished their last problem wait for the slowest one. Under
`pipelined` the execute stage runs `PipelinedStage`: generate's work items, then the render items of
each problem (its successes cut as the render stage cuts a split, by the episodes it may have, so
one problem of many episodes still renders on many slots). A problem's render items need the
generate items up to that problem's (`Stage.needs`): a slot that finds no problem left to generate
renders the finished ones while the other slots still generate.

Same bytes as coupled. A render item renders its problem's success shard (`render.render_part`) as
the episodes that problem's successes are in RUN/execute/success: the successes of the problems
before it, read from their final shards (why it needs them), so the look draws, render_source
records and output order are the coupled render's. The parts are merged in problem order (the parts
of a render merge to its bytes) and published with the render stage's render.json and stamp
(`render.publish_render`); the render stage then finds RUN/render/success finished and does nothing.
When the run renders only the ticks its bake keeps (`pipeline.baked_render`), a render item bakes
its problem's ticks first (each item of a problem bakes them: state-only, cheap) and renders them (their `bake_source` records renumbered as in the bake of
the whole split), and RUN/render/ticks is the whole split's bake, made as the render stage makes it
(state-only, cheap beside the render). The bake stage still runs after merge and annotate.

Resume. The render items' shards sit beside generate's in RUN/execute/.shards, and run.json is
generate's own, so either schedule resumes the other's generate items (`render_schedule` is a speed
field); a killed run keeps every finished item and the finished episodes of a rendering one. A kill
in the short window after generate's merge and before the render is published loses the render's
parts: the resumed run's render stage renders coupled.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from demoforge.convert import BakeConfig
from demoforge.convert.conventions import stride_for
from demoforge.convert.episode import content_sha256
from demoforge.dataset import DatasetMerger, open_dataset
from demoforge.dataset.keys import episode_extras
from demoforge.dataset.layout import INFO_PATH
from demoforge.execute.generate import GenerateStage
from demoforge.execute.layout import write_raw_meta
from demoforge.execute.problems import ExecuteError
from demoforge.pipeline.baked_render import bake_ticks
from demoforge.render import RenderConfig, resolve_looks
from demoforge.render.stage import publish_render, render_part
from demoforge.stage import Progress, chunks, run_stage

PARTS_MERGE = ".success.pipelined"  # RUN/render/.success.pipelined: the render's parts being merged


@dataclass(frozen=True)
class PipelinedStage:
    """generate's work items, then one render item per problem (see the module docstring)."""

    generate: GenerateStage
    render: RenderConfig  # the render stage's
    ticks: BakeConfig | None  # the bake whose ticks are rendered (pipeline.baked_render); None: every tick
    render_dir: Path  # RUN/render
    name: ClassVar[str] = "generate"
    error: ClassVar[type] = ExecuteError

    def inputs(self) -> tuple[str, ...]:
        return self.generate.inputs()

    def fingerprint(self) -> dict:
        # generate's own: either schedule resumes the other's generate items; the render's settings
        # are guarded by the pipeline (a resume must match the saved config's output fields)
        return self.generate.fingerprint()

    def render_parts(self) -> list[tuple[int, range]]:
        """Render item k's (problem, range of its successes by position): a problem's successes cut as
        the render stage cuts a split (`stage.chunks`), by the episodes it may have, so a problem of
        many episodes is rendered on many slots."""
        run = self.generate.run
        return [(p, part) for p in range(len(run.problems)) for part in chunks(run.episodes)]

    def render_labels(self) -> list[str]:
        return [f"render-{self.generate.run.problems[p].name}-{part.start}-{part.stop - 1}"
                for p, part in self.render_parts()]

    def items(self) -> list[str]:
        return [*self.generate.items(), *self.render_labels()]

    def total(self) -> int:
        return self.generate.total()

    def needs(self, k: int) -> range:
        first = len(self.generate.items())
        if k < first:
            return range(0)
        return range(self.render_parts()[k - first][0] // self.generate.run.per_item + 1)

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        first = len(self.generate.items())
        if k < first:
            return self.generate.run_item(k, shard, progress)
        return render_problem(self, *self.render_parts()[k - first], shard)

    def merger(self, out: Path, threads: int) -> "PipelinedMerge":
        return PipelinedMerge(self, self.generate.merger(out, threads))


def _successes(stage: PipelinedStage, p: int) -> int:
    done = stage.generate.run.problem_shard(p) / "done.json"
    return int(json.loads(done.read_text(encoding="utf-8"))["success"])


def render_problem(stage: PipelinedStage, p: int, part: range, shard: Path) -> dict:
    """Render item of problem `p`: its successful episodes at positions `part` (those it has) rendered
    into SHARD/data, as the coupled render renders them (see the module docstring); the item's result."""
    offset = sum(_successes(stage, q) for q in range(p))
    part = range(part.start, min(part.stop, _successes(stage, p)))
    if not part:
        return {"rendered": 0}
    source = problem_source(stage, p, shard)
    extras = episode_extras
    if stage.ticks is not None:
        hashes = split_hashes(stage, p, source, offset)
        source = bake_ticks(source, shard / "ticks", stage.ticks)
        extras = functools.partial(_renumbered, offset=offset, hashes=hashes)
    return {"rendered": render_part(source, shard / "data", stage.render, offset=offset, episodes=part,
                                    extras=extras)}


def split_hashes(stage: PipelinedStage, p: int, source: Path, offset: int) -> dict[int, str]:
    """Each episode of problem `p` (`source`: its success shard) -> its content hash as an episode of
    RUN/execute/success, the hash the whole split's bake records (`convert.episode.content_sha256`
    covers the index columns, which the merge renumbers: episode, frame and task indices of the merged
    split, where the problems before `p` come first and a task's index is its first appearance)."""
    frames, tasks = 0, {}
    for q in range(p + 1):
        shard = stage.generate.run.problem_shard(q) / "success"
        if (shard / INFO_PATH).is_file():
            reader = open_dataset(shard)
            frames += reader.info.total_frames if q < p else 0
            for listed in reader.episodes_table.column("tasks").to_pylist():
                tasks.setdefault(listed[0], len(tasks))
    reader, out = open_dataset(source), {}
    for j in reader.episode_indices:
        cols = reader.read_episode(j)
        cols["episode_index"] = np.full_like(cols["episode_index"], offset + j)
        cols["index"] = cols["index"] + frames
        cols["task_index"] = np.full_like(cols["task_index"], tasks[reader.episode(j)["tasks"][0]])
        out[j] = content_sha256(cols, {})
    return out


def _renumbered(row: dict, *, offset: int, hashes: dict[int, str]) -> dict:
    """An episode row of the problem's ticks with `bake_source` as the whole split's bake records it."""
    extras = episode_extras(row)
    local = extras["bake_source"]["episode_index"]
    extras["bake_source"] = {**extras["bake_source"], "episode_index": offset + local, "sha256": hashes[local]}
    return extras


def problem_source(stage: PipelinedStage, p: int, shard: Path) -> Path:
    """Problem `p`'s success shard as a raw dataset of its own in SHARD/source: its files hard-linked
    (never written), with the raw meta the merged split has (scene inputs, controller law), so render
    and bake read it as they read RUN/execute/success."""
    view = shard / "source"
    if (view / INFO_PATH).is_file():
        return view
    run = stage.generate.run
    tmp = shard / ".source-partial"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(run.problem_shard(p) / "success", tmp, copy_function=_link)
    write_raw_meta(tmp, run.layout, [run.problems[p]], stage="execute", run=stage.generate.record)
    tmp.rename(view)
    return view


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or one without hard links
        shutil.copy2(src, dst)


class PipelinedMerge:
    """generate's merge (`ShardMerge`) fed generate's items; the render parts merged in problem order
    as they come, published once generate's merge has written RUN/execute/success."""

    def __init__(self, stage: PipelinedStage, generate):
        self.stage, self.generate = stage, generate
        self.first = len(stage.generate.items())
        self.root = Path(stage.render_dir) / PARTS_MERGE
        shutil.rmtree(self.root, ignore_errors=True)  # a killed run's partial merge is rebuilt from the parts
        self.parts: DatasetMerger | None = None

    def __enter__(self) -> "PipelinedMerge":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.generate.__exit__(exc_type, exc, tb)
        if self.parts is not None:
            self.parts.__exit__(exc_type, exc, tb)

    def add(self, k: int, shard: Path, result: dict) -> None:
        if k < self.first:
            self.generate.add(k, shard, result)
        elif (shard / "data" / INFO_PATH).is_file():
            if self.parts is None:
                self.root.parent.mkdir(parents=True, exist_ok=True)
                self.parts = DatasetMerger(self.root)
            self.parts.add(shard / "data")

    def finish(self):
        if self.parts is not None:
            self.parts.finish()  # before generate's merge removes the shards it reads
        summary = self.generate.finish()
        if self.parts is not None:
            render = Path(self.stage.render_dir)
            source = summary.roots["success"]
            if self.stage.ticks is not None:
                source = bake_ticks(source, render / "ticks", self.stage.ticks)
            publish_render(self.root, source, render / "success", self.stage.render)
        return summary


def pipelined_run_with(render: RenderConfig, ticks: BakeConfig | None, render_dir: Path) -> Callable:
    """What runs generate's stage under the pipelined schedule (`generate`'s `run_with`): `run_stage`
    on `PipelinedStage`, with generate's progress events only (the run's display counts problems).
    `ticks`: the run's BakeConfig when it renders and bakes (its ticks are rendered when it bakes below
    the native rate), else None."""

    def run(stage: GenerateStage, out: Path, *, work: Path, executor, progress: Progress | None = None):
        baked = ticks is not None and stride_for(stage.run.layout.fps, ticks.control_freq) > 1
        pipelined = PipelinedStage(stage, resolve_looks(render), ticks if baked else None, Path(render_dir))
        renders = set(pipelined.render_labels())

        def generate_only(event) -> None:
            if event.item not in renders:
                progress(event)

        return run_stage(pipelined, out, work=work, executor=executor,
                         progress=None if progress is None else generate_only)

    return run
