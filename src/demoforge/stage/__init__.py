"""One shape for every stage: work items, one item run into a shard, shards merged in order.

    from demoforge.stage import LocalExecutor, run_stage
    with LocalExecutor(workers=4) as pool:
        result = run_stage(my_stage, out, executor=pool, progress=print)

A stage (`Stage`, a small protocol; generate, render, bake, annotate and merge are stages) says
only what is its own: `name`, `error` (its DemoforgeError subclass), `fingerprint()` (JSON of
everything that decides its output; never the worker count), `items()` (the work items' labels
in output order; they must not depend on the worker count either), `total()` (episodes, for
progress), `run_item(k, shard, progress)` (write item k into the folder `shard`, continuing what
an interrupted run left there or starting it over, and return a small JSON result) and
`merger(out, threads)` (an object that takes the finished shards in item order, `add(k, shard,
result)`, and writes `out` on `finish()`; `MergeAtEnd` wraps a merge of all shards at once), and
optionally `needs(k)` (earlier items that must be final before item k starts, for an item that
reads their shards: a local slot waits for them, Ray submits the item once they are), `inputs()`
(the paths it reads), `finished(out)` (what a rerun on its own published OUT returns), `dataset`
(OUT is a run folder holding the dataset at OUT/<dataset> beside the stage's own files: a
roll-out's summary), `resumable(out)` (what else an interrupted run of it left) and `prepare()`
(what must be read and refused once OUT is guarded, before anything is written: a policy).

`run_stage` owns the rest, the same for every stage:

- The output guard (`dataset.guard`), first, before anything is written: OUT is not, does not
  hold and does not lie inside an input, is not a file nor under one, and is absent or empty
  unless it is this same run, published (then the stage's `finished(out)` is returned, if it has
  one, else it is refused too), or holds what a killed run left (a run folder's work folder, or
  what the stage's `resumable(out)` accepts: the run goes on). Each refusal names the path and the
  fix, as the stage's error. No stage calls the guard itself.
- Fingerprint and resume. The work folder WORK holds `run.json` (the fingerprint) and
  `.shards/<k>-<label>/`, one shard per item; a shard is final once `run_stage` has written its
  `done.json` (the item's result), after `run_item` returned. A killed run keeps every final
  shard (and what the stage keeps of an unfinished one); the same command resumes: final items
  are skipped, the others run again. WORK is `.OUT.<stage>-shards` beside OUT (in it for a run
  folder: `.<dataset>.<stage>-shards`; another run's is replaced, and it is removed once merged),
  or a folder the stage names (generate's OUT: another run there is refused).
- The worker pool. An executor runs the items: `LocalExecutor(workers)` (this process plus
  spawned workers, each taking the next item when free) or `RayExecutor(address)` (Ray tasks; the
  whole stage, every setting, is shipped to them). Both run any stage.
- Ordered merging. Finished shards are handed to the merger in item order while later items
  still run, so the output's bytes depend only on the shards: identical for any worker count and
  executor, and for a resumed run.
- Progress. One event type, `ProgressEvent` (stage, kind "episode" or "item", item label, done
  and total episodes, generate's outcome), from every slot to one callback.
- Provenance. The stage's merger writes its record into the output (generate's raw meta,
  render.json, bake.json); the fingerprint is the run's identity, stamped into the published
  dataset (`stamp_dataset`), so a rerun of the same command on a finished OUT has nothing to do
  (`finished_output`).
"""

from demoforge.stage.local import LocalExecutor, refuse_in_worker_start_up
from demoforge.stage.protocol import MergeAtEnd, Merger, Progress, ProgressEvent, Stage, StageError, chunks
from demoforge.stage.runner import (
    finished_output, guard_output, merge_shards, publish_dataset, run_stage, stamp_dataset, work_folder,
)

__all__ = ["LocalExecutor", "MergeAtEnd", "Merger", "Progress", "ProgressEvent", "Stage", "StageError", "chunks",
           "finished_output", "guard_output", "merge_shards", "publish_dataset", "refuse_in_worker_start_up",
           "stamp_dataset", "run_stage", "work_folder"]
