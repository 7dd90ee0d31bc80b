"""`Stage.needs`: an item starts only once the items it needs are final, on every slot of the local
pool, and a slot waiting for an item that fails stops with the run instead of waiting for ever."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from demoforge.stage import LocalExecutor, MergeAtEnd, StageError, run_stage
from demoforge.stage.runner import DONE_FILE


class Failed(StageError):
    pass


@dataclass(frozen=True)
class Chain:
    """Items 0 and 1 are slow (0 slower); items 2 and 3 need both. Each item records which shards
    were final when it started; `fail`: item 0 raises instead."""

    fail: bool = False
    name: ClassVar[str] = "chain"
    error: ClassVar[type] = StageError

    def fingerprint(self) -> dict:
        return {"fail": self.fail}

    def items(self) -> list[str]:
        return [f"c{k}" for k in range(4)]

    def total(self) -> None:
        return None

    def needs(self, k: int) -> range:
        return range(2) if k >= 2 else range(0)

    def run_item(self, k: int, shard: Path, progress) -> dict:
        final = sorted(p.parent.name for p in shard.parent.glob(f"*/{DONE_FILE}"))
        if k == 0:
            time.sleep(1.0)
            if self.fail:
                raise Failed("item 0 failed")
        elif k == 1:
            time.sleep(0.3)
        return {"final_at_start": final}

    def merger(self, out: Path, threads: int) -> MergeAtEnd:
        return MergeAtEnd(lambda shards, results: out.write_text(json.dumps(results), encoding="utf-8"))


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_an_item_starts_once_what_it_needs_is_final(tmp_path, workers):
    with LocalExecutor(workers) as pool:
        run_stage(Chain(), tmp_path / "out", executor=pool)
    results = json.loads((tmp_path / "out").read_text())
    for k in (2, 3):
        assert {"0000-c0", "0001-c1"} <= set(results[k]["final_at_start"]), (workers, results)


def test_a_slot_waiting_for_an_item_that_fails_stops_with_the_run(tmp_path):
    start = time.monotonic()
    with LocalExecutor(3) as pool, pytest.raises(Failed, match="item 0 failed"):
        run_stage(Chain(fail=True), tmp_path / "out", executor=pool)
    assert time.monotonic() - start < 120
    assert not (tmp_path / "out").exists()
