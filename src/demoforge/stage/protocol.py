"""The stage protocol (see `demoforge.stage`): what a stage supplies, and the one progress event."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from demoforge.errors import DemoforgeError


class StageError(DemoforgeError):
    """A stage run failed as a run (a worker died, its folder holds another run)."""


@dataclass(frozen=True)
class ProgressEvent:
    """Progress of a stage run; the one event type every stage reports."""

    stage: str  # the stage's name: "generate", "render", "bake", "annotate", "merge"
    kind: str  # "episode": one episode written; "item": one work item's shard is final
    item: str  # the work item's label (a problem name, "episodes 0-7")
    done: int | None = None  # episodes written so far by this run, finished items of a resume included
    total: int | None = None  # episodes this run writes (None: unknown)
    success: bool | None = None  # generate: the episode reached its goal
    failure: str | None = None  # generate: the failure kind of a failed episode


Progress = Callable[[ProgressEvent], None]


class Merger(Protocol):
    """A stage's merge, fed the finished shards in item order (the first ones while later items still run)."""

    def add(self, k: int, shard: Path, result: dict) -> None: ...

    def finish(self) -> Any: ...


@runtime_checkable
class Stage(Protocol):
    """A dataset(s) -> dataset transform as work items; `run_stage` runs it (pickled to workers)."""

    name: str  # "generate", "render", ... (events, messages)
    error: type[DemoforgeError]  # what its run errors are raised as
    # Optional `keeps_shards: bool` (default True): a failed run keeps its finished shards beside
    # OUT for the same command to resume; False where an item is too cheap to keep (merge).
    # Optional `needs(k) -> Sequence[int]` (default none): earlier items that must be final before
    # item k starts (an item that reads their shards); the executors hold k back until they are.
    # Optional `inputs() -> Sequence[Path]` (default none): the files and folders the stage reads;
    # `run_stage` refuses an OUT that is, holds or lies inside one (`guard_output`).
    # Optional `finished(out) -> Any`: what a rerun returns when OUT is this same run, published
    # (`finished_output`); without it such an OUT is refused as any other non-empty one.
    # Optional `dataset: str` (default none: OUT is the dataset): OUT is a run folder the command
    # names, the stage publishing its dataset at OUT/<dataset> beside files of its own (a summary,
    # written by its merger, which is given OUT); its work folder is OUT/.<dataset>.<name>-shards, so
    # an OUT holding only that is a killed run, resumed. The guard and `finished` apply to OUT.
    # Optional `resumable(out) -> bool` (default False): a non-empty OUT the guard would refuse holds
    # what an interrupted run of the stage left, for it to go on with (the rule may clear it: a run
    # from before the stage, started over).
    # Optional `prepare() -> None`: called once the guard let the run go on, before anything is
    # written: what is costly to read and must be refused first (a policy is loaded).
    # Optional `out_name: str` (default "--out"): how the command names OUT in the guard's errors
    # (a positional argument's name, e.g. coverage's OUTPUT_ROOT).

    def fingerprint(self) -> dict:
        """Everything that decides the output (JSON; never the worker count): a resume must match it."""

    def items(self) -> Sequence[str]:
        """The work items' labels in output order (folder-safe: they name the shards)."""

    def total(self) -> int | None:
        """Episodes the run writes, for progress (None: unknown)."""

    def run_item(self, k: int, shard: Path, progress: Progress | None) -> dict:
        """Write item `k` into the folder `shard` (continuing what an interrupted run left there, or
        starting it over) and return its small JSON result; `progress` takes its episode events."""

    def merger(self, out: Path, threads: int) -> Merger:
        """The merge of the shards into `out` (`threads`: the slots free for its finish)."""


class MergeAtEnd:
    """A `Merger` that merges every shard at once when the last one is final: `merge(shards, results)`."""

    def __init__(self, merge: Callable[[list[Path], list[dict]], Any]):
        self.merge, self.shards, self.results = merge, [], []

    def add(self, k: int, shard: Path, result: dict) -> None:
        self.shards.append(shard)
        self.results.append(result)

    def finish(self) -> Any:
        return self.merge(self.shards, self.results)


def chunks(n: int, *, most: int = 16, least: int = 4) -> list[range]:
    """`range(n)` in at most `most` contiguous, nearly equal chunks of at least `least` episodes
    (where n allows): a stage's work items over `n` episodes that do not depend on the worker count
    (so neither do the bytes). Each item pays a start (a GL context, a writer) and a share of the
    merge, so an item of one episode costs ~10% more CPU per frame than one of four (render).
    The count is a power of two, so 2, 4 or 8 slots share the items evenly (5 items on 2 slots
    left one slot idle for the last item, a fifth of the stage)."""
    parts = max(1, min(most, n // max(1, least))) if n else 0
    parts = 1 << (parts.bit_length() - 1) if parts else 0
    bounds = [round(n * p / parts) for p in range(parts + 1)] if parts else [0]
    return [range(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def check_items(stage: Stage, labels: Sequence[str]) -> None:
    if not labels:
        raise stage.error(f"{stage.name}: nothing to do (no work items)")
