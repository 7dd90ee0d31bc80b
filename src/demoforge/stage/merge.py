"""The merge stage: datasets merged in order into a new one (`dataset.merge_datasets`) as a stage.

One work item per source; an item checks that its source is a readable dataset and records
its info hash, so a resumed merge refuses a source that changed since (the fingerprint names
the sources and their info hashes). The merge itself runs once the last item is final: it is
the one step that writes, through its own temporary root beside OUT (a killed merge starts it
again; the sources are datasets already, there is nothing smaller to keep, so a failed merge
leaves no work folder either: `keeps_shards` False).
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from demoforge.dataset import merge_datasets, open_dataset
from demoforge.dataset.layout import INFO_PATH
from demoforge.errors import DatasetError
from demoforge.fields import option
from demoforge.stage.protocol import MergeAtEnd, Progress, ProgressEvent
from demoforge.stage.runner import publish_dataset


@dataclass(frozen=True)
class MergeConfig:
    """The options of `demoforge dataset merge` (`demoforge.fields`)."""

    video_file_duration_s: float | None = option(None, "Start a new mp4 before this length [s] [default: 800].",
                                                 kind="float", range=(0.0, 1000.0), low_open=True)


@dataclass(frozen=True)
class MergeStage:
    sources: tuple[Path, ...]  # merged in this order
    video_file_duration_s: float | None = None  # see merge_datasets
    progress: Progress | None = field(default=None, compare=False)  # a "merge" episode event per episode merged
    name: ClassVar[str] = "merge"
    error: ClassVar[type] = DatasetError
    keeps_shards: ClassVar[bool] = False  # an item only checks a source: nothing worth keeping after a failure

    def fingerprint(self) -> dict:
        return {"stage": "merge", "sources": [{"root": str(Path(s).resolve()), "info_sha256": _info_sha(s)}
                                              for s in self.sources],
                "video_file_duration_s": self.video_file_duration_s}

    def inputs(self) -> tuple[Path, ...]:
        return self.sources

    def finished(self, out: Path):
        return open_dataset(out).info  # this merge, finished: its info, as the merge returns

    def items(self) -> list[str]:
        return [f"source-{k}" for k in range(len(self.sources))]

    def total(self) -> int | None:
        return None

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        n = open_dataset(self.sources[k]).num_episodes
        if progress is not None:
            progress(ProgressEvent("merge", "episode", self.items()[k]))
        return {"episodes": n, "info_sha256": _info_sha(self.sources[k])}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: self._merge(shards, out))

    def _merge(self, shards: list[Path], out: Path):
        merged = shards[0].parent.parent / "merged"  # in the work folder: OUT appears whole, stamped
        shutil.rmtree(merged, ignore_errors=True)
        progress = self.progress
        # the dataset layer is below the stage protocol: it reports plain counts, turned into events here
        on_episode = None if progress is None else (
            lambda done, total: progress(ProgressEvent("merge", "episode", str(out), done, total)))
        info = merge_datasets(list(self.sources), merged, video_file_duration_s=self.video_file_duration_s,
                              on_episode=on_episode)
        publish_dataset(merged, out, self.name, self.fingerprint())
        return info


def _info_sha(root: Path) -> str:
    info = Path(root) / INFO_PATH
    if not info.is_file():
        raise DatasetError(f"merge source {root}: no {INFO_PATH} (not a LeRobot dataset root); pass dataset roots")
    return hashlib.sha256(info.read_bytes()).hexdigest()
