"""`run_stage`: one stage run, from its fingerprint to its merged output (see `demoforge.stage`)."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from demoforge import __version__
from demoforge.dataset import merge_datasets
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INFO_PATH, write_json_atomic
from demoforge.dataset.writer import STAGING_DIR
from demoforge.errors import DemoforgeError
from demoforge.dataset.guard import LOCK_NAME, OutputError, guard_output_dir, hold_folder, release_temp
from demoforge.stage.protocol import Progress, ProgressEvent, Stage, check_items

RUN_FILE = "run.json"  # WORK/run.json: the fingerprint of the run the folder holds
SHARDS_DIR = ".shards"  # WORK/.shards/<k>-<label>/: item k's shard
DONE_FILE = "done.json"  # in a shard: the item's result, written once the shard is final


@dataclass(frozen=True)
class StageRun:
    """What a slot needs to run items (pickled to workers): the stage and its work folder."""

    stage: Stage
    work: Path  # WORK
    labels: tuple[str, ...]  # the items' labels, in order

    def shard(self, k: int) -> Path:
        return self.work / SHARDS_DIR / f"{k:04d}-{self.labels[k]}"


def run_one(run: StageRun, k: int, progress: Progress | None = None) -> dict:
    """Run item `k` into its shard unless it is final; returns its result (also its shard's done.json)."""
    shard = run.shard(k)
    done = shard / DONE_FILE
    if done.is_file():
        return json.loads(done.read_text(encoding="utf-8"))
    shard.mkdir(parents=True, exist_ok=True)
    result = run.stage.run_item(k, shard, progress)
    write_json_atomic(done, result)  # the shard is final: a resume skips it
    if progress is not None:
        progress(ProgressEvent(run.stage.name, "item", run.labels[k]))
    return result


def ready(run: StageRun, k: int) -> bool:
    """Every item that item `k` needs (the stage's optional `needs(k)`) is final."""
    needs = getattr(run.stage, "needs", None)
    return needs is None or all((run.shard(j) / DONE_FILE).is_file() for j in needs(k))


def wait_ready(run: StageRun, k: int, stopped: Callable[[], bool], poll_s: float = 0.05) -> bool:
    """Wait until item `k` is `ready`; False if `stopped()` first (the run failed elsewhere)."""
    while not ready(run, k):
        if stopped():
            return False
        time.sleep(poll_s)
    return True


def open_work(stage: Stage, work: Path, record: dict, *, keep_other: bool) -> None:
    """Make WORK the folder of this run: new, or this same run's (resumed); another run's folder
    is refused (`keep_other`, a folder the user named) or replaced (a temporary folder of ours)."""
    run_file = work / RUN_FILE
    if work.exists() and not work.is_dir():
        raise stage.error(f"{work}: is a file, not a folder; choose a folder path")
    if run_file.is_file():
        try:
            old = json.loads(run_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            old = None
        if old == record:
            return
        if keep_other:
            keys = sorted(k for k in set(record) | set(old if isinstance(old, dict) else {})
                          if not isinstance(old, dict) or old.get(k) != record.get(k))
            raise stage.error(f"{work}: holds a run with other inputs ({run_file}; differing: {', '.join(keys)}); use "
                              "a new --out, or rerun with the same inputs and settings to resume it")
        _empty(work)
    elif work.exists() and any(p.name != LOCK_NAME for p in work.iterdir()):
        if keep_other:
            raise stage.error(f"{work}: exists and is not a run folder of this command; choose a new --out")
        _empty(work)
    new = not work.exists() or not any(p.name != LOCK_NAME for p in work.iterdir())
    work.mkdir(parents=True, exist_ok=True)
    try:
        write_json_atomic(run_file, record)
    except BaseException:
        if new:  # nothing of the run is in it yet (a full disk): leave no folder that blocks the rerun
            _empty(work)
        raise


def _empty(work: Path) -> None:
    """Remove what WORK holds, except its lock file (held by this run)."""
    for p in work.iterdir():
        if p.name == LOCK_NAME:
            continue
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def _forget(work: Path, existed: bool) -> None:
    """Remove what a run that finished nothing wrote in the WORK the user named (its fingerprint
    and shards), and WORK itself when the run made it: that fingerprint would refuse the rerun
    with corrected inputs ("holds a run with other inputs"), and there is nothing to resume."""
    with contextlib.suppress(OSError):  # the run's own error is the one to report
        _empty(work)
        if not existed:
            work.rmdir()


def _drop(work: Path, folder: Path | None) -> None:
    """Remove a work folder of ours that holds nothing to resume, and the run folder `folder` it
    lies in when this run made it (and nothing else is in it): a rerun finds OUT as it was."""
    shutil.rmtree(work, ignore_errors=True)
    if folder is not None:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _drop_left(work: Path) -> None:
    """Remove the work folder a run killed after publishing left (unless a live run holds it)."""
    if not work.is_dir():
        return
    try:
        lock = hold_folder(work)
    except OutputError:
        return
    shutil.rmtree(work, ignore_errors=True)
    release_temp(lock)


def work_folder(out: Path, stage: str) -> Path:
    """`run_stage`'s default work folder for `stage` into `out`: `.OUT.<stage>-shards` beside it."""
    return out.parent / f".{out.name}.{stage}-shards"


def published(stage: Stage, out: Path) -> Path:
    """Where `stage` publishes its dataset for `out`: OUT itself, or OUT/<dataset> for a stage
    whose OUT is a run folder (its optional `dataset`: a roll-out's OUT holds its summary too)."""
    name = getattr(stage, "dataset", None)
    return out if name is None else out / name


def guard_output(stage: Stage, out: Path, *, new_root: bool) -> bool:
    """Refuse an `out` the stage may not write (`dataset.guard.guard_output_dir`, raised as the
    stage's error) before anything is written: one that is, holds or lies inside one of the stage's
    `inputs()`, is a file or lies under one. A new root (the stage publishes its dataset at `out`,
    or in it: `published`) must be absent or empty, unless the stage's dataset there is this same
    run, published, and the stage says what a rerun returns then (its `finished`): True; or it
    holds only what an interrupted run left: its work folder (a run folder's), or what the stage's
    `resumable(out)` accepts: False, the run goes on. A run folder the stage names (`new_root`
    False: generate's OUT) is `open_work`'s to accept or refuse."""
    inputs = list(getattr(stage, "inputs", tuple)())
    what = getattr(stage, "out_name", "--out")
    if not new_root:
        guard_output_dir(out, inputs, what=what, error=stage.error, resumable=lambda _: True)
        return False
    root = published(stage, out)
    finished = []  # set when OUT is this same run, finished

    def accepted(o: Path) -> bool:
        if getattr(stage, "finished", None) is not None and finished_output(root, stage.name, stage.fingerprint()):
            finished.append(True)
            return True
        if root != out and {p.name for p in o.iterdir()} <= {work_folder(root, stage.name).name}:
            return True  # a run folder holding only its killed run's work folder: resumed
        resumable = getattr(stage, "resumable", None)
        return resumable is not None and resumable(o)

    guard_output_dir(out, inputs, what=what, error=stage.error, resumable=accepted)
    return bool(finished)


def run_stage(stage: Stage, out: Path, *, work: Path | None = None, executor=None,
              progress: Progress | None = None) -> Any:
    """Run `stage` into `out` (see `demoforge.stage`); returns what its merge returns, or what its
    `finished(out)` returns when `out` is this same run, published.

    `out` is guarded first (`guard_output`). `work`: the run folder of fingerprint and shards; by
    default `.OUT.<stage>-shards` beside `out` (replaced when it holds another run, removed once
    merged), or `OUT/.<dataset>.<stage>-shards` for a stage whose OUT is a run folder (`published`;
    OUT is removed too when the run made it and a failure leaves nothing in it to resume). A `work`
    that is `out` itself (generate's run folder) is refused when it holds another run, and kept (but
    emptied, or removed when the run made it, when a bad input stops the run before anything
    finished). The stage's optional `prepare()` runs once the guard let the run go on, before
    anything is written. `executor`: `LocalExecutor(1)` by default (closed here only when made here)."""
    # One function: the lock, the work folder and the executor are taken and released around the whole
    # run in one try/finally; this is the one owner of the output guard, fingerprint, resume and ordered merge.
    from demoforge.stage.local import LocalExecutor  # lazy: the local executor imports this module (a cycle)

    out = Path(out)
    own_work = work is None
    if guard_output(stage, out, new_root=own_work):
        _drop_left(work_folder(published(stage, out), stage.name))
        return stage.finished(out)
    work = work_folder(published(stage, out), stage.name) if work is None else Path(work)
    made = own_work and work.parent == out and not out.exists()  # a run folder this run makes (holding WORK)
    local = executor is None
    executor = LocalExecutor(1) if local else executor
    start = getattr(executor, "start", None)  # workers import while the inputs are read (none for a refused OUT)
    if start is not None:
        start()
    lock = None
    try:
        labels = tuple(stage.items())
        check_items(stage, labels)
        record = stage.fingerprint()  # the inputs are read (and refused) before anything is written
        prepare = getattr(stage, "prepare", None)
        if prepare is not None:
            prepare()
        existed = work.exists()
        if own_work:  # a folder of ours beside OUT: one live run at a time (a second is refused, not mixed in)
            try:
                lock = hold_folder(work)
            except OutputError as exc:
                raise stage.error(str(exc)) from None
        try:
            open_work(stage, work, record, keep_other=not own_work)
        except BaseException:
            if own_work and not existed:
                release_temp(lock)
                lock = None
                _drop(work, out if made else None)
            raise
        run = StageRun(stage, work, labels)
        finished = [k for k in range(len(labels)) if (run.shard(k) / DONE_FILE).is_file()]
        done_before = sum(int(json.loads((run.shard(k) / DONE_FILE).read_text()).get("episodes", 0))
                          for k in finished)
        report = _counting(progress, done_before, stage.total()) if progress is not None else None
        todo = sorted(set(range(len(labels))) - set(finished))
        feed = _Feed(run, stage.merger(out, executor.slots))
        try:
            feed()  # the items a resumed run finished before
            slots = executor.slots
            # between its own items this process merges only a backlog (the items come first); once
            # none is left to take it merges while the other slots finish theirs
            executor.run(run, todo, report, between=lambda idle: feed() if idle or feed.backlog() > 2 * slots else 0)
            feed()
            if feed.next < len(labels):
                raise stage.error(f"{run.shard(feed.next)}: the item is not finished; rerun the same command to "
                                  "resume it")
            result = feed.merger.finish()
        except BaseException as exc:
            abort = getattr(feed.merger, "__exit__", None)  # release what the merge holds; shards stay
            if abort is not None:
                abort(type(exc), exc, exc.__traceback__)
            if not (getattr(stage, "keeps_shards", True) and _resumable(work)):  # nothing finished to resume
                if own_work:
                    release_temp(lock)
                    lock = None
                    _drop(work, out if made else None)
                elif isinstance(exc, DemoforgeError):  # bad input: its rerun has other inputs
                    _forget(work, existed)
            raise
    finally:
        if local:
            executor.close()
        if lock is not None:
            release_temp(lock)
    shutil.rmtree(work / SHARDS_DIR, ignore_errors=True)
    if own_work:
        shutil.rmtree(work, ignore_errors=True)
    return result


STAMP_DIR = "meta/demoforge/stages"  # DATASET/meta/demoforge/stages/<stage>.json: what made it


def stamp_dataset(root: Path, stage: str, fingerprint: dict) -> Path:
    """The provenance every stage leaves in each dataset it writes, before the dataset is
    published: its name, the demoforge version and its fingerprint (the inputs and settings that
    decide the bytes; never the worker count). A stage's merge calls it on the finished root just
    before moving it into place; datasets whose meta a later stage copies keep the earlier records."""
    path = Path(root) / STAMP_DIR / f"{stage}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    # the records already there came with the stage's source (a render copies generate's): `after`
    # tells them from this one, so a copied record never passes for a finished run (finished_output)
    after = sorted(p.stem for p in path.parent.glob("*.json") if p.stem != stage)
    write_json_atomic(path, {"stage": stage, "demoforge": __version__, "fingerprint": fingerprint, "after": after})
    return path


def finished_output(out: Path, stage: str, fingerprint: dict) -> bool:
    """`out` is a whole dataset that `stage` published from these same inputs and settings (its
    stamp holds `fingerprint`, and no later stage's stamp names it in `after`): a rerun of the
    same command has nothing to do. Anything else is False (the caller refuses a non-empty OUT)."""
    stamps = Path(out) / STAMP_DIR
    if not (Path(out) / INFO_PATH).is_file() or (Path(out) / STAGING_DIR).exists():
        return False
    try:
        own = json.loads((stamps / f"{stage}.json").read_text(encoding="utf-8"))
        others = [json.loads(p.read_text(encoding="utf-8")) for p in stamps.glob("*.json") if p.stem != stage]
        later = any(stage in o.get("after", ()) for o in others)
        return not later and own.get("fingerprint") == json.loads(json.dumps(fingerprint))
    except (OSError, ValueError, UnicodeDecodeError, AttributeError, TypeError):  # not a stamp of ours
        return False


def merge_shards(shards: list[Path], root: Path, **options):
    """The datasets of `shards` (SHARD/data), merged in order into the new root `root` (one a rerun
    left there is replaced) by `merge_datasets` with `options`, less merge's own merge.json (it
    names the temporary shards, not the stage's sources); returns the merged info."""
    shutil.rmtree(root, ignore_errors=True)
    info = merge_datasets([s / "data" for s in shards], root, **options)
    meta = root / DEMOFORGE_META_DIR
    (meta / "merge.json").unlink(missing_ok=True)
    if meta.is_dir() and not any(meta.iterdir()):
        meta.rmdir()
    return info


def publish_dataset(root: Path, out: Path, stage: str, fingerprint: dict) -> Path:
    """Stamp the finished dataset `root` (`stamp_dataset`) and move it to `out` (absent, or empty:
    checked before the run), so OUT appears whole or not at all. Returns `out`."""
    stamp_dataset(root, stage, fingerprint)
    if out.exists():
        out.rmdir()
    root.replace(out)
    return out


def _resumable(work: Path) -> bool:
    """WORK holds something a rerun keeps: a final shard, or a finished episode in a shard's staging."""
    shards = work / SHARDS_DIR
    return shards.is_dir() and (any(shards.glob(f"*/{DONE_FILE}"))
                                or any(shards.glob(f"*/**/{STAGING_DIR}/episodes/*.json")))


class _Feed:
    """Hands the merger every finished shard from `next` on, in item order."""

    def __init__(self, run: StageRun, merger):
        self.run, self.merger, self.next = run, merger, 0

    def backlog(self) -> int:
        k = self.next
        while k < len(self.run.labels) and (self.run.shard(k) / DONE_FILE).is_file():
            k += 1
        return k - self.next

    def __call__(self) -> int:
        fed = 0
        while self.next < len(self.run.labels):
            done = self.run.shard(self.next) / DONE_FILE
            if not done.is_file():
                break
            self.merger.add(self.next, self.run.shard(self.next), json.loads(done.read_text(encoding="utf-8")))
            self.next += 1
            fed += 1
        return fed


def _counting(progress: Progress, done: int, total: int | None) -> Progress:
    """`progress` with each event's `done` (episodes so far) and `total` filled in."""
    count = [done]

    def report(event: ProgressEvent) -> None:
        if event.kind == "episode":
            count[0] += 1
        progress(replace(event, done=count[0], total=total))

    return report
