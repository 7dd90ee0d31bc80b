"""One work item's shards: its success and failure datasets, written in episode order.

Both writers are opened lazily (a split without episodes has no shard) and resumed when
an interrupted run left staging behind. Episodes are added in index order, so the two
shards' episode counts together are the next episode to run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from demoforge.dataset import DatasetWriter, open_dataset
from demoforge.dataset.layout import write_json_atomic
from demoforge.dataset.writer import STAGING_DIR
from demoforge.execute.problems import ExecuteError
from demoforge.execute.record import RunLayout
from demoforge.execute.runner import EpisodeResult

SPLITS = ("success", "failure")


@dataclass
class ProblemTally:
    """Episodes of one problem by outcome."""

    success: int = 0
    failure: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # failure kind -> count

    def add(self, ok: bool, kind: str | None) -> None:
        if ok:
            self.success += 1
        else:
            self.failure += 1
            self.kinds[kind] = self.kinds.get(kind, 0) + 1


class ShardWriters:
    """The two shard writers of one work item, opened lazily, resumed if interrupted."""

    def __init__(self, folder: Path, layout: RunLayout):
        self.folder, self.layout = folder, layout
        self.writers: dict[str, DatasetWriter] = {}
        self.done: dict[str, int] = {}
        for split in SPLITS:
            root = folder / split
            if (root / STAGING_DIR).is_dir():
                self.writers[split] = DatasetWriter.resume(root)
                self.done[split] = self.writers[split].num_episodes
            elif (root / "meta" / "info.json").is_file():
                self.done[split] = open_dataset(root).num_episodes
            else:
                self.done[split] = 0

    @property
    def next_episode(self) -> int:
        return sum(self.done.values())

    def add(self, result: EpisodeResult) -> None:
        split = "success" if result.success else "failure"
        w = self.writers.get(split)
        if w is None:
            if (self.folder / split / "meta" / "info.json").is_file():
                raise ExecuteError(f"{self.folder / split}: shard already final but episode {result.episode} "
                                   "belongs to it; remove the item folder and rerun")
            w = DatasetWriter.create(self.folder / split, fps=self.layout.fps, features=self.layout.features(),
                                     robot_type=None)
            self.writers[split] = w
        w.add_episode(result.columns, task=result.task, extra=result.extra)
        self.done[split] += 1

    def finalize(self, tally: ProblemTally) -> None:
        for w in self.writers.values():
            w.finalize()
        write_json_atomic(self.folder / "done.json", asdict(tally))

    def close(self) -> None:
        for w in self.writers.values():
            w.__exit__(RuntimeError, None, None)  # unlock, keep staging for a resume


def tally_of(w: ShardWriters) -> ProblemTally:
    """Tally of the episodes already in an interrupted item's shards (read back from them)."""
    t = ProblemTally()
    for split, writer in w.writers.items():
        for extra in writer.episode_extras():
            failure = extra.get("failure")
            t.add(split == "success", None if failure is None else failure.get("kind"))
    return t
