"""One export: a baked v3.0 dataset -> a new root in the layout a trainer's own loader reads.

The root is the LeRobot v2.1 layout (`convert.v21.write_v21`: what openpi's pinned lerobot
and GR00T's loader read, with `datasets` 3.x feature tags) plus the trainer's files
(`TRAINERS`), and meta/demoforge/export.json recording what was written and why. It is
written by `run_stage` (`ExportStage`: episodes in work items, `--workers`, resume after a
kill) under `.OUT.export-shards` beside OUT, checked as v2.1, and renamed into place only when
complete; the source is only read.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import demoforge
from demoforge.convert.bake import auto_workers, git_commit
from demoforge.convert.v21 import finish_v21, write_v21_episodes
from demoforge.dataset import open_dataset
from demoforge.dataset.check import check_dataset
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INFO_PATH, write_json_atomic
from demoforge.errors import listing
from demoforge.fields import option, parse_workers, workers_option
from demoforge.export import gr00t, openpi
from demoforge.export.source import BakedSource, ExportError, read_source
from demoforge.stage import LocalExecutor, MergeAtEnd, Progress, chunks, run_stage, stamp_dataset

EXPORT_PATH = f"{DEMOFORGE_META_DIR}/export.json"
STAGE = "export"  # its stamp's name (`stamp_dataset`): a rerun with the same inputs finds it and does nothing
MAX_HORIZON = 1000  # action steps per chunk; openpi and GR00T use 10-50


@dataclass(frozen=True)
class Trainer:
    """How one trainer's files are written, and which loader they were checked against."""

    default_horizon: int  # action steps per training sample, the trainer's own default
    check: Callable[[BakedSource, int], Any]  # (source, horizon): ExportError before anything is written
    write: Callable[..., dict[str, Any]]  # (root, source, *, repo_id, horizon) -> stamp fields
    loader: str  # the loader code this layout is written for


def _openpi(root: Path, src: BakedSource, *, repo_id: str, horizon: int) -> dict[str, Any]:
    return openpi.write_openpi(root, src, repo_id=repo_id, horizon=horizon)


def _gr00t(root: Path, src: BakedSource, *, repo_id: str, horizon: int) -> dict[str, Any]:
    return gr00t.write_gr00t(root, src, horizon=horizon)


# trainer name -> how it is exported
TRAINERS: dict[str, Trainer] = {
    "openpi": Trainer(openpi.DEFAULT_HORIZON, openpi.check, _openpi,
                      "lerobot at openpi's pinned commit 0cf8648 (LeRobot v2.1) with datasets 3.6.0"),
    "gr00t": Trainer(gr00t.DEFAULT_HORIZON, gr00t.check, _gr00t,
                     "GR00T N1.6 LeRobotEpisodeLoader and gr00t/data/stats.py"),
}


@dataclass(frozen=True)
class ExportConfig:
    """What `export` writes, and on how many processes (which changes no byte); the fields after
    `trainer` are the options of `demoforge export` (`demoforge.fields`), `trainer` its TRAINER argument."""

    trainer: str | None = option(None, "Trainer whose loader reads the export: openpi or gr00t.", kind="str",
                                 optional=False)
    action_horizon: int | None = option(None, "Action steps per training sample the statistics are computed for "
                                              "[default: openpi 50, gr00t 16].", kind="int", range=(1, MAX_HORIZON))
    repo_id: str | None = option(None, "openpi: the dataset's name under $HF_LEROBOT_HOME [default: the --out "
                                       "folder's name].", kind="str", metavar="NAME")
    workers: int | str = workers_option()  # processes writing episodes; the output does not depend on it

    def horizon(self) -> int:
        return self.action_horizon or TRAINERS[self.trainer].default_horizon

    def refusals(self) -> list[str]:
        """What an export would refuse in its settings, before it reads the source."""
        if self.trainer not in TRAINERS:
            return [f"trainer {self.trainer!r} is unknown; choose one of {sorted(TRAINERS)}"]
        problems = []
        h = self.action_horizon
        if h is not None and (isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= MAX_HORIZON):
            problems.append(f"--action-horizon {h!r} must be an integer in [1, {MAX_HORIZON}] (the trainer's chunk "
                            f"length; {self.trainer} uses {TRAINERS[self.trainer].default_horizon} by default)")
        if self.repo_id is not None and (not self.repo_id.strip() or self.repo_id.startswith("/")
                                         or ".." in Path(self.repo_id).parts):
            problems.append(f"--repo-id {self.repo_id!r} must be a relative name such as 'demoforge/stack' (the "
                            "dataset's path under $HF_LEROBOT_HOME)")
        try:
            parse_workers(self.workers)
        except ValueError as exc:
            problems.append(f"--workers {exc}")
        return problems


def check_config(config: ExportConfig) -> None:
    problems = config.refusals()
    if problems:
        raise ExportError("\n".join(problems))


@dataclass(frozen=True)
class ExportStage:
    """The export as a stage (`demoforge.stage`): the source's episodes in contiguous work items
    (not depending on the worker count), each written in the v2.1 layout into its own shard; the
    shards' files are gathered in order, the v2.1 metadata and the trainer's files written once,
    the result checked and moved to OUT. A killed export keeps its finished shards."""

    source: Path
    config: ExportConfig
    repo_id: str
    episodes: int  # the source's episode count
    name: ClassVar[str] = STAGE
    error: ClassVar[type] = ExportError

    def parts(self) -> list[range]:
        return chunks(self.episodes)

    def fingerprint(self) -> dict:
        return _fingerprint(self.source, self.config.trainer, self.config.horizon(), self.repo_id)

    def inputs(self) -> tuple[Path, ...]:
        return (self.source,)

    def finished(self, out: Path) -> Path:
        return out  # this export, finished: nothing to do

    def items(self) -> list[str]:
        return [f"episodes-{r.start}-{r.stop - 1}" for r in self.parts()]

    def total(self) -> int:
        return self.episodes

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        part, label = self.parts()[k], self.items()[k]
        root = shard / "v21"
        shutil.rmtree(root, ignore_errors=True)  # an item is written whole: a killed one starts over
        ds = open_dataset(self.source)
        indices = ds.episode_indices[part.start:part.stop]
        # the runner counts done and total over the whole run; the event names this stage and item
        events = None if progress is None else (lambda event: progress(replace(event, stage=STAGE, item=label)))
        rows = write_v21_episodes(ds, root, indices, progress=events)
        return {"episodes": len(indices), "rows": rows}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: self._publish(shards, results, out))

    def _publish(self, shards: list[Path], results: list[dict], out: Path) -> Path:
        tmp = shards[0].parent.parent / "publish"  # in the work folder: OUT appears whole or not at all
        shutil.rmtree(tmp, ignore_errors=True)
        root = tmp / "v21"
        for shard in shards:  # every episode's files are its own: the shards' trees merge file by file, linked
            for f in sorted(p for p in (shard / "v21").rglob("*") if p.is_file()):  # (a failed publish keeps them)
                dst = root / f.relative_to(shard / "v21")
                dst.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(f, dst)
                except OSError:  # a file system without hard links
                    shutil.copyfile(f, dst)
        finish_v21(open_dataset(self.source), root, [row for r in results for row in r["rows"]])
        src = read_source(self.source)
        trainer = TRAINERS[self.config.trainer]
        horizon = self.config.horizon()
        fields = trainer.write(root, src, repo_id=self.repo_id, horizon=horizon)
        write_json_atomic(root / EXPORT_PATH, {
            "trainer": self.config.trainer,
            "loader": trainer.loader,
            "layout": "LeRobot v2.1 (one parquet and one mp4 per episode; datasets 3.x feature tags)",
            "source": str(self.source.resolve()),
            "convention": src.convention,
            "action_horizon": horizon,
            "delta_action_mask": list(src.delta_mask),
            "relative_parts": list(src.relative_parts),
            **fields,
            "demoforge": {"version": demoforge.__version__, "commit": git_commit()},
        })
        stamp_dataset(root, STAGE, self.fingerprint())
        problems = check_dataset(root)
        if problems:
            raise ExportError(f"{out}: the exported dataset failed its v2.1 check:" + listing(problems))
        if out.exists():
            out.rmdir()
        root.replace(out)
        shutil.rmtree(tmp, ignore_errors=True)
        return out


def export(source: str | Path, out: str | Path, config: ExportConfig, *, workers: int | str | None = None,
           progress: Progress | None = None, executor=None) -> Path:
    """Export the baked dataset `source` for `config.trainer` into the new root `out` with
    `run_stage` on `workers` local slots (default `config.workers`; 'auto': one per core) or on
    `executor`; returns `out`. `progress` takes a `ProgressEvent` per episode written. A killed
    export resumes from its finished shards when run again the same way; a finished one (OUT
    stamped with this fingerprint) is left as it is."""
    source, out = Path(source), Path(out)
    check_config(config if workers is None else replace(config, workers=workers))
    workers = config.workers if workers is None else workers
    workers = auto_workers() if workers == "auto" else workers
    src = read_source(source)
    TRAINERS[config.trainer].check(src, config.horizon())
    stage = ExportStage(source, config, config.repo_id or out.resolve().name, open_dataset(source).num_episodes)
    if executor is not None:
        return run_stage(stage, out, executor=executor, progress=progress)
    with LocalExecutor(min(workers, len(stage.parts()))) as local:
        return run_stage(stage, out, executor=local, progress=progress)


def _fingerprint(source: Path, trainer: str, horizon: int, repo_id: str) -> dict[str, Any]:
    """What decides an export's bytes (the stage fingerprint `finished_output` compares)."""
    return {"stage": STAGE, "trainer": trainer, "action_horizon": horizon, "repo_id": repo_id,
            "source": {"root": str(source.resolve()),
                       "info_sha256": hashlib.sha256((source / INFO_PATH).read_bytes()).hexdigest()}}
