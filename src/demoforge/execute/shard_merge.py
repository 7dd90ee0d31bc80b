"""ShardMerge: a `generate` run's splits merged from its work items' shards, in problem order,
item by item as they finish (the stage's merger), then stamped and summarized."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from demoforge.dataset import DatasetMerger
from demoforge.dataset.layout import DEMOFORGE_META_DIR, write_json_atomic
from demoforge.execute.layout import RunLayout, write_raw_meta
from demoforge.execute.problems import ExecuteError, Problem
from demoforge.execute.run_folder import MERGING_DIR, GenerateSummary, item_dir
from demoforge.execute.shards import SPLITS, ProblemTally
from demoforge.stage import stamp_dataset


class ShardMerge:
    """A run's splits merged from its items' shards in problem order, item by item as they
    finish (`feed`), so the merge of the first items overlaps the last ones; `finish` merges
    the rest and writes the splits' metadata and OUT/summary.json. The bytes depend only on
    the shards, not on when they were fed. Used as a context manager: an exception leaves the
    partial splits (a rerun rebuilds them)."""

    def __init__(self, out: Path, problems: list[Problem], layout: RunLayout, record: dict, *, threads: int = 1):
        self.out, self.problems, self.layout, self.record = out, problems, layout, record
        self.threads = threads  # the finish's threads (the run's slots: free once the items are done)
        self.next = 0  # items[:next] are merged
        self._mergers: dict[str, DatasetMerger] = {}
        self._shards: dict[str, list[Path]] = {split: [] for split in SPLITS}

    def __enter__(self) -> "ShardMerge":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            for merger in self._mergers.values():
                merger.__exit__(exc_type, exc, tb)

    def add(self, k: int, shard: Path, result: dict) -> None:
        """The stage merger's hand-over (`demoforge.stage.Merger`): item `k` is final."""
        self.feed()

    def backlog(self) -> int:
        """How many items from `next` on are finished and not merged yet."""
        k = self.next
        while k < len(self.problems) and (item_dir(self.out, k, self.problems[k].name) / "done.json").is_file():
            k += 1
        return k - self.next

    def feed(self) -> int:
        """Merge every item from `next` on whose shards are final; returns how many."""
        fed = 0
        while self.next < len(self.problems):
            folder = item_dir(self.out, self.next, self.problems[self.next].name)
            if not (folder / "done.json").is_file():
                break
            for split in SPLITS:
                shard = folder / split
                if (shard / "meta" / "info.json").is_file():
                    if split not in self._mergers:
                        self._mergers[split] = DatasetMerger(self.out / MERGING_DIR / split)
                    self._mergers[split].add(shard)
                    self._shards[split].append(shard)
            self.next += 1
            fed += 1
        return fed

    def finish(self) -> GenerateSummary:
        self.feed()
        if self.next < len(self.problems):
            raise ExecuteError(f"{item_dir(self.out, self.next, self.problems[self.next].name)}: the item is not "
                               "finished; rerun the same command to resume it")
        roots: dict[str, Path | None] = {split: None for split in SPLITS}
        mergers = [(split, self._mergers[split]) for split in SPLITS if split in self._mergers]
        if self.threads > 1 and len(mergers) > 1:  # the splits side by side
            with ThreadPoolExecutor(max_workers=len(mergers), thread_name_prefix="merge-finish") as pool:
                list(pool.map(lambda m: m.finish(threads=self.threads), [m for _, m in mergers]))
        else:
            for _, merger in mergers:
                merger.finish(threads=self.threads)
        for split, merger in mergers:
            stamp_dataset(merger.out, "generate", self.record)
            merger.out.replace(self.out / split)  # a split appears whole or not at all
            write_split_meta(self.out / split, self.out, self.problems, self.layout, self.record, self._shards[split])
            roots[split] = self.out / split
        shutil.rmtree(self.out / MERGING_DIR, ignore_errors=True)
        tallies = {p.name: ProblemTally(**json.loads((item_dir(self.out, k, p.name) / "done.json").read_text()))
                   for k, p in enumerate(self.problems)}
        summary = GenerateSummary(self.out, tallies, roots)
        write_json_atomic(self.out / "summary.json", summary.to_json())
        shutil.rmtree(self.out / ".shards")  # merged: a rerun finds summary.json and does nothing
        return summary


def write_split_meta(root: Path, out: Path, problems: list[Problem], layout: RunLayout, record: dict,
                     shards: list[Path]) -> None:
    """A merged split's demoforge meta files: merge.json's shard roots relative to OUT, and the raw meta."""
    meta = root / DEMOFORGE_META_DIR
    merge_file = meta / "merge.json"
    if merge_file.is_file():  # shard roots relative to OUT, so the bytes do not depend on where OUT is
        merged = json.loads(merge_file.read_text())
        for src, shard in zip(merged["sources"], shards, strict=True):
            src["root"] = shard.relative_to(out).as_posix()
        write_json_atomic(merge_file, merged)
    write_raw_meta(root, layout, problems, stage="execute", run=record)
